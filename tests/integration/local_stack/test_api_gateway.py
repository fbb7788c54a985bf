"""The API Gateway stand-in on its own: what it answers before, and instead of, the function.

The function here is a plain callable returning what the test needs (the stand-in, not the search
handler, is under test); the black-box tests through `serve` use the real handler.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.api_gateway import LAMBDA_RESPONSE_LIMIT_BYTES, ApiGatewayServer, response_payload_bytes

Response = dict[str, Any]


class Function:
    """Answers `response` and keeps the events it was invoked with."""

    def __init__(self) -> None:
        self.response: Response = {"statusCode": 200, "headers": {}, "body": "{}"}
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], _context: Any) -> Response:
        self.events.append(event)
        return self.response


@pytest.fixture
def function() -> Function:
    return Function()


@pytest.fixture
def server(function: Function) -> Iterator[ApiGatewayServer]:
    api = ApiGatewayServer(function).start()
    yield api
    api.close()


def call(server: ApiGatewayServer, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=30)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def body_of(size: int) -> str:
    """A JSON body whose payload, as the runtime serializes the response, is about `size` bytes."""
    return json.dumps({"items": ["x" * 1000] * (size // 1006)})


def test_a_response_over_lambdas_payload_limit_is_api_gateways_502(server, function):
    function.response = {"statusCode": 200, "body": body_of(LAMBDA_RESPONSE_LIMIT_BYTES + 10_000)}
    assert response_payload_bytes(function.response) > LAMBDA_RESPONSE_LIMIT_BYTES

    status, headers, body = call(server, "GET", "/files?user=U")

    assert status == 502
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"message": "Internal server error"}


def test_a_response_within_the_limit_is_passed_through(server, function):
    function.response = {"statusCode": 200, "body": body_of(LAMBDA_RESPONSE_LIMIT_BYTES - 20_000)}
    assert response_payload_bytes(function.response) <= LAMBDA_RESPONSE_LIMIT_BYTES

    status, _headers, body = call(server, "GET", "/files?user=U")

    assert status == 200
    assert body == function.response["body"].encode()


def test_a_refused_method_never_reaches_the_function(server, function):
    status, headers, _body = call(server, "PATCH", "/files/a%2Fb")

    assert (status, headers["allow"]) == (405, "GET")
    assert function.events == []


def test_head_is_refused_without_a_body(server, function):
    status, headers, body = call(server, "HEAD", "/status")

    assert (status, headers["allow"], body) == (405, "GET", b"")
    assert int(headers["content-length"]) > 0  # the length of the JSON a GET-like answer would carry


def test_a_bad_header_line_is_answered_in_json(server):
    host, port = server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=30) as connection:
        connection.sendall(b"GET /files HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 431") or head.startswith(b"HTTP/1.1 431"), head
    assert b"Content-Type: application/json" in head
    assert "message" in json.loads(body)
