"""DynamoDB throttling and slow answers on the search path: the SDK retries, and if DynamoDB still refuses or
still does not answer in time, the API answers 503 with Retry-After and a JSON message, never a 500, and
logs why.

The throttling answers are injected at the HTTP layer (a botocore `before-send` hook on the handler's
clients), so the SDK's own retry logic sees them as it would see DynamoDB's; its back-off sleeps are
recorded instead of slept.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import BotoCoreError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError

from tests.integration.search.conftest import BUCKET, RawBody, SearchApi, sdk_hook

KEY = "USER001_FILE001.txt"


class DynamoDBThrottle:
    """Answers the chosen DynamoDB operations with a throttling error, the first `times` attempts or all."""

    def __init__(self) -> None:
        self.code = "ProvisionedThroughputExceededException"
        self.operations: set[str] = set()
        self.times: int | None = None  # None: every attempt
        self.attempts: Counter[str] = Counter()
        self.sleeps: list[float] = []

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation not in self.operations:
            return None
        self.attempts[operation] += 1
        if self.times is not None and self.attempts[operation] > self.times:
            return None
        body = json.dumps(
            {
                "__type": f"com.amazonaws.dynamodb.v20120810#{self.code}",
                "message": "Rate of requests exceeded",
            }
        ).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": self.code}
        return AWSResponse(request.url, 400, headers, RawBody(body))


@pytest.fixture
def throttle(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoDBThrottle]:
    api.put_file(KEY, size=12)
    injector = DynamoDBThrottle()
    # botocore sleeps between retries in its endpoint module; record the delays instead.
    monkeypatch.setattr("botocore.endpoint.time", SimpleNamespace(sleep=injector.sleeps.append))
    with sdk_hook("before-send.dynamodb", injector):
        yield injector


@pytest.mark.parametrize(
    ("path", "operation", "code"),
    [
        (f"/files/{KEY}", "GetItem", "ProvisionedThroughputExceededException"),
        (f"/download/{KEY}", "GetItem", "ThrottlingException"),
        ("/files?user=USER001", "Query", "ProvisionedThroughputExceededException"),
        (f"/files?bucket={BUCKET}&minSize=1", "Query", "ThrottlingException"),
        ("/files?user=USER001&date=2017-08-20", "Query", "RequestLimitExceeded"),
    ],
)
def test_throttling_that_outlasts_the_retries_is_503_with_retry_after(
    api: SearchApi,
    throttle: DynamoDBThrottle,
    caplog: pytest.LogCaptureFixture,
    path: str,
    operation: str,
    code: str,
) -> None:
    throttle.code = code
    throttle.operations = {operation}

    with caplog.at_level(logging.INFO):
        response = api.get(path)

    assert response.status == 503, response.body
    assert int(response.headers["Retry-After"]) >= 1
    assert response.headers["Content-Type"].startswith("application/json")
    assert set(response.json) == {"message"}
    assert response.json["message"]
    # The SDK retried, backing off between attempts, before the handler gave up.
    assert throttle.attempts[operation] > 1
    assert len(throttle.sleeps) == throttle.attempts[operation] - 1
    assert all(delay > 0 for delay in throttle.sleeps)
    throttled = [record for record in caplog.records if record.getMessage() == "throttled"]
    assert [(record.levelno, getattr(record, "code", None)) for record in throttled] == [
        (logging.WARNING, code)
    ]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("path", "operation"),
    [(f"/files/{KEY}", "GetItem"), ("/files?user=USER001", "Query"), (f"/files?bucket={BUCKET}", "Query")],
)
def test_throttling_that_the_retries_absorb_is_invisible(
    api: SearchApi, throttle: DynamoDBThrottle, path: str, operation: str
) -> None:
    throttle.operations = {operation}
    throttle.times = 2

    response = api.get(path)

    assert response.status == 200, response.body
    assert throttle.attempts[operation] == 3
    assert len(throttle.sleeps) == 2
    found = response.json if operation == "GetItem" else response.json["items"][0]
    assert found["objectKey"] == KEY


class SlowAnswers:
    """Raises the SDK's timeout (`error`) for the chosen operations of `service`, at every attempt."""

    def __init__(self, error: type[BotoCoreError]) -> None:
        self.error = error
        self.operations: set[str] = set()
        self.attempts: Counter[str] = Counter()

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation in self.operations:
            self.attempts[operation] += 1
            raise self.error(endpoint_url=request.url)


@contextlib.contextmanager
def slow(service: str, answers: SlowAnswers, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowAnswers]:
    monkeypatch.setattr("botocore.endpoint.time", SimpleNamespace(sleep=lambda _: None))
    with sdk_hook(f"before-send.{service}", answers):
        yield answers


@pytest.mark.parametrize("error", [ReadTimeoutError, ConnectTimeoutError, ConnectionClosedError])
@pytest.mark.parametrize(
    ("path", "operation"),
    [(f"/files/{KEY}", "GetItem"), ("/files?user=USER001", "Query"), (f"/download/{KEY}", "GetItem")],
)
def test_a_read_that_times_out_after_the_retries_is_503_with_retry_after(
    api: SearchApi,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: type[BotoCoreError],
    path: str,
    operation: str,
) -> None:
    api.put_file(KEY, size=12)
    with slow("dynamodb", SlowAnswers(error), monkeypatch) as answers, caplog.at_level(logging.INFO):
        answers.operations = {operation}
        response = api.get(path)

    assert response.status == 503, response.body
    assert int(response.headers["Retry-After"]) >= 1
    assert set(response.json) == {"message"}
    assert "retry" in response.json["message"]
    assert answers.attempts[operation] == 3  # every attempt the SDK makes (SdkSettings.max_attempts)
    timed_out = [record for record in caplog.records if record.getMessage() == "timed out"]
    assert [getattr(record, "error", None) for record in timed_out] == [error.__name__]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_an_error_that_is_no_throttle_or_timeout_is_still_a_500(
    api: SearchApi, throttle: DynamoDBThrottle, caplog: pytest.LogCaptureFixture
) -> None:
    throttle.code = "AccessDeniedException"
    throttle.operations = {"GetItem"}

    response = api.get(f"/files/{KEY}")

    assert response.status == 500
    assert response.json == {"message": "internal error"}
    assert "Retry-After" not in response.headers
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == [
        "AWS call failed"
    ]
