"""botocore event hooks the benchmarks measure with: a call log, injected latency, an instant DynamoDB.

The code under measurement builds its own boto3 clients (some at cold start, some through Powertools), so
the hooks cannot be registered on a client we hold. `install()` wraps botocore's `Session.create_client`
once; every client created afterwards carries three handlers that consult this module's state:

- `before-call.*`: counts the call (per service and operation) and, for DynamoDB, sleeps the injected
  latency, once per API call as a network round trip would cost;
- `after-call.*`: records errors (e.g. `ConditionalCheckFailedException`) and DynamoDB's `Count` and
  `ScannedCount`, so a search's read amplification is what DynamoDB reports, not what the handler says;
- `before-send.dynamodb`: when the instant DynamoDB is on, answers 200 with a canned body without sending.
  Serialising, signing and parsing still run, so the CPU cost of a call stays in the measurement.

moto's in-process mock also answers on `before-send`; the instant DynamoDB is for runs without moto.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.session
from botocore.awsrequest import AWSResponse

_lock = threading.Lock()
_logs: list[CallLog] = []
_latency_seconds = 0.0
_instant_dynamodb = False
_original_create_client: Any = None


@dataclass
class CallLog:
    """What the clients did while the log was open; safe to update from the handler's worker threads."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    items_scanned: int = 0
    items_returned: int = 0

    def count(self, service: str, operation: str | None = None) -> int:
        """Calls to a service, or to one of its operations."""
        return sum(n for (svc, op), n in self.calls.items() if svc == service and operation in (None, op))

    def by_operation(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in sorted(self.calls.items()) if svc == service}


def install() -> None:
    """Attach the hooks to every botocore client created from now on (idempotent)."""
    global _original_create_client
    with _lock:
        if _original_create_client is not None:
            return
        original = _original_create_client = botocore.session.Session.create_client

        def create_client(self: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
            client = original(self, *args, **kwargs)
            events = client.meta.events
            events.register("before-call", _before_call)
            events.register("after-call", _after_call)
            events.register("before-send.dynamodb", _before_send_dynamodb)
            return client

        botocore.session.Session.create_client = create_client


def uninstall() -> None:
    """Give botocore its own client factory back; clients created meanwhile keep their (idle) hooks."""
    global _original_create_client
    with _lock:
        if _original_create_client is not None:
            botocore.session.Session.create_client = _original_create_client
            _original_create_client = None


@contextmanager
def recording() -> Iterator[CallLog]:
    """Log every call made by instrumented clients while the block runs."""
    install()
    log = CallLog()
    with _lock:
        _logs.append(log)
    try:
        yield log
    finally:
        with _lock:
            _logs.remove(log)


@contextmanager
def dynamodb_latency(seconds: float) -> Iterator[None]:
    """Every DynamoDB call takes at least `seconds` longer, like a round trip to a remote endpoint."""
    global _latency_seconds
    install()
    previous, _latency_seconds = _latency_seconds, seconds
    try:
        yield
    finally:
        _latency_seconds = previous


@contextmanager
def instant_dynamodb() -> Iterator[None]:
    """DynamoDB answers every call at once with success and no data (no network, no emulator)."""
    global _instant_dynamodb
    install()
    previous, _instant_dynamodb = _instant_dynamodb, True
    try:
        yield
    finally:
        _instant_dynamodb = previous


def _service_and_operation(model: Any) -> tuple[str, str]:
    return model.service_model.service_id.hyphenize(), model.name


def _before_call(model: Any, **_: Any) -> None:
    service, operation = _service_and_operation(model)
    if _logs:
        with _lock:
            for log in _logs:
                log.calls[service, operation] += 1
    if service == "dynamodb" and _latency_seconds > 0:
        time.sleep(_latency_seconds)


def _after_call(model: Any, parsed: dict[str, Any], **_: Any) -> None:
    if not _logs:
        return
    service, _operation = _service_and_operation(model)
    error = (parsed.get("Error") or {}).get("Code")
    with _lock:
        for log in _logs:
            if error:
                log.errors[error] += 1
            if service == "dynamodb" and "ScannedCount" in parsed:
                log.items_scanned += int(parsed["ScannedCount"])
                log.items_returned += int(parsed.get("Count", 0))


class _CannedBody:
    """The `raw` of an AWSResponse: botocore reads the body through `stream()`."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


# Success with no data, in the shape each operation's parser expects.
_CANNED_BODIES: dict[str, dict[str, Any]] = {
    "Query": {"Items": [], "Count": 0, "ScannedCount": 0},
    "Scan": {"Items": [], "Count": 0, "ScannedCount": 0},
    "BatchWriteItem": {"UnprocessedItems": {}},
    "BatchGetItem": {"Responses": {}, "UnprocessedKeys": {}},
}


def _before_send_dynamodb(request: Any, **_: Any) -> AWSResponse | None:
    if not _instant_dynamodb:
        return None
    target = request.headers.get("X-Amz-Target", b"")
    operation = (target.decode() if isinstance(target, bytes) else str(target)).rpartition(".")[2]
    body = json.dumps(_CANNED_BODIES.get(operation, {})).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "bench"}
    return AWSResponse(request.url, 200, headers, _CannedBody(body))
