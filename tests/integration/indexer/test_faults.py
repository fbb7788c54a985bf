"""Throttling and 5xx from DynamoDB: the SDK retries, then only the affected message fails; redelivered
as SQS would, the index still converges and nothing is lost.

Faults are injected on the handler's own client at `before-send`, i.e. in place of the HTTP response, so
botocore's standard retry mode sees them exactly as it would see DynamoDB's. Only the back-off sleep is
patched out (the clock is the one thing no emulator gives).
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.retries import standard

from file_index.rules import schema
from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import (
    SqsQueue,
    is_live,
    notification,
    query_keys,
    read_items,
    s3_record,
)

FAULTS = (
    (400, "ThrottlingException"),
    (400, "ProvisionedThroughputExceededException"),
    (500, "InternalServerError"),
)


class _RawBody:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


class FaultInjector:
    """Fails a share of write attempts (or those of chosen keys) with DynamoDB's own error bodies."""

    def __init__(self, share: float, seed: int, only_keys: set[str] | None = None) -> None:
        self.share = share
        self.only_keys = only_keys
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.attempts = 0
        self.injected: Counter[str] = Counter()

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        with self.lock:
            self.attempts += 1
            if self.only_keys is not None:
                body = json.loads(request.body)
                key = (body.get("Item") or body["Key"])[schema.OBJECT_KEY]["S"]
                fail = key in self.only_keys
            else:
                fail = self.random.random() < self.share
            if not fail:
                return None
            status, code = self.random.choice(FAULTS)
            self.injected[code] += 1
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected"})
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "injected"}
        return AWSResponse(request.url, status, headers, _RawBody(body.encode()))


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0)


def install(indexer: Indexer, injector: FaultInjector) -> None:
    # register_first: ahead of moto's own before-send stub, which would otherwise answer first.
    for operation in ("PutItem", "UpdateItem"):
        indexer.runtime.dynamodb.meta.events.register_first(f"before-send.dynamodb.{operation}", injector)


@pytest.mark.usefixtures("no_backoff")
def test_throttled_writes_converge_after_redelivery(
    moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DYNAMODB_MAX_ATTEMPTS", "3")
    injector = FaultInjector(share=0.5, seed=7)
    install(moto_indexer, injector)

    rng = random.Random(11)
    keys = [f"U{n % 3}_file-{n}.txt" for n in range(40)]
    expected: dict[str, int | None] = {}
    records = []
    for position in range(120):
        key = rng.choice(keys)
        sequencer = f"{position + 1:08X}"
        if rng.random() < 0.3:
            records.append(s3_record("ObjectRemoved:Delete", key, sequencer=sequencer))
            expected[key] = None
        else:
            size = rng.randrange(1, 10**6)
            records.append(s3_record("ObjectCreated:Put", key, sequencer=sequencer, size=size))
            expected[key] = size
    rng.shuffle(records)
    queue = SqsQueue()
    queue.send(*(notification(*records[i : i + 2]) for i in range(0, len(records), 2)))

    # Half of all writes fail: once the SDK's retry quota (per client) runs dry, a write is tried once, and
    # a message of two records may need dozens of deliveries. Convergence is the claim, not its speed.
    rounds = queue.drain(moto_indexer, moto_indexer.context, max_rounds=300)

    assert injector.attempts > len(records), "the SDK retried"
    assert queue.failed_deliveries > 0, "some messages outlasted the SDK's retries and were redelivered"
    assert rounds > 1
    items = read_items(moto_indexer.client, moto_indexer.table_name, keys)
    for key in keys:
        if expected.get(key) is None:
            assert not is_live(items[key]), key
        else:
            assert is_live(items[key]), key
            assert items[key]["size"] == expected[key]  # type: ignore[index]
    live = {key for key, size in expected.items() if size is not None}
    assert (
        query_keys(moto_indexer.client, moto_indexer.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a")
        == live
    )


@pytest.mark.usefixtures("no_backoff")
def test_only_the_message_with_a_failing_write_fails(
    moto_indexer: Indexer, caplog: pytest.LogCaptureFixture
) -> None:
    install(moto_indexer, FaultInjector(share=0.0, seed=1, only_keys={"U1_hot.txt"}))
    queue = SqsQueue()
    queue.send(
        notification(s3_record("ObjectCreated:Put", "U1_cold.txt", sequencer="0A")),
        notification(
            s3_record("ObjectCreated:Put", "U1_warm.txt", sequencer="0A"),
            s3_record("ObjectCreated:Put", "U1_hot.txt", sequencer="0A"),
        ),
        notification(s3_record("ObjectCreated:Put", "U1_other.txt", sequencer="0A")),
    )
    ids = [message.message_id for message in queue.pending]

    failed = queue.deliver(moto_indexer, moto_indexer.context)

    assert failed == [ids[1]]
    items = read_items(
        moto_indexer.client, moto_indexer.table_name, ["U1_cold.txt", "U1_warm.txt", "U1_other.txt"]
    )
    assert all(is_live(item) for item in items.values())
    errors = [record for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1
    assert errors[0].messageId == ids[1]  # type: ignore[attr-defined]
    assert errors[0].objectKey == "U1_hot.txt"  # type: ignore[attr-defined]
