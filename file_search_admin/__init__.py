"""`python -m file_search_admin`: build, verify, repair and redrive the index from one machine."""

# The product's version, as the client's (file_search_client.__version__).
__version__ = "0.3.0"
