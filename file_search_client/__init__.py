"""A command-line client of the search API: search, get, download."""
