"""A client of the S3 File Search API: the `s3-file-search` command line and the `FileSearch` Python API."""

__version__ = "0.3.0"

from file_search_client.api import (
    BadRequestError,
    FileSearch,
    FileSearchError,
    IndexState,
    NotFoundError,
    Page,
    ThrottledError,
)

__all__ = [
    "BadRequestError",
    "FileSearch",
    "FileSearchError",
    "IndexState",
    "NotFoundError",
    "Page",
    "ThrottledError",
    "__version__",
]
