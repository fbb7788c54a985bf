"""`python -m file_search_admin`: build, verify, repair and redrive the index from one machine."""
