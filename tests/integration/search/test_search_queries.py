"""The guideline's four searches, their ranges, orders and tricky keys: the real handler.

Lookups, orders and ranges run on moto and on DynamoDB Local; how a key travels through the path is
the handler's business alone, so the tricky-key tests run on moto only.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from tests.integration.search.conftest import BUCKET, SearchApi, both_engines


def keys(response_json: dict) -> list[str]:
    return [item["objectKey"] for item in response_json["items"]]


@both_engines
def test_get_one_file_by_exact_key_returns_its_metadata(api: SearchApi) -> None:
    api.put_file("USER001_FILE001.txt", size=12, versionId="v1")
    api.put_file("USER001_FILE0011.txt")

    response = api.get("/files/USER001_FILE001.txt")

    assert response.status == 200
    assert response.json == {
        "objectKey": "USER001_FILE001.txt",
        "bucketName": BUCKET,
        "fileId": "FILE001.txt",
        "size": 12,
        "uploadUser": "USER001",
        "uploadDate": "2017-08-20T09:15:02.113Z",
        "sequencer": "00599E9964323435D9",
        "eTag": "d41d8cd98f00b204e9800998ecf8427e",
        "versionId": "v1",
    }
    assert isinstance(response.json["size"], int)


@both_engines
def test_get_absent_key_is_404_with_message(api: SearchApi) -> None:
    response = api.get("/files/USER001_nothing.txt")
    assert response.status == 404
    assert "USER001_nothing.txt" in response.json["message"]


TRICKY_KEYS = [
    "USER001/report 2017.txt",
    "USER001/a+b.txt",
    "USER001/100%.txt",
    "USER001/%41.txt",  # looks percent-encoded: must not be decoded twice
    "USER001/日本語/ファイル.txt",
    "USER001/deep/er/path/",
    "USER001_#?&=;.txt",
    "USER001/ a  b ",
]


@pytest.mark.parametrize("key", TRICKY_KEYS)
@pytest.mark.parametrize("slash", ["raw", "encoded"])
def test_tricky_keys_round_trip_through_the_path(api: SearchApi, key: str, slash: str) -> None:
    api.put_file(key, size=5)
    # A client may leave "/" as it is or encode it as %2F; everything else is percent-encoded.
    path = quote(key, safe="/" if slash == "raw" else "")

    file_response = api.get(f"/files/{path}")
    download = api.get(f"/download/{path}")

    assert file_response.status == 200, file_response.body
    assert file_response.json["objectKey"] == key
    assert download.status == 302
    assert f"/{BUCKET}/" in download.headers["Location"] or f"{BUCKET}." in download.headers["Location"]


def test_plus_in_a_path_is_a_plus_not_a_space(api: SearchApi) -> None:
    api.put_file("USER001/a b.txt")
    assert api.get("/files/USER001/a+b.txt").status == 404
    assert api.get("/files/USER001/a%20b.txt").status == 200


@both_engines
def test_tombstones_are_404_and_never_listed(api: SearchApi) -> None:
    api.put_file("USER001_kept.txt", size=1)
    api.put_tombstone("USER001_gone.txt")

    assert api.get("/files/USER001_gone.txt").status == 404
    assert api.get("/download/USER001_gone.txt").status == 404
    assert keys(api.get("/files?user=USER001").json) == ["USER001_kept.txt"]
    assert keys(api.get(f"/files?bucket={BUCKET}").json) == ["USER001_kept.txt"]
    assert keys(api.get(f"/files?bucket={BUCKET}&order=asc&minSize=0").json) == ["USER001_kept.txt"]


def _upload_day(api: SearchApi) -> None:
    api.put_file("USER001_late.txt", date="2017-08-20T23:59:59.999Z")
    api.put_file("USER001_early.txt", date="2017-08-20T00:00:00.000Z")
    api.put_file("USER001_noon.txt", date="2017-08-20T12:00:00.000Z")
    api.put_file("USER001_before.txt", date="2017-08-19T23:59:59.999Z")
    api.put_file("USER001_after.txt", date="2017-08-21T00:00:00.000Z")
    api.put_file("USER002_same_day.txt", user="USER002", date="2017-08-20T12:00:00.000Z")


@both_engines
def test_user_files_in_upload_order_ascending_by_default(api: SearchApi) -> None:
    _upload_day(api)
    response = api.get("/files?user=USER001")
    assert response.status == 200
    assert keys(response.json) == [
        "USER001_before.txt",
        "USER001_early.txt",
        "USER001_noon.txt",
        "USER001_late.txt",
        "USER001_after.txt",
    ]
    assert response.json["nextCursor"] is None


@both_engines
def test_user_files_descending_with_order_desc(api: SearchApi) -> None:
    _upload_day(api)
    response = api.get("/files?user=USER001&order=desc")
    assert keys(response.json) == [
        "USER001_after.txt",
        "USER001_late.txt",
        "USER001_noon.txt",
        "USER001_early.txt",
        "USER001_before.txt",
    ]


@both_engines
def test_user_files_of_one_utc_day_include_both_ends_of_the_day(api: SearchApi) -> None:
    _upload_day(api)
    assert keys(api.get("/files?user=USER001&date=2017-08-20").json) == [
        "USER001_early.txt",
        "USER001_noon.txt",
        "USER001_late.txt",
    ]
    assert keys(api.get("/files?user=USER001&date=2017-08-20&order=desc").json) == [
        "USER001_late.txt",
        "USER001_noon.txt",
        "USER001_early.txt",
    ]
    assert keys(api.get("/files?user=USER001&date=2017-08-22").json) == []


@both_engines
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # Days as bounds: both days included, whole.
        ({"from": "2017-08-20", "to": "2017-08-20"}, ["early", "noon", "late"]),
        ({"from": "2017-08-19", "to": "2017-08-20"}, ["before", "early", "noon", "late"]),
        # Timestamps are inclusive at millisecond precision.
        ({"from": "2017-08-20T00:00:00.000Z", "to": "2017-08-20T12:00:00.000Z"}, ["early", "noon"]),
        ({"from": "2017-08-20T00:00:00.001Z", "to": "2017-08-20T11:59:59.999Z"}, []),
        ({"from": "2017-08-19T23:59:59.9995Z"}, ["early", "noon", "late", "after"]),
        # Offsets are converted to UTC; a timestamp without an offset is UTC.
        ({"from": "2017-08-20T14:00:00+02:00", "to": "2017-08-20T12:00:00"}, ["noon"]),
        # Open ranges.
        ({"from": "2017-08-20T12:00:00Z"}, ["noon", "late", "after"]),
        ({"to": "2017-08-20T00:00:00Z"}, ["before", "early"]),
    ],
)
def test_user_files_in_a_time_range(api: SearchApi, params: dict[str, str], expected: list[str]) -> None:
    _upload_day(api)
    response = api.get("/files?" + urlencode({"user": "USER001", **params}))
    assert response.status == 200, response.body
    assert keys(response.json) == [f"USER001_{name}.txt" for name in expected]


@both_engines
def test_time_range_descending(api: SearchApi) -> None:
    _upload_day(api)
    response = api.get("/files?user=USER001&from=2017-08-20&to=2017-08-21&order=desc")
    assert keys(response.json) == [
        "USER001_after.txt",
        "USER001_late.txt",
        "USER001_noon.txt",
        "USER001_early.txt",
    ]


def _fill_bucket(api: SearchApi) -> None:
    for name, size in [("s0", 0), ("s10", 10), ("s99", 99), ("s100", 100), ("big", 5 * 1024**4)]:
        api.put_file(f"USER001_{name}.bin", size=size)
    api.put_file("USER001_other_bucket.bin", size=50, bucket="fileupload.b")


@both_engines
def test_bucket_files_by_size_descending_by_default(api: SearchApi) -> None:
    _fill_bucket(api)
    response = api.get(f"/files?bucket={BUCKET}")
    assert keys(response.json) == [
        "USER001_big.bin",
        "USER001_s100.bin",
        "USER001_s99.bin",
        "USER001_s10.bin",
        "USER001_s0.bin",
    ]
    assert response.json["items"][0]["size"] == 5 * 1024**4


@both_engines
def test_bucket_files_ascending_with_order_asc(api: SearchApi) -> None:
    _fill_bucket(api)
    response = api.get(f"/files?bucket={BUCKET}&order=asc")
    assert [item["size"] for item in response.json["items"]] == [0, 10, 99, 100, 5 * 1024**4]


@both_engines
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ("minSize=10&maxSize=100", ["s100", "s99", "s10"]),
        ("minSize=11&maxSize=99", ["s99"]),
        ("minSize=100&maxSize=100", ["s100"]),
        ("minSize=100", ["big", "s100"]),
        ("maxSize=10", ["s10", "s0"]),
        ("maxSize=0", ["s0"]),
        ("minSize=101&maxSize=102", []),
        ("minSize=10&maxSize=100&order=asc", ["s10", "s99", "s100"]),
    ],
)
def test_bucket_files_in_a_size_range(api: SearchApi, params: str, expected: list[str]) -> None:
    _fill_bucket(api)
    response = api.get(f"/files?bucket={BUCKET}&{params}")
    assert response.status == 200, response.body
    assert keys(response.json) == [f"USER001_{name}.bin" for name in expected]


@both_engines
def test_other_buckets_are_listed_by_their_own_name(api: SearchApi) -> None:
    _fill_bucket(api)
    assert keys(api.get("/files?bucket=fileupload.b").json) == ["USER001_other_bucket.bin"]
    assert keys(api.get("/files?bucket=fileupload.c").json) == []
