"""The search API's error types; `handler` turns each into its HTTP status in one place."""

from __future__ import annotations


class SearchError(Exception):
    """A request the API answers with a 4xx and `{"message": str(error)}`."""


class BadRequest(SearchError):
    """The request's parameters are invalid (400)."""


class FileNotFound(SearchError):
    """No indexed file under the key, or it was deleted (404)."""


class ConfigError(RuntimeError):
    """The function's environment is incomplete or invalid: a deployment fault, not a client's."""
