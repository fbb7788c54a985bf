"""Opaque paging cursors: where a list stopped, bound to its query and signed.

A cursor is `base64url(data) "." base64url(HMAC-SHA256(key, data))`, `data` being zlib's compression of JSON
`{"v": 2, "q": <query fingerprint>, "c": <the reader's ListCursor as JSON>}`: the plan the list is read
with and, per shard, the position of its last returned item. The signature makes forged or corrupted
cursors detectable; the fingerprint (over everything that selects items, but not `limit`) makes a cursor
useless with any other query; the reader still checks that every position lies inside the query, so
even a leaked cursor cannot read outside the query it was made for.

A cursor holds the last item's object key and, per shard, the sort value it resumes from
(`shard_merge.compact`; a shard keeps its last item's key only on a tie), so it stays small whatever the
keys: with 256 shards of 1,024-byte keys about 2.4 to 3.5 kilobytes. Cursors of version 1 (one DynamoDB
start key) are refused with a message that says to start the list again.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import zlib
from typing import Any

from file_index.read.file_queries import FileQuery
from file_index.read.name_query import NameQuery

VERSION = 2
# What a query string carries comfortably through API Gateway (its request line and headers take at most
# 10,240 bytes); a sharded cursor of ordinary keys stays far below it.
MAX_CURSOR_LENGTH = 8192
# A payload never inflates beyond this: a cursor that would is not one of ours.
_MAX_PAYLOAD_BYTES = 1 << 20


class InvalidCursor(ValueError):
    """The cursor was not made by this API for this query."""


def fingerprint(query: FileQuery | NameQuery) -> str:
    """A digest of what selects and orders the query's items."""
    canonical = json.dumps(
        [type(query).__name__, dataclasses.asdict(query)], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    # validate=True refuses characters outside the alphabet instead of silently skipping them.
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def _sign(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()


def encode_cursor(secret: bytes, query: FileQuery | NameQuery, position: dict[str, Any]) -> str:
    """A cursor of `position` (plain JSON, the reader's `ListCursor.to_json()`) for `query`."""
    # Non-ASCII as UTF-8, not \uXXXX escapes: keys of 1,024 bytes then take no more than they must.
    payload = json.dumps(
        {"v": VERSION, "q": fingerprint(query), "c": position},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    data = zlib.compress(payload, 9)
    return f"{_b64encode(data)}.{_b64encode(_sign(secret, data))}"


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(data, _MAX_PAYLOAD_BYTES)
    except zlib.error:
        raise InvalidCursor("malformed") from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise InvalidCursor("malformed")
    return payload


def decode_cursor(secret: bytes, query: FileQuery | NameQuery, cursor: str) -> Any:
    """The position inside `cursor` (plain JSON), or InvalidCursor if it is not genuine, belongs to
    another query or was made by an earlier version of the API."""
    if len(cursor) > MAX_CURSOR_LENGTH or cursor.count(".") != 1:
        raise InvalidCursor("malformed")
    encoded_payload, encoded_signature = cursor.split(".")
    try:
        data = _b64decode(encoded_payload)
        signature = _b64decode(encoded_signature)
    except (binascii.Error, ValueError):
        raise InvalidCursor("malformed") from None
    # Checked before anything is inflated: only this API's own bytes are ever decompressed.
    if not hmac.compare_digest(signature, _sign(secret, data)):
        raise InvalidCursor("bad signature")
    # A version 1 cursor signed plain JSON, not zlib's output: it starts with "{".
    if data.startswith(b"{"):
        raise InvalidCursor("made by an earlier version of this API; start the list again")
    payload = _inflate(data)
    try:
        content: Any = json.loads(payload)
    except ValueError:
        raise InvalidCursor("malformed") from None
    if not isinstance(content, dict) or content.get("v") != VERSION or not isinstance(content.get("c"), dict):
        raise InvalidCursor("malformed")
    if not hmac.compare_digest(str(content.get("q")), fingerprint(query)):
        raise InvalidCursor("made for another query")
    return content["c"]
