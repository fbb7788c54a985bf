"""The search use cases, free of Lambda and HTTP.

Look up a file, list with cursors, a signed-in person's files, presign a download or an upload form, and
tell the index state and backlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from file_index.read.file_queries import FileQuery, InvalidStartKey, ListCursor, UnavailableOrder
from file_index.read.name_query import NameQuery
from file_index.read.name_reader import NameReader
from file_index.read.reader import FileReader
from file_index.rules.key_pattern import KeyPattern
from file_index.store.enrich import CONTENT_TYPE, METADATA, TAGS
from file_index.store.state import State
from search.cursor import InvalidCursor, decode_cursor, encode_cursor
from search.dal import BacklogReader, ObjectStore
from search.directory import PeopleDirectory
from search.errors import BadRequest, FileNotFound
from search.payload import PAGE_ITEMS_BUDGET_BYTES, array_payload_bytes, items_within
from search.people import (
    Person,
    UserAccess,
    attachment_disposition,
    check_owner,
)
from search.previews import PREVIEW_URL_EXPIRY_SECONDS, inline_disposition, preview_of
from search.queries import check_key_value
from search.status import IndexStateView, StatusReport
from search.uploads import Uploads

# The type every download is answered with: one no browser renders or runs.
DOWNLOAD_CONTENT_TYPE = "application/octet-stream"
# Dot segments, which URL clients resolve away (RFC 3986, section 5.2.4), and their percent-encoded form,
# which S3 decodes back to the key's own dots. Browsers also resolve %2E%2E (the WHATWG URL standard).
_DOT_SEGMENTS = {".": "%2E", "..": "%2E%2E"}
# The name of each of some uploadUser values (PeopleDirectory.names).
OwnerNames = Callable[[Iterable[str]], dict[str, str]]


@dataclass(frozen=True)
class FileList:
    items: list[dict[str, Any]]
    next_cursor: str | None
    # Items DynamoDB read for this page (filtered ones and read-ahead included) and the Queries made.
    scanned_count: int
    request_count: int
    ordered_by: str  # the attribute the items are ordered by (for a list, the plan it is read with)
    index_state: State  # BUILDING: the index is being built, so the list may miss files
    common_prefixes: list[str] | None = None  # with a delimiter: the sub-folders of this page


def with_owner_names(items: list[dict[str, Any]], owner_names: OwnerNames | None) -> list[dict[str, Any]]:
    """`items`, each with an uploadUser given its `ownerName` by `owner_names` (None: as they are)."""
    if owner_names is None:
        return items
    named = owner_names(str(item["uploadUser"]) for item in items if item.get("uploadUser"))
    return [
        {**item, "ownerName": named[str(item["uploadUser"])]} if item.get("uploadUser") else item
        for item in items
    ]


def keep_dot_segments(url: str) -> str:
    """`url` with its path's `.` and `..` segments percent-encoded, so that clients send them as they are.

    botocore signs the key's path as it is, dots included; S3 decodes the path before it checks the
    signature, so the encoded dots still match it, and name the key's own dots rather than a parent.
    """
    parts = urlsplit(url)
    segments = parts.path.split("/")
    if not any(segment in _DOT_SEGMENTS for segment in segments):
        return url
    path = "/".join(_DOT_SEGMENTS.get(segment, segment) for segment in segments)
    return urlunsplit(parts._replace(path=path))


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
    """Answers the API's requests from the index (`reader`, `names`, `index_state`), the bucket (`objects`)
    and the indexer's queues (`backlog`)."""

    def __init__(
        self,
        *,
        reader: FileReader,
        index_state: IndexStateView,
        backlog: BacklogReader,
        objects: ObjectStore,
        cursor_secret: bytes,
        download_url_expiry_seconds: int,
        page_budget_bytes: int = PAGE_ITEMS_BUDGET_BYTES,
        names: NameReader | None = None,
        enrich: frozenset[str] = frozenset(),
        user_access: UserAccess | None = None,
        key_pattern: KeyPattern | None = None,
        people: PeopleDirectory | None = None,
    ) -> None:
        self._reader = reader
        self._index_state = index_state
        self._backlog = backlog
        self._objects = objects
        self._bucket_name = objects.bucket
        self._cursor_secret = cursor_secret
        self._expiry = download_url_expiry_seconds
        self._page_budget = page_budget_bytes
        self._names = names
        self._enrich = enrich
        # The `/me/...` routes' settings (None: no user pool) and the placement uploads are keyed by.
        self.user_access = user_access
        # People's names from the user pool (None: the deployment does not name the pool).
        self.people = people
        self._key_pattern = key_pattern or KeyPattern.parse(None)
        # Signed-in people's uploads: a name is taken if the index holds a file of this bucket under it.
        self.uploads = Uploads(
            objects=objects, key_pattern=self._key_pattern, secret=cursor_secret, existing=self._indexed
        )

    def get_file(self, object_key: str) -> dict[str, Any]:
        item = self._reader.get_file(object_key)
        if item is None:
            raise FileNotFound(f"no indexed file with key {object_key!r}")
        return item

    def list_files(
        self,
        query: FileQuery | NameQuery,
        *,
        limit: int,
        cursor: str | None,
        owner_names: OwnerNames | None = None,
    ) -> FileList:
        """One page of `query`; a cursor continues the plan it was made with (BadRequest if it cannot).

        `owner_names` gives each item with an uploadUser its `ownerName`, before the page is cut to fit
        the response: the names count in its budget."""
        if isinstance(query, NameQuery):
            return self._list_by_name(query, limit=limit, cursor=cursor, owner_names=owner_names)
        start = None
        try:
            if cursor is not None:
                start = ListCursor.from_json(decode_cursor(self._cursor_secret, query, cursor))
        except (InvalidCursor, InvalidStartKey) as error:
            raise BadRequest(f"cursor is not valid for this query ({error})") from None
        # Read before the query: READY then means the query ran on a complete index. (Read after it, a
        # backfill finishing in between would make a partial page say READY.) The same record says
        # whether every entry has its Z-order address yet.
        index_state = self._index_state.state()
        z_order_ready = not self._index_state.z_order_pending()
        try:
            page = self._reader.list_files(
                query,
                limit=limit,
                start=start,
                z_order_ready=z_order_ready,
                statistics=self._index_state.statistics(),
            )
        except InvalidStartKey as error:
            raise BadRequest(f"cursor is not valid for this query ({error})") from None
        except UnavailableOrder as error:
            raise BadRequest(str(error)) from None
        items, next_position = with_owner_names(page.items, owner_names), page.next_cursor
        fitting = items_within(items, self._page_budget)
        if fitting < len(items):
            # Cut to fit Lambda's response limit: the next page starts after the last item returned.
            items = items[:fitting]
            next_position = page.cursor_after(fitting)
        next_cursor = None
        if next_position is not None:
            next_cursor = encode_cursor(self._cursor_secret, query, next_position.to_json())
        return FileList(
            items=items,
            next_cursor=next_cursor,
            scanned_count=page.scanned_count,
            request_count=page.request_count,
            ordered_by=page.ordered_by,
            index_state=index_state,
        )

    def _list_by_name(
        self, query: NameQuery, *, limit: int, cursor: str | None, owner_names: OwnerNames | None
    ) -> FileList:
        used = {
            CONTENT_TYPE: ("contentType", query.content_type is not None),
            METADATA: ("meta.NAME", bool(query.meta)),
            TAGS: ("tag.NAME", bool(query.tags)),
        }
        for kind, (parameter, is_used) in used.items():
            if is_used and kind not in self._enrich:
                named = ", ".join(sorted(self._enrich)) or "nothing"
                raise BadRequest(
                    f"{parameter}: this deployment does not index {kind} (its enrich names {named}); "
                    f'add "{kind}" to enrich in cdk.json to filter on it'
                )
        if self._names is None:
            raise BadRequest(
                "q, prefix, delimiter and ext need the name index, which this deployment does not keep "
                "(nameIndex is false)"
            )
        position = None
        try:
            if cursor is not None:
                position = decode_cursor(self._cursor_secret, query, cursor)
            index_state = self._index_state.state()
            page = self._names.list_files(query, limit=limit, position=position)
        except (InvalidCursor, InvalidStartKey) as error:
            raise BadRequest(f"cursor is not valid for this query ({error})") from None
        # A folder page's sub-folders stay whole: its items fit in what they leave of the budget.
        folders = page.common_prefixes or []
        items = with_owner_names(page.items, owner_names)
        fitting = items_within(items, self._page_budget - array_payload_bytes(folders))
        if fitting < len(items):
            page = page.cut(fitting)  # the next page goes on after the last item kept
            items = items[:fitting]
        next_position = page.next_position
        next_cursor = None
        if next_position is not None:
            next_cursor = encode_cursor(self._cursor_secret, query, next_position)
        return FileList(
            items=items,
            next_cursor=next_cursor,
            scanned_count=page.scanned_count,
            request_count=page.request_count,
            ordered_by=page.ordered_by,
            index_state=index_state,
            common_prefixes=page.common_prefixes,
        )

    def status(self) -> StatusReport:
        """The index state as of now (a consistent read of its record) and the queues' backlog."""
        return StatusReport(state=self._index_state.read(consistent=True), backlog=self._backlog.read())

    def persons_file(self, person: Person, object_key: str, *, admin_may: bool = True) -> dict[str, Any]:
        """The indexed file `object_key` if it is `person`'s (or they are an admin and `admin_may`).

        Anyone else's file, and a file of another bucket, is FileNotFound, exactly as a missing one.
        """
        item = self.get_file(object_key)
        check_owner(person, item, object_key, admin_may=admin_may)
        if item.get("bucketName") != self._bucket_name:
            raise FileNotFound(f"no indexed file with key {object_key!r}")
        return item

    def delete_persons_file(self, person: Person, object_key: str) -> None:
        """Delete `person`'s own file from the bucket; the index follows through the bucket's events."""
        item = self.persons_file(person, object_key, admin_may=False)
        # Not the indexed version: in a versioned bucket this adds a delete marker, as any delete does.
        self._objects.delete(item["objectKey"])

    def _indexed(self, object_key: str) -> dict[str, Any] | None:
        item = self._reader.get_file(object_key)
        return item if item is not None and item.get("bucketName") == self._bucket_name else None

    def share_link(self, person: Person, object_key: str, expires_in: int) -> dict[str, str]:
        """A download link of `person`'s file (an admin's: any file of the bucket) that works for
        `expires_in` seconds (checked against the cap by the route): `{"url", "expiresAt"}`.

        It is the download URL, signed for longer: an attachment of the key's current version (a delete
        ends the link, in a versioned bucket too), as
        `application/octet-stream`. `expiresAt` is when S3 stops taking it (ISO 8601, UTC, whole seconds);
        the signer's credentials expiring earlier ends it earlier (docs/configuration.md).
        """
        item = self.persons_file(person, object_key)
        signed_at = datetime.now(UTC).replace(microsecond=0)
        url = self.download_url(object_key, item=item, expires_in=expires_in)
        expires_at = signed_at + timedelta(seconds=expires_in)
        return {"url": url, "expiresAt": expires_at.isoformat().replace("+00:00", "Z")}

    def preview(self, person: Person, object_key: str) -> dict[str, Any]:
        """A URL that shows `person`'s file (an admin's: any file of the bucket) in the browser.

        `{"url", "kind", "contentType", "size"}`: S3 answers the URL with the allowlisted type of the
        file's kind and an inline disposition (`search.previews`); NoPreview for a type not on the list,
        TooLargeToPreview above the kind's size.
        """
        item = self.persons_file(person, object_key)
        size = int(item.get("size") or 0)
        shown = preview_of(object_key, size)
        url = self._objects.download_url(
            object_key,
            disposition=inline_disposition(object_key),
            content_type=shown.content_type,
            expires_in=PREVIEW_URL_EXPIRY_SECONDS,
        )
        return {
            "url": keep_dot_segments(url),
            "kind": shown.kind,
            "contentType": shown.content_type,
            "size": size,
        }

    def download_url(
        self, object_key: str, *, item: dict[str, Any] | None = None, expires_in: int | None = None
    ) -> str:
        """A presigned GET of the file (the key's current version: a delete ends it), valid for the
        configured expiry.

        The URL makes S3 answer the file as an attachment saved under its own name, and as
        `application/octet-stream` whatever type it was stored with: a browser saves it, never renders
        it (an HTML or SVG file shown on the bucket's origin could run script there).

        A key with `.` or `..` segments (`a/../b`) keeps them in the URL, percent-encoded: curl, requests
        and urllib then fetch that key; browsers still resolve them, and S3 refuses the changed path.
        """
        if item is None:
            item = self.get_file(object_key)
        # The reader shows the bucket itself, never the shard an entry is written to.
        if item.get("bucketName") != self._bucket_name:
            # Downloads are limited to the configured bucket, whatever else the index holds.
            raise FileNotFound(f"no downloadable file with key {object_key!r}")
        url = self._objects.download_url(
            object_key,
            disposition=attachment_disposition(object_key),
            content_type=DOWNLOAD_CONTENT_TYPE,
            expires_in=self._expiry if expires_in is None else expires_in,
        )
        return keep_dot_segments(url)
