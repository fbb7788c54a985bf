"""Paging with cursors: every item exactly once across pages; a cursor works only for its own query.

Tests whose cursors reach the table run on both engines, which differ here: DynamoDB refuses a start key
outside the key condition (ValidationException) where moto answers an empty page, and DynamoDB returns a
LastEvaluatedKey when a page ends exactly on the last item where moto returns none. A cursor that is
forged, corrupted or made for another query is refused before any read, so those tests run on moto only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import zlib
from urllib.parse import quote

import pytest

from file_index.read.file_queries import BucketQuery
from search.cursor import fingerprint
from tests.integration.search.conftest import BUCKET, CURSOR_KEY, SearchApi, both_engines

ITEMS = 60


def _fill(api: SearchApi) -> None:
    with api.table.batch_writer() as batch:
        for n in range(ITEMS):
            # Many items share a sort key value (same second, same size): paging must still be exact.
            item = {
                "objectKey": f"USER001/file-{n:03d}.txt",
                "bucketName": BUCKET,
                "fileId": f"file-{n:03d}.txt",
                "size": n % 7,
                "uploadUser": "USER001",
                "uploadDate": f"2017-08-20T09:15:{n % 5:02d}.000Z",
                "sequencer": f"{n:018X}",
                "orderKey": f"{n:018X}",
            }
            batch.put_item(Item=item)


def _all_pages(api: SearchApi, path: str) -> tuple[list[dict], int]:
    items: list[dict] = []
    pages = 0
    cursor = None
    while True:
        response = api.get(path + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert response.status == 200, response.body
        pages += 1
        items.extend(response.json["items"])
        cursor = response.json["nextCursor"]
        if cursor is None:
            return items, pages
        assert pages <= ITEMS + 1, "paging does not end"


@both_engines
@pytest.mark.parametrize(
    ("path", "sort_key", "descending"),
    [
        ("/files?user=USER001&limit=7", "uploadDate", False),
        ("/files?user=USER001&limit=7&order=desc", "uploadDate", True),
        ("/files?user=USER001&date=2017-08-20&limit=1", "uploadDate", False),
        (f"/files?bucket={BUCKET}&limit=9", "size", True),
        (f"/files?bucket={BUCKET}&limit=9&order=asc", "size", False),
        (f"/files?bucket={BUCKET}&limit=10&minSize=0&maxSize=6", "size", True),
    ],
)
def test_paging_returns_every_item_exactly_once_in_order(
    api: SearchApi, path: str, sort_key: str, descending: bool
) -> None:
    _fill(api)
    one_page = api.get(path.split("&limit=")[0] + "&limit=1000").json

    items, pages = _all_pages(api, path)

    limit = int(path.split("limit=")[1].split("&")[0])
    assert len(items) == ITEMS
    assert len({item["objectKey"] for item in items}) == ITEMS
    # DynamoDB leaves the order of equal sort keys open, so compare sets, and the sort key's order.
    assert {item["objectKey"] for item in items} == {item["objectKey"] for item in one_page["items"]}
    values = [item[sort_key] for item in items]
    assert values == sorted(values, reverse=descending)
    assert pages in (-(-ITEMS // limit), -(-ITEMS // limit) + 1)  # a last, empty page is allowed
    assert one_page["nextCursor"] is None


@both_engines
def test_default_limit_is_100(api: SearchApi) -> None:
    with api.table.batch_writer() as batch:
        for n in range(101):
            batch.put_item(
                Item={"objectKey": f"K{n:03d}", "bucketName": BUCKET, "size": n, "uploadUser": "U"}
                | {"uploadDate": "2017-08-20T09:15:02.113Z"}
            )
    first = api.get(f"/files?bucket={BUCKET}").json
    assert len(first["items"]) == 100
    second = api.get(f"/files?bucket={BUCKET}&cursor={quote(first['nextCursor'])}").json
    assert [item["size"] for item in second["items"]] == [0]
    assert second["nextCursor"] is None


@both_engines
@pytest.mark.parametrize(
    "path", [f"/files?bucket={BUCKET}&limit=4", "/files?user=USER001&limit=4&order=desc"]
)
def test_a_page_that_ends_on_the_last_item_ends_the_list_at_most_one_empty_page_later(
    api: SearchApi, engine: str, path: str
) -> None:
    for n in range(8):
        api.put_file(f"USER001/f{n}", size=n, date=f"2017-08-20T09:15:0{n}.000Z")
    first = api.get(path).json
    assert first["nextCursor"]
    second = api.get(f"{path}&cursor={quote(first['nextCursor'])}").json
    assert len(first["items"]) == len(second["items"]) == 4
    # DynamoDB cannot tell that nothing follows without reading on, so a full last page may carry a
    # cursor (DynamoDB Local does, moto does not); following it gives an empty page and no cursor.
    if engine == "dynamodb_local":
        assert second["nextCursor"] is not None
    if second["nextCursor"] is not None:
        third = api.get(f"{path}&cursor={quote(second['nextCursor'])}").json
        ordered_by = "size" if "bucket=" in path else "uploadDate"
        assert third == {"items": [], "nextCursor": None, "orderedBy": ordered_by, "indexState": "READY"}
    keys = [item["objectKey"] for item in first["items"] + second["items"]]
    assert sorted(keys) == [f"USER001/f{n}" for n in range(8)]


@both_engines
def test_a_cursor_works_with_another_limit(api: SearchApi) -> None:
    _fill(api)
    first = api.get("/files?user=USER001&limit=5").json
    rest = api.get(f"/files?user=USER001&limit=1000&cursor={quote(first['nextCursor'])}")
    assert rest.status == 200
    assert len(first["items"]) + len(rest.json["items"]) == ITEMS


def _cursor(api: SearchApi, path: str) -> str:
    _fill(api)
    cursor = api.get(path).json["nextCursor"]
    assert cursor
    return cursor


@pytest.mark.parametrize(
    "other_query",
    [
        "/files?user=USER002&limit=5",
        "/files?user=USER001&limit=5&order=desc",
        "/files?user=USER001&limit=5&date=2017-08-20",
        "/files?user=USER001&limit=5&from=2017-08-20",
        "/files?user=USER001&limit=5&to=2017-08-21",
        f"/files?bucket={BUCKET}&limit=5",
    ],
)
def test_a_cursor_replayed_against_another_query_is_400(api: SearchApi, other_query: str) -> None:
    cursor = _cursor(api, "/files?user=USER001&limit=5")
    response = api.get(f"{other_query}&cursor={quote(cursor)}")
    assert response.status == 400
    assert "cursor is not valid for this query" in response.json["message"]


def _flip(text: str, position: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    replacement = alphabet[(alphabet.index(text[position]) + 1) % len(alphabet)]
    return text[:position] + replacement + text[position + 1 :]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: _flip(c, 10),  # payload changed
        lambda c: _flip(c, len(c) - 3),  # signature changed
        lambda c: c[:-4],  # truncated
        lambda c: c.replace(".", ""),  # no signature
        lambda c: c + ".x",  # extra part
        lambda c: "not a cursor",
        lambda c: "é.é",
        lambda c: "",
        lambda c: "." * 10,
        lambda c: base64.urlsafe_b64encode(b'{"v":1}').decode() + "." + c.split(".")[1],
    ],
)
def test_a_tampered_or_corrupted_cursor_is_400(api: SearchApi, tamper) -> None:
    path = f"/files?bucket={BUCKET}&limit=5"
    cursor = _cursor(api, path)
    response = api.get(f"{path}&cursor={quote(tamper(cursor))}")
    assert response.status == 400
    assert "cursor" in response.json["message"]


def _sign(payload: dict, *, compress: bool = True) -> str:
    raw = json.dumps(payload).encode()
    data = zlib.compress(raw) if compress else raw
    signature = hmac.new(CURSOR_KEY.encode(), data, hashlib.sha256).digest()

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return f"{b64(data)}.{b64(signature)}"


def _position(size: object, key: object = "x") -> dict:
    return {"v": size, "k": key}


def _list_cursor(*shards: object, plan: str = "size", last: object = None) -> dict:
    return {"plan": plan, "merge": {"shards": list(shards), "last": last}}


@both_engines
@pytest.mark.parametrize(
    "position",
    [
        # Outside the size range of the query, or not a size at all.
        _list_cursor(_position(1000)),
        _list_cursor(_position(3), last=_position(-1)),
        _list_cursor(_position("3")),
        _list_cursor(_position(True)),
        _list_cursor([1000]),  # a compact position (a sort value, no key) outside the query
        _list_cursor([3, 4]),  # a compact position holds one value
        _list_cursor(_position(3, "k" * 1025)),
        # The plan of another index, or of the Z-order index, which this query never reads.
        _list_cursor(_position("2017-08-20T09:15:00.000Z"), plan="uploadDate"),
        _list_cursor(_position("0" * 21), plan="zAddress"),
        _list_cursor(_position(3), plan="name"),
        # More shards than the bucket has now (one).
        _list_cursor(_position(3), _position(4)),
        # Malformed.
        _list_cursor(),
        {"plan": "size"},
        {"plan": "size", "merge": {"shards": [{"v": 3}], "last": None}},
        {"objectKey": {"S": "x"}, "bucketName": {"S": BUCKET}, "size": {"N": "3"}},
    ],
)
def test_a_signed_cursor_outside_its_query_is_400(api: SearchApi, position: dict) -> None:
    query = BucketQuery(bucket=BUCKET, min_size=0, max_size=6)
    cursor = _sign({"v": 2, "q": fingerprint(query), "c": position})
    response = api.get(f"/files?bucket={BUCKET}&minSize=0&maxSize=6&cursor={quote(cursor)}")
    assert response.status == 400, response.body
    assert "cursor is not valid for this query" in response.json["message"]


def test_a_cursor_signed_with_another_key_is_400(api: SearchApi) -> None:
    query = BucketQuery(bucket=BUCKET)
    genuine = _sign({"v": 2, "q": fingerprint(query), "c": _list_cursor(_position(3))})
    assert api.get(f"/files?bucket={BUCKET}&cursor={quote(genuine)}").status == 200
    payload = genuine.split(".")[0]
    forged = payload + "." + base64.urlsafe_b64encode(b"\0" * 32).rstrip(b"=").decode()
    assert api.get(f"/files?bucket={BUCKET}&cursor={quote(forged)}").status == 400


def test_a_cursor_of_the_previous_version_is_refused_with_a_clear_message(api: SearchApi) -> None:
    # Before sharding, a cursor held one DynamoDB start key, signed as plain JSON.
    query = BucketQuery(bucket=BUCKET)
    start = {"objectKey": {"S": "x"}, "bucketName": {"S": BUCKET}, "size": {"N": "3"}}
    old = _sign({"v": 1, "q": fingerprint(query), "k": start}, compress=False)
    response = api.get(f"/files?bucket={BUCKET}&cursor={quote(old)}")
    assert response.status == 400
    assert response.json["message"] == (
        "cursor is not valid for this query (made by an earlier version of this API; start the list again)"
    )
