"""Exactly one DynamoDB write per ordinary S3 record (a PutItem, or an UpdateItem for the permanent delete
of a version the index does not show) and not a single read, from DynamoDB or S3; the lookup only where
a version the index shows (or no position yet) is deleted for good. Counted with botocore's event hooks
on the handler's clients: `before-call` fires once per API call, `before-send` once per HTTP attempt."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3

from file_index.rules import upload_statistics
from tests.integration.indexer.conftest import BUCKET, Indexer
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
    """DynamoDB and S3 calls of the handler, in one counter (S3's operations have names of their own)."""
    counter = CallCounter()
    for client, service in ((indexer.runtime.dynamodb, "dynamodb"), (indexer.runtime.s3, "s3")):
        client.meta.events.register(f"before-call.{service}", counter.on_call)
        client.meta.events.register(f"before-send.{service}", counter.on_send)
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
        s3_record("ObjectCreated:Put", "U3_v.txt", sequencer="0B", version_id="v2"),
        s3_record("LifecycleExpiration:Delete", "U3_v.txt", sequencer="0C", version_id="v1"),  # noncurrent
        s3_record("ObjectRemoved:Delete", "U3_v.txt", sequencer="0D", version_id="null"),  # noncurrent null
        s3_record("ObjectCreated:Put", "U3_v.txt", sequencer="0A", version_id="v1"),  # deleted: stays out
        s3_record("ObjectRemoved:DeleteMarkerCreated", "U3_v.txt", sequencer="0E", version_id="m1"),
        s3_record("ObjectCreated:Put", "U3_v.txt", sequencer="0F", version_id="v3"),  # drops the bookkeeping
        # The rare case, last: a version delete with no entry yet looks the object up.
        s3_record("ObjectRemoved:Delete", "U4_w.txt", sequencer="0A", version_id="v9"),
    ]
    version_deletes = 3
    queue = SqsQueue()
    queue.send(*(notification(record) for record in records))
    queue.send(notification(*records[:3]), TEST_EVENT_BODY, "not json")

    queue.deliver(indexer, indexer.context, batches=(len(records) + 3,))

    # The last record is the one rare case: its own first try, the hide, the HEAD (404: nothing to write).
    ordinary = len(records) - 1 + 3
    assert dict(counter.calls) == {
        "PutItem": ordinary - version_deletes,
        "UpdateItem": version_deletes + 2,
        "HeadObject": 1,
    }
    assert counter.attempts == ordinary + 3


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
    # And one UpdateItem per message holding a sampled upload (`file_index.rules.upload_statistics`): 2 here.
    sampled = sum(
        any(upload_statistics.sampled(f"U{m}_f{r}.txt") is not None for r in range(10)) for m in range(10)
    )
    assert sampled == 2
    assert dict(counter.calls) == {"PutItem": 100, "UpdateItem": sampled}


def test_the_delete_of_the_indexed_version_adds_one_lookup_and_one_write(indexer: Indexer) -> None:
    s3 = boto3.client("s3")
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=BUCKET, Key="U5_y.txt", Body=b"1")["VersionId"]
    v2 = s3.put_object(Bucket=BUCKET, Key="U5_y.txt", Body=b"22")["VersionId"]
    s3.delete_object(Bucket=BUCKET, Key="U5_y.txt", VersionId=v2)
    queue = SqsQueue()
    queue.send(
        notification(s3_record("ObjectCreated:Put", "U5_y.txt", sequencer="01", version_id=v1, size=1)),
        notification(s3_record("ObjectCreated:Put", "U5_y.txt", sequencer="02", version_id=v2, size=2)),
    )
    queue.deliver(indexer, indexer.context)
    counter = count_calls(indexer)
    queue.send(notification(s3_record("ObjectRemoved:Delete", "U5_y.txt", sequencer="03", version_id=v2)))
    queue.deliver(indexer, indexer.context)
    # The first try (case 1: another version?), the hide, the HEAD, the write of v1.
    assert dict(counter.calls) == {"UpdateItem": 3, "HeadObject": 1}
    counter.calls.clear()
    # Its duplicate is stale at once.
    queue.send(notification(s3_record("ObjectRemoved:Delete", "U5_y.txt", sequencer="03", version_id=v2)))
    queue.deliver(indexer, indexer.context)
    assert dict(counter.calls) == {"UpdateItem": 1}
