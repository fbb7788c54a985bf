"""One test per kind of bad input: each is a 400 (or 404) with a message that says what is wrong."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.integration.search.conftest import BUCKET, SearchApi

B = f"/files?bucket={BUCKET}"

BAD_LISTS = [
    ("/files", "give exactly one of user or bucket"),
    ("/files?limit=5", "give exactly one of user or bucket"),
    (f"/files?user=USER001&bucket={BUCKET}", "give exactly one of user or bucket"),
    ("/files?user=", "user must not be empty"),
    ("/files?bucket=", "bucket must not be empty"),
    ("/files?user=" + "u" * 1025, "query parameter user: String should have at most 1024 characters"),
    ("/files?user=" + quote("é" * 513), "user is longer than 1024 bytes"),
    ("/files?user=U&date=2017-08-20&from=2017-08-19", "date cannot be combined with from or to"),
    ("/files?user=U&date=2017-08-20&to=2017-08-21", "date cannot be combined with from or to"),
    ("/files?user=U&date=20170820", "date must be a date YYYY-MM-DD"),
    ("/files?user=U&date=2017-02-30", "date is not a valid date"),
    ("/files?user=U&date=yesterday", "date must be a date YYYY-MM-DD"),
    ("/files?user=U&from=2017-13-01", "from is not a valid date"),
    ("/files?user=U&from=soon", "from must be a date YYYY-MM-DD or an ISO-8601 timestamp"),
    ("/files?user=U&to=2017-08-20T25:00:00Z", "to is not a valid timestamp"),
    ("/files?user=U&to=2017-08-20T10:00:00%2B99:00", "to is not a valid timestamp"),
    # Valid timestamps whose UTC time is outside years 1-9999: the range is named.
    (
        "/files?user=U&from=0001-01-01T00:00:00%2B01:00",
        "from '0001-01-01T00:00:00+01:00' is outside the times the index holds: 0001-01-01T00:00:00Z to",
    ),
    (
        "/files?bucket=b&to=9999-12-31T23:59:59-01:00",
        "to '9999-12-31T23:59:59-01:00' is outside the times the index holds",
    ),
    ("/files?user=U&from=2017-08-21&to=2017-08-20", "from must not be after to"),
    ("/files?user=U&from=2017-08-20T10:00:00.001Z&to=2017-08-20T10:00:00Z", "from must not be after to"),
    (f"{B}&minSize=-1", "query parameter minSize: Input should be greater than or equal to 0"),
    (f"{B}&maxSize=-5", "query parameter maxSize: Input should be greater than or equal to 0"),
    (f"{B}&minSize=ten", "query parameter minSize: Input should be a valid integer"),
    (
        f"{B}&minSize=123456789012345678901234567890123456789",
        "query parameter minSize: Input should be less than or equal to 9223372036854775807",
    ),
    (
        f"{B}&maxSize={2**63}",
        "query parameter maxSize: Input should be less than or equal to 9223372036854775807",
    ),
    (f"{B}&maxSize=1.5", "query parameter maxSize: Input should be a valid integer"),
    (f"{B}&minSize=10&maxSize=9", "minSize must not be greater than maxSize"),
    ("/files?user=U&limit=0", "query parameter limit: Input should be greater than or equal to 1"),
    ("/files?user=U&limit=1001", "query parameter limit: Input should be less than or equal to 1000"),
    ("/files?user=U&limit=-3", "query parameter limit: Input should be greater than or equal to 1"),
    ("/files?user=U&limit=all", "query parameter limit: Input should be a valid integer"),
    ("/files?user=U&order=up", "query parameter order: Input should be 'asc' or 'desc'"),
    ("/files?user=U&order=DESC", "query parameter order: Input should be 'asc' or 'desc'"),
    # Box queries keep every check of each attribute, whichever of user or bucket they select.
    (f"{B}&date=2017-08-20&from=2017-08-19", "date cannot be combined with from or to"),
    (f"{B}&date=2017-08-20&to=2017-08-21&minSize=1", "date cannot be combined with from or to"),
    (f"{B}&from=2017-08-21&to=2017-08-20&minSize=1", "from must not be after to"),
    (f"{B}&date=2017-02-30", "date is not a valid date"),
    (f"{B}&to=tomorrow", "to must be a date YYYY-MM-DD or an ISO-8601 timestamp"),
    ("/files?user=U&minSize=10&maxSize=9", "minSize must not be greater than maxSize"),
    ("/files?user=U&date=2017-08-20&minSize=10&maxSize=9", "minSize must not be greater than maxSize"),
    ("/files?user=U&minSize=-1", "query parameter minSize: Input should be greater than or equal to 0"),
    (f"{B}&from=2017-08-20&maxSize=ten", "query parameter maxSize: Input should be a valid integer"),
    ("/files?user=U&cursor=abc", "cursor is not valid for this query"),
    # Bytes that are not UTF-8 arrive as U+FFFD, which no bucket name holds (as /files/%FF is a 400).
    ("/files?bucket=%FF", "bucket is not an S3 bucket name: '\ufffd'"),
    ("/files?bucket=%FF&q=report", "bucket is not an S3 bucket name"),
    ("/files?bucket=my%20bucket", "bucket is not an S3 bucket name: 'my bucket'"),
    ("/files?user=U&cursor=" + "a" * 9000, "query parameter cursor: String should have at most 8192"),
]


@pytest.mark.parametrize(("path", "message"), BAD_LISTS, ids=[path for path, _ in BAD_LISTS])
def test_bad_list_parameters_are_400_with_a_message(api: SearchApi, path: str, message: str) -> None:
    response = api.get(path)
    assert response.status == 400, response.body
    assert response.headers["Content-Type"] == "application/json"
    assert message in response.json["message"]


BAD_KEYS = [
    ("", "objectKey must not be empty"),
    ("a" * 1025, "objectKey is longer than 1024 bytes"),
    (quote("é" * 513), "objectKey is longer than 1024 bytes"),
    ("%FF%FE.txt", "objectKey is not valid percent-encoded UTF-8"),
]


@pytest.mark.parametrize("route", ["files", "download"])
@pytest.mark.parametrize(("raw_key", "message"), BAD_KEYS, ids=["empty", "long", "long-utf8", "not-utf8"])
def test_bad_keys_are_400_with_a_message(api: SearchApi, route: str, raw_key: str, message: str) -> None:
    response = api.get(f"/{route}/{raw_key}")
    assert response.status == 400, response.body
    assert response.json["message"] == message


def test_a_key_of_exactly_1024_bytes_is_looked_up(api: SearchApi) -> None:
    key = "USER001/" + "é" * 508  # 8 + 1016 bytes
    api.put_file(key)
    assert api.get(f"/files/{quote(key)}").status == 200
    assert api.get(f"/files/{quote(key)}x").status == 400


def test_unknown_routes_and_methods_are_404(api: SearchApi) -> None:
    for path in ("/", "/file", "/files2", "/search?user=U"):
        response = api.get(path)
        assert response.status == 404
        assert response.json["message"]
