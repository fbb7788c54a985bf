"""Exactly one DynamoDB write per S3 record (a PutItem, or an UpdateItem for a permanent delete of one
version) and not a single read, counted with botocore's event hooks
on the handler's client: `before-call` fires once per API call, `before-send` once per HTTP attempt."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import TEST_EVENT_BODY, SqsQueue, notification, s3_record


class CallCounter:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.attempts = 0

    def on_call(self, event_name: str, **_: Any) -> None:
        self.calls[event_name.rsplit(".", 1)[-1]] += 1

    def on_send(self, **_: Any) -> None:
        self.attempts += 1


def count_calls(indexer: Indexer) -> CallCounter:
    counter = CallCounter()
    events = indexer.runtime.dynamodb.meta.events
    events.register("before-call.dynamodb", counter.on_call)
    events.register("before-send.dynamodb", counter.on_send)
    return counter


def test_one_write_and_no_read_per_event(indexer: Indexer) -> None:
    counter = count_calls(indexer)
    records = [
        s3_record("ObjectCreated:Put", "U1_a.txt", sequencer="0A"),
        s3_record("ObjectCreated:Put", "U1_a.txt", sequencer="0B"),  # overwrite
        s3_record("ObjectCreated:Put", "U1_a.txt", sequencer="0A"),  # older: stale, still one write
        s3_record("ObjectCreated:Put", "U1_a.txt", sequencer="0B"),  # duplicate
        s3_record("ObjectRemoved:Delete", "U2/b c.txt", sequencer="0C"),  # delete before its create
        s3_record("ObjectCreated:Put", "U2/b c.txt", sequencer="0B"),
        s3_record("ObjectRemoved:Delete", "U1_a.txt", sequencer="0D", version_id="v9"),  # another version
        s3_record("ObjectCreated:Copy", "no-user.txt", event_time="2024-05-01T10:00:00.000Z"),  # no sequencer
        s3_record("ObjectCreated:Put", "U3_v.txt", sequencer="0A", version_id="v1"),
        s3_record("ObjectRemoved:Delete", "U3_v.txt", sequencer="0C", version_id="v1"),  # the indexed version
        s3_record("LifecycleExpiration:Delete", "U3_w.txt", sequencer="0C", version_id="v1"),  # no item yet
        s3_record("ObjectRemoved:DeleteMarkerCreated", "U3_v.txt", sequencer="0D", version_id="m1"),
    ]
    version_deletes = 3
    queue = SqsQueue()
    queue.send(*(notification(record) for record in records))
    queue.send(notification(*records[:3]), TEST_EVENT_BODY, "not json")

    queue.deliver(indexer, indexer.context)

    writes = len(records) + 3
    assert dict(counter.calls) == {"PutItem": writes - version_deletes, "UpdateItem": version_deletes}
    assert counter.attempts == writes


def test_a_batch_of_100_records_is_100_writes(indexer: Indexer) -> None:
    counter = count_calls(indexer)
    queue = SqsQueue()
    queue.send(
        *(
            notification(
                *(s3_record("ObjectCreated:Put", f"U{m}_f{r}.txt", sequencer=f"{m:04X}") for r in range(10))
            )
            for m in range(10)
        )
    )
    queue.deliver(indexer, indexer.context)
    assert dict(counter.calls) == {"PutItem": 100}


def test_a_version_delete_is_one_update_whatever_it_finds(indexer: Indexer) -> None:
    counter = count_calls(indexer)
    deletes = [
        s3_record("ObjectRemoved:Delete", "U4_x.txt", sequencer=f"0{n}", version_id=version)
        for n, version in enumerate(["v1", "v2", "v1", "null"], start=1)  # absent, tombstone, dup, null
    ]
    queue = SqsQueue()
    queue.send(*(notification(record) for record in deletes))
    queue.deliver(indexer, indexer.context, batches=(1,))
    assert dict(counter.calls) == {"UpdateItem": len(deletes)}
    assert counter.attempts == len(deletes)
