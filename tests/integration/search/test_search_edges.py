"""Edges a real client meets: misspelled parameters, numbers that are not integers, pages near Lambda's
6 MB response limit, keys with dot segments, and the metrics every request emits."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import requests
from moto.server import ThreadedMotoServer

from file_index.rules import schema
from local_stack.api_gateway import to_rest_event
from search import composition, handler
from search.payload import RESPONSE_LIMIT_BYTES, RUNTIME_ESCAPES_NON_ASCII
from tests.integration.search.conftest import BUCKET, SearchApi, both_engines

B = f"/files?bucket={BUCKET}"

UNKNOWN = [
    (f"{B}&minsize=10000000", "unknown query parameter 'minsize' (did you mean 'minSize'?)"),
    ("/files?user=U&Limit=5", "unknown query parameter 'Limit' (did you mean 'limit'?)"),
    ("/files?user=U&uesr=V", "unknown query parameter 'uesr' (did you mean 'user'?)"),
    ("/files?user=U&foo=1", "unknown query parameter 'foo'; GET /files takes user, bucket, date, from"),
    (f"{B}&max_size=3", "unknown query parameter 'max_size' (did you mean 'maxSize'?)"),
    (
        "/files?user=U&foo=1&fromm=2017-01-01",
        "unknown query parameter 'foo'; unknown query parameter 'fromm' (did you mean 'from'?)",
    ),
    ("/files?user=U&foo", "unknown query parameter 'foo'"),  # with no value at all
    (
        "/files/USER001_a.txt?download=1",
        "unknown query parameter 'download'; GET /files/{objectKey} takes none",
    ),
    ("/download/USER001_a.txt?versionId=3", "unknown query parameter 'versionId'; GET /download/{objectKey}"),
    ("/status?verbose=true", "unknown query parameter 'verbose'; GET /status takes none"),
]


@pytest.mark.parametrize(("path", "message"), UNKNOWN, ids=[path for path, _ in UNKNOWN])
def test_an_unknown_query_parameter_is_400_naming_it_and_what_was_meant(
    api: SearchApi, path: str, message: str
) -> None:
    api.put_file("USER001_a.txt", size=1)

    response = api.get(path)

    assert response.status == 400, response.body
    assert message in response.json["message"]


NOT_INTEGERS = ["7.0", "+7", "%207", "7_0", "07.", "1e3", "0x10", "７"]


@pytest.mark.parametrize("name", ["limit", "minSize", "maxSize"])
@pytest.mark.parametrize("value", NOT_INTEGERS)
def test_integers_are_written_in_digits_only(api: SearchApi, name: str, value: str) -> None:
    response = api.get(f"{B}&{name}={value}")
    assert response.status == 400, response.body
    assert f"query parameter {name}: Input should be" in response.json["message"]
    assert "integer" in response.json["message"]


def test_integers_in_digits_still_work(api: SearchApi) -> None:
    api.put_file("USER001_a.txt", size=7)
    response = api.get(f"{B}&limit=0007&minSize=7&maxSize=7")
    assert response.status == 200, response.body
    assert [item["objectKey"] for item in response.json["items"]] == ["USER001_a.txt"]


def _response_bytes(result: dict[str, Any]) -> int:
    """The size of the handler's answer as the Lambda runtime of this interpreter's version writes it."""
    return len(json.dumps(result, ensure_ascii=RUNTIME_ESCAPES_NON_ASCII).encode("utf-8"))


def _pages(path: str, lambda_context: Any) -> Iterator[tuple[dict[str, Any], int]]:
    """Each page of `path` and the size of its whole response, following the cursors."""
    cursor = None
    for _ in range(1000):
        raw = path + (f"&cursor={quote(cursor)}" if cursor else "")
        result = handler.lambda_handler(to_rest_event("GET", raw), lambda_context)
        assert result["statusCode"] == 200, result["body"]
        page = json.loads(result["body"])
        yield page, _response_bytes(result)
        cursor = page["nextCursor"]
        if cursor is None:
            return
    raise AssertionError("paging does not end")


def _fill_long_keys(api: SearchApi, segment: str, count: int = 1000) -> set[str]:
    """`count` files whose keys are 1,024 bytes: a user prefix, then `segment` repeated, then a number."""
    keys = set()
    with api.table.batch_writer() as batch:
        for n in range(count):
            prefix, suffix = "USER001/", f"-{n:04d}"
            room = 1024 - len(prefix) - len(suffix)
            body = segment * (room // len(segment.encode("utf-8")))
            body += "x" * (room - len(body.encode("utf-8")))
            key = prefix + body + suffix
            assert len(key.encode("utf-8")) == 1024
            keys.add(key)
            batch.put_item(
                Item={
                    schema.OBJECT_KEY: key,
                    schema.BUCKET_NAME: BUCKET,
                    schema.FILE_ID: key.split("/", 1)[1],
                    schema.SIZE: n % 10,  # many equal sort keys: the cut must fall between them
                    schema.UPLOAD_USER: "USER001",
                    schema.UPLOAD_DATE: f"2017-08-20T09:15:{n % 60:02d}.000Z",
                    schema.SEQUENCER: f"{n:018X}",
                    schema.ORDER_KEY: f"{n:018X}",
                }
            )
    return keys


def test_a_page_of_1000_long_non_ascii_keys_stays_under_lambdas_limit(
    api: SearchApi, lambda_context: Any, record_property: Any
) -> None:
    # Two bytes of UTF-8 each: escaped as \u00e9 they take six (seven inside the response), 7 MB a page.
    keys = _fill_long_keys(api, "éÅßΩЖ")

    seen: list[str] = []
    largest = 0
    for page, size in _pages(f"{B}&limit=1000", lambda_context):
        largest = max(largest, size)
        seen.extend(item["objectKey"] for item in page["items"])

    record_property("largest_response_bytes", largest)
    assert largest < RESPONSE_LIMIT_BYTES
    assert sorted(seen) == sorted(keys)  # every item exactly once


def test_a_non_ascii_body_is_utf8_not_escapes(api: SearchApi) -> None:
    api.put_file("USER001/日本.txt")
    response = api.get("/files/" + quote("USER001/日本.txt"))
    assert '"objectKey":"USER001/日本.txt"' in response.body
    assert response.headers["Content-Type"] == "application/json"  # JSON is UTF-8 by definition


@both_engines
@pytest.mark.parametrize(
    "path", [f"{B}&limit=1000", f"{B}&limit=1000&order=asc", "/files?user=USER001&limit=1000"]
)
def test_a_page_that_would_pass_the_limit_ends_early_and_paging_still_returns_every_item_once(
    api: SearchApi, lambda_context: Any, path: str
) -> None:
    # Quotes and backslashes take four bytes each once the body is a JSON string inside the response,
    # whatever the runtime: 1,000 such items are about 8 MB.
    keys = _fill_long_keys(api, '"\\')

    pages = list(_pages(path, lambda_context))

    first, _ = pages[0]
    assert 0 < len(first["items"]) < 1000
    assert first["nextCursor"] is not None
    assert all(size < RESPONSE_LIMIT_BYTES for _, size in pages)
    seen = [item["objectKey"] for page, _ in pages for item in page["items"]]
    assert len(seen) == len(keys) == len(set(seen))
    assert set(seen) == keys


DOT_KEYS = ["a/../b", "./x", "a/./b", "a/..", "../../etc/passwd", "USER001/.../x"]


@pytest.fixture
def moto_server(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto over HTTP, sharing the in-process backends: presigned URLs a real client can fetch."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    composition.file_search.cache_clear()
    try:
        yield endpoint
    finally:
        composition.file_search.cache_clear()
        server.stop()


@pytest.mark.parametrize("key", DOT_KEYS)
def test_a_key_with_dot_segments_downloads_its_own_bytes(api: SearchApi, moto_server: str, key: str) -> None:
    # Every key a dot-segment-collapsing client could land on instead holds other bytes.
    for decoy in ("b", "x", "a/b", "a", "", "etc/passwd", "USER001/x"):
        if decoy:
            api.s3.put_object(Bucket=BUCKET, Key=decoy, Body=b"WRONG " + decoy.encode())
    api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"RIGHT " + key.encode())
    api.put_file(key)

    response = api.get("/download/" + quote(key, safe=""))

    assert response.status == 302, response.body
    location = response.headers["Location"]
    assert location.startswith(moto_server)
    with urllib.request.urlopen(location, timeout=10) as fetched:  # noqa: S310 (http to moto)
        assert fetched.read() == b"RIGHT " + key.encode()
    assert requests.get(location, timeout=10).content == b"RIGHT " + key.encode()


def _emf_blobs(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/files/USER001_a.txt", "key"),
        ("/files?user=USER001", "user"),
        ("/files?user=USER001&date=2017-08-20", "user+date"),
        ("/files?user=USER001&from=2017-08-20", "user+range"),
        ("/files?user=USER001&to=2017-08-21", "user+range"),
        (B, "bucket"),
        (f"{B}&minSize=1", "bucket+size"),
        ("/files?user=USER001&minSize=1", "user+size"),
        ("/files?user=USER001&date=2017-08-20&maxSize=20", "user+date+size"),
        ("/files?user=USER001&from=2017-08-20&minSize=1", "user+range+size"),
        (f"{B}&date=2017-08-20", "bucket+time"),
        (f"{B}&to=2017-08-21&minSize=1", "bucket+size+time"),
        ("/download/USER001_a.txt", "download"),
        ("/status", "status"),
    ],
)
def test_each_request_emits_its_metrics_by_query_shape(
    api: SearchApi, capsys: pytest.CaptureFixture[str], path: str, shape: str
) -> None:
    api.put_file("USER001_a.txt", size=12)
    api.put_file("USER001_b.txt", size=13)
    capsys.readouterr()

    assert api.get(path).status in (200, 302)

    blobs = _emf_blobs(capsys.readouterr().out)
    assert len(blobs) == 1
    blob = blobs[0]
    directive = blob["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "S3FileSearchTest"  # POWERTOOLS_METRICS_NAMESPACE of the tests
    assert directive["Dimensions"] == [["QueryShape", "service"]]
    assert blob["QueryShape"] == shape
    names = {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}
    assert names["Requests"] == "Count"
    assert names["Latency"] == "Milliseconds"
    assert blob["Requests"] == [1.0]
    assert blob["Latency"][0] > 0
    if path.startswith("/files?"):
        assert names["ItemsRead"] == names["ItemsReturned"] == names["Queries"] == "Count"
        assert blob["ItemsReturned"] == [2.0]
        assert blob["ItemsRead"] == [2.0]
        assert blob["Queries"] == [1.0]


def test_a_refused_request_still_counts_under_its_shape(
    api: SearchApi, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert api.get(f"{B}&minSize=5&maxSize=1").status == 400
    assert api.get("/nowhere").status == 404
    blobs = _emf_blobs(capsys.readouterr().out)
    assert [(blob["QueryShape"], blob["Requests"]) for blob in blobs] == [("bucket+size", [1.0])]
    assert "ItemsRead" not in blobs[0]
