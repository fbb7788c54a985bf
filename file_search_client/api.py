"""The search API from Python: `FileSearch`, with typed errors.

    from file_search_client import FileSearch

    files = FileSearch("https://abc123.execute-api.eu-west-1.amazonaws.com/v1")  # signs with SigV4
    for item in files.search(user="USER001", q="invoice", **{"from": "2024-01-01"}):
        print(item["objectKey"], item["size"])
    for page in files.pages(bucket="my-bucket", prefix="USER001/", delimiter="/"):
        print(page.common_prefixes, [item["objectKey"] for item in page.items])
    first = files.page(bucket="my-bucket", sort="uploadDate", limit=10)  # one page: its cursor, its state
    files.download("USER001/invoice.pdf", "invoice.pdf")

A deployed API (https on an `execute-api` host) is called with SigV4 signatures made from `session`'s
credentials (a boto3 `Session`; the default credential chain when None); a local one (the local stack's
`http://127.0.0.1:8000`) with plain HTTP, as the command line does. `search` (the items) and `pages` (each
page whole: items, sub-folders, cursor, index state) follow `nextCursor` through every page; `page` asks
for one. Every request retries a throttled answer (503, 429) with exponential backoff.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from file_search_client.http import ApiError, SearchApiClient, fetch, key_path

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


IndexState = Literal["READY", "BUILDING"]


@dataclass(frozen=True)
class Page:
    """One page of `GET /files`, the API's `FileListPage` with Python names.

    `items`: the files, each a dict named as on the wire (`objectKey`, `size`, `uploadUser`, `uploadDate`,
    ...; attributes the index does not hold for a file are absent). `common_prefixes` (`commonPrefixes`):
    with `delimiter="/"`, the sub-folders of `prefix` on this page, each ending in "/" and each once
    across the pages of a list; empty otherwise. `next_cursor` (`nextCursor`): pass it as `cursor` for
    the next page; None on the last. A page may hold fewer items than `limit`, even none, and still have a
    cursor. `index_state` (`indexState`): "READY", or "BUILDING" while a backfill or a reconcile runs, when
    the page may miss files. `ordered_by` (`orderedBy`): "size", "uploadDate", "zAddress" or "objectKey".
    Both are None only from an API that does not answer them (an older deployment).
    """

    items: list[dict[str, Any]]
    common_prefixes: list[str]
    next_cursor: str | None
    index_state: IndexState | None
    ordered_by: str | None

    @classmethod
    def from_answer(cls, answer: Any) -> Page:
        """The page in the API's JSON answer; FileSearchError if the answer is not a page of files."""
        if not isinstance(answer, dict):
            raise FileSearchError(200, f"the API's answer is not a page of files: {str(answer)[:200]}")
        items = answer.get("items")
        folders = answer.get("commonPrefixes") or []
        cursor = answer.get("nextCursor")
        state = answer.get("indexState")
        ordered_by = answer.get("orderedBy")
        if not (
            isinstance(items, list)
            and all(isinstance(item, dict) for item in items)
            and isinstance(folders, list)
            and all(isinstance(folder, str) for folder in folders)
            and (cursor is None or isinstance(cursor, str))
            and state in (None, "READY", "BUILDING")
            and (ordered_by is None or isinstance(ordered_by, str))
        ):
            raise FileSearchError(
                200,
                "the API's answer is not a page of files (items, commonPrefixes, nextCursor, indexState, "
                f"orderedBy): {str(answer)[:200]}",
            )
        return cls(
            items=items,
            common_prefixes=folders,
            next_cursor=cursor or None,
            index_state=state,
            ordered_by=ordered_by,
        )


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

    def page(self, **params: Any) -> Page:
        """One page of `GET /files` with `params`, named as the API names them: `user` or `bucket`, `from`
        (as `**{"from": ...}`), `to`, `date`, `minSize`, `maxSize`, `sort`, `order`, `q`, `prefix`,
        `delimiter`, `ext`, `limit`, and `cursor` (a page's `next_cursor`) for the page after it. None
        values are left out. A parameter the API refuses raises `BadRequestError` with its message."""
        query = {name: value for name, value in params.items() if value is not None}
        return Page.from_answer(self._get_json("/files", query))

    def pages(self, **params: Any) -> Iterator[Page]:
        """Every page of `GET /files` with `params` (as `page`'s), following `next_cursor` to the end: the
        files and, with `delimiter="/"`, the sub-folders of `prefix`."""
        query = dict(params)
        while True:
            page = self.page(**query)
            yield page
            if page.next_cursor is None:
                return
            query["cursor"] = page.next_cursor

    def search(self, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of `GET /files` with `params` (as `page`'s), across every page; `pages` gives the
        sub-folders, cursors and index state too."""
        for page in self.pages(**params):
            yield from page.items

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
