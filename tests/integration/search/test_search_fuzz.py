"""Fuzzing the API from its own OpenAPI document: no input, valid or not, gets a 5xx.

Requests go over HTTP to the local API Gateway stand-in, so the path encoding a client really sends
(percent-escapes, raw "/", unicode) reaches the handler as API Gateway would pass it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, example, given, settings
from schemathesis.core.result import Err
from schemathesis.generation import GenerationMode

from local_stack.api_gateway import ApiGatewayServer
from search import handler
from tests.integration.search.conftest import SearchApi

EXAMPLES_PER_OPERATION = 60
# One valid request per operation besides the generated ones: valid requests that also find something
# are rare among random ones, and the positive run must show 2xx/3xx answers every time, not most times.
KNOWN_GOOD: dict[str, dict[str, Any]] = {
    "/files": {"query": {"user": "USER001"}},
    "/files/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/download/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/status": {},
    # Without a user pool (this function's environment has none) the routes of signed-in people are 404s.
    "/me/files": {},
    "/me/files/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/me/download/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/me/links/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/me/previews/{objectKey}": {"path_parameters": {"objectKey": "USER001_FILE001.txt"}},
    "/me/people": {"query": {"q": "Al"}},
    "/me/uploads": {},
    "/me/uploads/parts": {"query": {"key": "USER001/a.bin", "uploadId": "upload-1"}},
    "/me/uploads/complete": {},
    "/me/uploads/abort": {},
}


@pytest.fixture
def server(api: SearchApi) -> Iterator[ApiGatewayServer]:
    api.put_file("USER001_FILE001.txt")
    api.put_file("USER001/dir/a b+c%.txt", size=7)
    api.put_tombstone("USER001_gone.txt")
    gateway = ApiGatewayServer(handler.lambda_handler).start()
    yield gateway
    gateway.close()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_generated_request_gets_a_5xx(server: ApiGatewayServer, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_dict(json.loads(handler.openapi_json()))
    failures: list[str] = []
    statuses: Counter[int] = Counter()

    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operation = result.ok()

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: schemathesis.Case) -> None:
            response = case.call(base_url=server.url, timeout=10, allow_redirects=False)
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} {case.query}: {response.status_code}")
            assert response.status_code < 500, response.text

        if mode is GenerationMode.POSITIVE:
            check = example(case=operation.Case(**KNOWN_GOOD[operation.path]))(check)
        check()
    assert not failures
    # The requests reached the handler and were answered, not only refused by the transport.
    assert statuses[400] > 0
    assert statuses[404] > 0
    if mode is GenerationMode.POSITIVE:
        assert statuses[200] > 0
        assert statuses[302] > 0
