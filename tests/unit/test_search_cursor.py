"""Cursors: round trip, and every kind of damage detected."""

from __future__ import annotations

import pytest

from file_index.read.file_queries import BucketQuery, UserQuery
from search.cursor import InvalidCursor, decode_cursor, encode_cursor, fingerprint

KEY = b"k" * 32
START = {"objectKey": {"S": "U/a"}, "uploadUser": {"S": "U"}, "uploadDate": {"S": "2017-08-20T00:00:00.000Z"}}
QUERY = UserQuery(user="U")


def test_a_cursor_round_trips_and_is_url_safe() -> None:
    cursor = encode_cursor(KEY, QUERY, START)
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    assert decode_cursor(KEY, QUERY, cursor) == START


@pytest.mark.parametrize(
    "other",
    [
        UserQuery(user="V"),
        UserQuery(user="U", ascending=False),
        UserQuery(user="U", start="2017-08-20T00:00:00.000Z"),
        UserQuery(user="U", day_prefix="2017-08-20T"),
        BucketQuery(bucket="U"),
    ],
)
def test_a_cursor_is_bound_to_its_query(other: UserQuery | BucketQuery) -> None:
    assert fingerprint(other) != fingerprint(QUERY)
    with pytest.raises(InvalidCursor, match="another query"):
        decode_cursor(KEY, other, encode_cursor(KEY, QUERY, START))


def test_a_cursor_made_with_another_key_is_refused() -> None:
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(KEY, QUERY, encode_cursor(b"other key", QUERY, START))


@pytest.mark.parametrize("cursor", ["", ".", "a.b.c", "!!!.???", "é.é", "x" * 9000, "e30.AAAA"])
def test_garbage_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(KEY, QUERY, cursor)
