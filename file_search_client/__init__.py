"""A command-line client of the search API: search, get, download, status."""

__version__ = "0.3.0"
