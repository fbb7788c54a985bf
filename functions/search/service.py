"""The search use cases, free of Lambda and HTTP: look up, list with cursors, presign a download, and
tell the index state and backlog."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from file_index.reader import FileQuery, FileReader, InvalidStartKey
from file_index.state import State
from search.cursor import InvalidCursor, decode_cursor, encode_cursor
from search.errors import BadRequest, FileNotFound
from search.queries import check_key_value
from search.status import BacklogReader, IndexStateView, StatusReport


@dataclass(frozen=True)
class FileList:
    items: list[dict[str, Any]]
    next_cursor: str | None
    scanned_count: int  # items DynamoDB read for this page; equals len(items) by design
    index_state: State  # BUILDING: the index is being built, so the list may miss files


def decode_object_key(raw: str) -> str:
    """The S3 key in a request path, which keeps the client's percent-encoding.

    `unquote`, not `unquote_plus`: in a path "+" is a plus sign (S3 event notifications are the
    ones that encode spaces as "+"). Bytes that are not UTF-8 are refused rather than replaced, so a
    key is never silently looked up under a different name.
    """
    try:
        key = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("objectKey is not valid percent-encoded UTF-8") from None
    return check_key_value("objectKey", key)


class FileSearch:
    """Answers the API's requests from the index (`reader`, `index_state`), S3 (`s3_client`, for
    presigning) and the indexer's queues (`backlog`)."""

    def __init__(
        self,
        *,
        reader: FileReader,
        index_state: IndexStateView,
        backlog: BacklogReader,
        s3_client: Any,
        bucket_name: str,
        cursor_secret: bytes,
        download_url_expiry_seconds: int,
    ) -> None:
        self._reader = reader
        self._index_state = index_state
        self._backlog = backlog
        self._s3 = s3_client
        self._bucket_name = bucket_name
        self._cursor_secret = cursor_secret
        self._expiry = download_url_expiry_seconds

    def get_file(self, object_key: str) -> dict[str, Any]:
        item = self._reader.get_file(object_key)
        if item is None:
            raise FileNotFound(f"no indexed file with key {object_key!r}")
        return item

    def list_files(self, query: FileQuery, *, limit: int, cursor: str | None) -> FileList:
        start = None
        if cursor is not None:
            try:
                start = decode_cursor(self._cursor_secret, query, cursor)
            except InvalidCursor as error:
                raise BadRequest(f"cursor is not valid for this query ({error})") from None
        # Read before the query: READY then means the query ran on a complete index. (Read after it, a
        # backfill finishing in between would make a partial page say READY.)
        index_state = self._index_state.state()
        try:
            page = self._reader.list_files(query, limit=limit, start=start)
        except InvalidStartKey:
            raise BadRequest("cursor is not valid for this query (outside its range)") from None
        next_cursor = None
        if page.next_start is not None:
            next_cursor = encode_cursor(self._cursor_secret, query, page.next_start)
        return FileList(
            items=page.items,
            next_cursor=next_cursor,
            scanned_count=page.scanned_count,
            index_state=index_state,
        )

    def status(self) -> StatusReport:
        """The index state as of now (a consistent read of its record) and the queues' backlog."""
        return StatusReport(state=self._index_state.read(consistent=True), backlog=self._backlog.read())

    def download_url(self, object_key: str) -> str:
        """A presigned GET of the indexed version of the file, valid for the configured expiry."""
        item = self.get_file(object_key)
        if item.get("bucketName") != self._bucket_name:
            # Downloads are limited to the configured bucket, whatever else the index holds.
            raise FileNotFound(f"no downloadable file with key {object_key!r}")
        params = {"Bucket": self._bucket_name, "Key": object_key}
        if "versionId" in item:
            params["VersionId"] = item["versionId"]
        url: str = self._s3.generate_presigned_url("get_object", Params=params, ExpiresIn=self._expiry)
        return url
