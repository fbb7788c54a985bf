"""The search API from Python: `FileSearch`, with typed errors.

    from file_search_client import FileSearch

    files = FileSearch("https://abc123.execute-api.eu-west-1.amazonaws.com/v1")  # signs with SigV4
    for item in files.search(user="USER001", q="invoice", **{"from": "2024-01-01"}):
        print(item["objectKey"], item["size"])
    files.download("USER001/invoice.pdf", "invoice.pdf")

A deployed API (https on an `execute-api` host) is called with SigV4 signatures made from `session`'s
credentials (a boto3 `Session`; the default credential chain when None); a local one (the local stack's
`http://127.0.0.1:8000`) with plain HTTP, as the command line does. `search` follows `nextCursor` through
every page and retries a throttled page (503, 429) with exponential backoff.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from file_search_client.http import ApiError, SearchApiClient, fetch, key_path

__all__ = ["BadRequestError", "FileSearch", "FileSearchError", "NotFoundError", "ThrottledError"]

RETRY_STATUSES = frozenset({429, 503})


class FileSearchError(Exception):
    """The API (or the network) refused; `status` is the HTTP status (0: no answer), `message` its text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BadRequestError(FileSearchError):
    """400: a parameter the API refuses; the message names it."""


class NotFoundError(FileSearchError):
    """404: no indexed file under that key."""


class ThrottledError(FileSearchError):
    """503 or 429 after every retry."""


def _typed(error: ApiError) -> FileSearchError:
    kind = {400: BadRequestError, 404: NotFoundError, 429: ThrottledError, 503: ThrottledError}.get(
        error.status, FileSearchError
    )
    return kind(error.status, error.message)


class FileSearch:
    """A client of one deployment's search API (`api_url`: the stage URL, or the local stack's)."""

    def __init__(
        self,
        api_url: str,
        session: Any = None,
        *,
        region: str | None = None,
        timeout: float = 30,
        max_attempts: int = 5,
        backoff_seconds: float = 0.5,
    ) -> None:
        try:
            self._client = SearchApiClient(api_url, region=region, timeout=timeout, session=session)
        except ApiError as error:
            raise _typed(error) from None
        self._max_attempts = max_attempts
        self._backoff = backoff_seconds

    def _get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        for attempt in range(1, self._max_attempts + 1):
            try:
                return self._client.get_json(path, params)
            except ApiError as error:
                if error.status not in RETRY_STATUSES or attempt == self._max_attempts:
                    raise _typed(error) from None
            except OSError as error:
                raise FileSearchError(0, f"cannot reach {self._client.api_url}: {error}") from None
            time.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def search(self, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of `GET /files` with `params` (`user` or `bucket`, `q`, `prefix`, `ext`, `minSize`,
        ... as the API names them; `from` as `**{"from": ...}`), across every page."""
        query = {name: value for name, value in params.items() if value is not None}
        while True:
            page = self._get_json("/files", query)
            yield from page.get("items", [])
            cursor = page.get("nextCursor")
            if not cursor:
                return
            query["cursor"] = cursor

    def get(self, key: str) -> dict[str, Any]:
        """One indexed file by its exact key; `NotFoundError` if absent or deleted."""
        item: dict[str, Any] = self._get_json(key_path("files", key))
        return item

    def download(self, key: str, path: str | Path) -> Path:
        """Fetch the file under `key` (through the API's presigned URL) into `path`; the path written."""
        try:
            response = self._client.get(key_path("download", key))
            location = response.headers.get("Location") or response.headers.get("location")
            if response.status not in (301, 302, 303, 307) or not location:
                raise FileSearchError(response.status, f"{response.status}: expected a redirect to the file")
            data = fetch(location)
        except ApiError as error:
            raise _typed(error) from None
        target = Path(path)
        target.write_bytes(data)
        return target

    def status(self) -> dict[str, Any]:
        """`GET /status`: the index state and the indexer's backlog."""
        status: dict[str, Any] = self._get_json("/status")
        return status
