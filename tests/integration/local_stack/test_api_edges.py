"""The edges a real client meets, through `python -m local_stack.serve` as a black box.

Misspelled query parameters, a method the API does not take, a URL longer than the server reads, and a
page of long non-ASCII keys: every answer is JSON with a `message`, and no answer exceeds what Lambda may
return.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import boto3
import pytest

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("api-edges")

# Lambda refuses a response payload over 6 MB, and API Gateway answers a 502 instead.
LAMBDA_RESPONSE_LIMIT_BYTES = 6 * 1024 * 1024
PAGE_LIMIT = 1000
LONG_KEY_USER = "USERLONG"


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, Any]]:
    """One `serve` process for the module."""
    from tests.integration.local_stack.conftest import serving

    with serving() as ready:
        yield ready


def request(stack: dict[str, Any], method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request (any method, any length), answered status, headers and body bytes."""
    api = urlsplit(stack["apiUrl"])
    connection = http.client.HTTPConnection(api.hostname or "127.0.0.1", api.port, timeout=60)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def json_message(headers: dict[str, str], body: bytes) -> str:
    assert headers.get("content-type", "").startswith("application/json"), headers
    message = json.loads(body)["message"]
    assert isinstance(message, str)
    return message


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"bucket": "fileupload.a", "minsize": "10"}, "minsize"),
        ({"user": "USER001", "Limit": "5"}, "Limit"),
        ({"user": "USER001", "foo": "1"}, "foo"),
    ],
)
def test_a_misspelled_parameter_is_a_400_that_names_it(stack, query, named):
    status, headers, body = request(stack, "GET", f"/files?{urlencode(query)}")

    assert status == 400
    assert repr(named) in json_message(headers, body)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PATCH", "/files"),
        ("PATCH", "/files/USER001_FILE001.txt"),
        ("POST", "/files?user=USER001"),
        ("DELETE", "/download/USER001_FILE001.txt"),
        ("PUT", "/status"),
        ("OPTIONS", "/openapi.json"),
        ("TRACE", "/files"),
        ("CONNECT", "/status"),
        ("BREW", "/files"),
    ],
)
def test_a_method_the_api_does_not_take_is_a_json_405_with_allow(stack, method, path):
    status, headers, body = request(stack, method, path)

    assert status == 405
    assert headers["allow"] == "GET"
    assert method in json_message(headers, body)


def test_a_method_http_does_not_know_is_a_json_501_off_the_apis_paths(stack):
    status, headers, body = request(stack, "BREW", "/nowhere")

    assert status == 501
    assert "BREW" in json_message(headers, body)


def test_any_method_on_an_unknown_path_is_the_apis_json_404(stack):
    status, headers, body = request(stack, "PATCH", "/nowhere")

    assert status == 404
    json_message(headers, body)


def test_a_70_kb_url_is_answered_in_json(stack):
    path = f"/files?{urlencode({'user': 'USER001', 'cursor': 'x' * 70_000})}"

    status, headers, body = request(stack, "GET", path)

    assert status in (400, 414)
    assert json_message(headers, body)
    # The server still answers afterwards.
    assert request(stack, "GET", "/files?user=USER001")[0] == 200


def long_non_ascii_key(index: int) -> str:
    """1,021 UTF-8 bytes (S3 allows 1,024): four-byte characters, which JSON's ASCII escaping triples."""
    return f"{LONG_KEY_USER}/{index:04d}" + "".join(chr(0x1F600 + (index + i) % 80) for i in range(252))


def wait_until_queue_drained(stack: dict[str, Any], timeout: float = 120) -> None:
    """Until the event queue has held no message, visible or in flight, twice in a row."""
    sqs = boto3.client("sqs", endpoint_url=stack["awsEndpoint"], region_name=stack["region"])
    deadline = time.monotonic() + timeout
    empty = 0
    while empty < 2:
        assert time.monotonic() < deadline, f"the queue did not drain within {timeout:.0f} s"
        counts = sqs.get_queue_attributes(
            QueueUrl=stack["queueUrl"],
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        empty = empty + 1 if not any(int(value) for value in counts.values()) else 0
        time.sleep(0.2)


def all_pages(stack: dict[str, Any], query: dict[str, str]) -> tuple[list[str], int]:
    """Every key a list answers, following the cursor, and the largest page's body in bytes."""
    found: list[str] = []
    largest = 0
    cursor: str | None = None
    while True:
        page_query = {**query, **({"cursor": cursor} if cursor else {})}
        status, _headers, body = request(stack, "GET", f"/files?{urlencode(page_query)}")
        assert status == 200, body[:500]
        largest = max(largest, len(body))
        page = json.loads(body)
        found.extend(item["objectKey"] for item in page["items"])
        cursor = page["nextCursor"]
        if not cursor:
            return found, largest


def test_a_page_of_a_thousand_long_non_ascii_keys_stays_under_lambdas_limit(stack):
    s3 = boto3.client("s3", endpoint_url=stack["awsEndpoint"], region_name=stack["region"])
    keys = [long_non_ascii_key(index) for index in range(PAGE_LIMIT)]
    assert max(len(key.encode()) for key in keys) <= 1024
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda key: s3.put_object(Bucket=stack["bucket"], Key=key, Body=b"x"), keys))

    wait_until_queue_drained(stack)

    found, largest = all_pages(stack, {"user": LONG_KEY_USER, "limit": str(PAGE_LIMIT)})
    assert largest < LAMBDA_RESPONSE_LIMIT_BYTES, f"a page of {largest:,} bytes"
    assert sorted(found) == sorted(keys), "every file exactly once across the pages"
    # The keys are served as UTF-8 text, not as \\u escapes.
    assert keys[0].encode() in request(stack, "GET", f"/files/{quote(keys[0], safe='')}")[2]


@pytest.mark.parametrize(
    "content_length", [":", "-1", "1e3", "²"], ids=["colon", "negative", "float", "superscript"]
)
def test_a_content_length_that_is_not_a_count_is_a_400(stack, content_length):
    status, headers, body = raw_request(stack, f"Content-Length: {content_length}\r\n".encode())

    assert status == 400
    assert json_message(headers, body) == "Bad Request"
    assert request(stack, "GET", "/files?user=USER001")[0] == 200


def test_a_body_that_never_arrives_is_a_400(stack):
    # Content-Length says 1 byte and none is sent: refused after BODY_TIMEOUT_S, not waited for forever.
    status, headers, body = raw_request(stack, b"Content-Length: 1\r\n")

    assert status == 400
    assert json_message(headers, body) == "Bad Request"


def raw_request(stack: dict[str, Any], header: bytes) -> tuple[int, dict[str, str], bytes]:
    """GET /files with `header` (a raw header line, sent as given), answered status, headers and body."""
    api = urlsplit(stack["apiUrl"])
    with socket.create_connection((api.hostname or "127.0.0.1", api.port), timeout=60) as raw:
        raw.sendall(b"GET /files?user=USER001 HTTP/1.1\r\nHost: local\r\n" + header + b"\r\n")
        response = http.client.HTTPResponse(raw)
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_requests_at_once_are_each_answered_for_themselves(stack):
    """Lambda runs one invocation at a time in an execution environment, and the search function relies on
    it (Powertools keeps the current event on its router class): answers to requests sent at once must not
    mix. Each request misspells a parameter of its own, and its 400 must name that one."""

    def misspelled(index: int) -> tuple[str, str]:
        name = f"unknown{index}"
        status, headers, body = request(stack, "GET", f"/files?{urlencode({'user': 'USER001', name: '1'})}")
        assert status == 400, body
        return name, json_message(headers, body)

    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(misspelled, range(400)))

    assert [name for name, message in answers if repr(name) not in message] == []
