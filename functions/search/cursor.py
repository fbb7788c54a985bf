"""Opaque paging cursors: where a list query stopped, bound to that query and signed.

A cursor is `base64url(payload) "." base64url(HMAC-SHA256(key, payload))` where the payload is JSON
`{"v": 1, "q": <query fingerprint>, "k": <DynamoDB LastEvaluatedKey>}`. The signature makes forged or
corrupted cursors detectable; the fingerprint (over everything that selects items, but not `limit`)
makes a cursor useless with any other query; the reader still checks that the start key lies inside
the query, so even a leaked key cannot read outside the query a cursor was made for.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
from typing import Any

from file_index.reader import FileQuery, StartKey

VERSION = 1
# Far above any real cursor (a start key holds at most three attributes of bounded size).
MAX_CURSOR_LENGTH = 8192


class InvalidCursor(ValueError):
    """The cursor was not made by this API for this query."""


def fingerprint(query: FileQuery) -> str:
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


def encode_cursor(secret: bytes, query: FileQuery, start: StartKey) -> str:
    # Non-ASCII as UTF-8, not \uXXXX escapes: two keys of 1,024 bytes then stay far below the maximum.
    payload = json.dumps(
        {"v": VERSION, "q": fingerprint(query), "k": start},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    return f"{_b64encode(payload)}.{_b64encode(_sign(secret, payload))}"


def decode_cursor(secret: bytes, query: FileQuery, cursor: str) -> StartKey:
    """The start key inside `cursor`, or InvalidCursor if it is not genuine or belongs to another query."""
    if len(cursor) > MAX_CURSOR_LENGTH or cursor.count(".") != 1:
        raise InvalidCursor("malformed")
    encoded_payload, encoded_signature = cursor.split(".")
    try:
        payload = _b64decode(encoded_payload)
        signature = _b64decode(encoded_signature)
    except (binascii.Error, ValueError):
        raise InvalidCursor("malformed") from None
    if not hmac.compare_digest(signature, _sign(secret, payload)):
        raise InvalidCursor("bad signature")
    try:
        content: Any = json.loads(payload)
    except ValueError:
        raise InvalidCursor("malformed") from None
    if not isinstance(content, dict) or content.get("v") != VERSION or not isinstance(content.get("k"), dict):
        raise InvalidCursor("malformed")
    if not hmac.compare_digest(str(content.get("q")), fingerprint(query)):
        raise InvalidCursor("made for another query")
    start: StartKey = content["k"]
    return start
