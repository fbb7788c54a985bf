"""Sizes of answers in Lambda's response, and presigned URLs that keep a key's dot segments."""

from __future__ import annotations

import json

import pytest

from search.payload import array_payload_bytes, dumps, items_within, payload_bytes
from search.service import keep_dot_segments


@pytest.mark.parametrize("escapes", [True, False])
def test_payload_bytes_are_those_of_the_body_inside_the_runtimes_json(escapes: bool) -> None:
    body = dumps({"items": [{"objectKey": 'é"\\日'}]})
    whole = json.dumps({"statusCode": 200, "body": body}, ensure_ascii=escapes).encode("utf-8")
    empty = json.dumps({"statusCode": 200, "body": ""}, ensure_ascii=escapes).encode("utf-8")
    assert payload_bytes(body, escapes_non_ascii=escapes) == len(whole) - len(empty) + 2


def test_the_body_writes_non_ascii_as_utf8() -> None:
    assert dumps({"k": "é"}) == '{"k":"é"}'


@pytest.mark.parametrize("escapes", [True, False])
def test_items_within_counts_what_fits_in_the_budget_as_an_array(escapes: bool) -> None:
    items = [{"objectKey": "é" * 100, "size": n} for n in range(10)]
    array = payload_bytes(dumps(items), escapes_non_ascii=escapes) - 2  # less the string's quotes
    assert items_within(items, array + 1, escapes_non_ascii=escapes) == 10
    three = payload_bytes(dumps(items[:3]), escapes_non_ascii=escapes) - 2
    assert items_within(items, three, escapes_non_ascii=escapes) == 3
    assert items_within(items, three - 1, escapes_non_ascii=escapes) == 2


def test_a_first_item_over_the_budget_is_still_returned_alone() -> None:
    assert items_within([{"objectKey": "x" * 100}, {"objectKey": "y"}], 10) == 1
    assert items_within([], 10) == 0


Q = "?X-Amz-Signature=abc&X-Amz-Expires=300"


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://b.s3.amazonaws.com/a/../b" + Q, "https://b.s3.amazonaws.com/a/%2E%2E/b" + Q),
        ("http://127.0.0.1:5000/bucket/./x" + Q, "http://127.0.0.1:5000/bucket/%2E/x" + Q),
        ("http://h/bucket/a/./b/.." + Q, "http://h/bucket/a/%2E/b/%2E%2E" + Q),
        # Not dot segments: left alone, as is every other URL.
        ("http://h/bucket/a.b/...x/.../.x" + Q, "http://h/bucket/a.b/...x/.../.x" + Q),
        ("http://h/bucket/a%2F..%2Fb" + Q, "http://h/bucket/a%2F..%2Fb" + Q),
    ],
)
def test_dot_segments_are_percent_encoded_and_nothing_else_changes(url: str, kept: str) -> None:
    assert keep_dot_segments(url) == kept


@pytest.mark.parametrize("escapes", [True, False])
def test_array_payload_bytes_are_what_the_array_adds_to_a_body(escapes: bool) -> None:
    folders = ['a"/', "é/", "\\/"]
    with_them = payload_bytes(dumps({"commonPrefixes": folders}), escapes_non_ascii=escapes)
    without = payload_bytes(dumps({"commonPrefixes": []}), escapes_non_ascii=escapes)
    assert array_payload_bytes(folders, escapes_non_ascii=escapes) == with_them - without + 2
