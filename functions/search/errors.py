"""The search API's error types; `handler` turns each into its HTTP status in one place."""

from __future__ import annotations

from typing import Any

# The functions' one configuration error, here too so the handler names all it answers for in one place.
from file_index.rules.config import ConfigError

__all__ = [
    "BadRequest",
    "ConfigError",
    "Conflict",
    "FileNotFound",
    "Forbidden",
    "NoPreview",
    "SearchError",
    "TooLargeToPreview",
    "Unauthorized",
]


class SearchError(Exception):
    """A request the API answers with a 4xx and `{"message": str(error)}`."""


class BadRequest(SearchError):
    """The request's parameters are invalid (400)."""


class FileNotFound(SearchError):
    """No indexed file under the key, or it was deleted (404)."""


class Unauthorized(SearchError):
    """A `/me/...` request without a valid ID token of this application (401)."""


class Forbidden(SearchError):
    """A signed-in person asks for what only admins may (403)."""


class NoPreview(SearchError):
    """A file of a type with no safe preview in the page (415)."""


class TooLargeToPreview(SearchError):
    """A file above its kind's preview size (413)."""


class Conflict(SearchError):
    """An upload to a name that is taken, asked not to replace it (409, with the existing file)."""

    def __init__(self, message: str, existing: dict[str, Any]) -> None:
        super().__init__(message)
        self.existing = existing
