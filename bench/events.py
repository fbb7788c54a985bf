"""S3 event streams as S3 and SQS deliver them: duplicated, out of order, keys URL-encoded.

`event_stream` builds the history of a set of keys (creates, overwrites, deletes, re-creates), each event
with a sequencer that grows per key as S3's do, then delivers it the way S3 + SQS may: some events twice,
and events shuffled within a window, so a delete can arrive before the create it follows. `final_state`
is the ground truth both indexers must converge to: per key, the event with the greatest sequencer.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus

from file_index.rules.objects import iso_utc_millis

REGION = "us-east-1"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:123456789012:file-search-events"
_EPOCH = datetime(2017, 8, 20, 9, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class S3Event:
    """One S3 event notification record; `key` is the decoded key, encoded only when serialised."""

    event_name: str  # e.g. "ObjectCreated:Put", "ObjectRemoved:Delete"
    bucket: str
    key: str
    size: int
    sequencer: str
    event_time: datetime

    @property
    def is_create(self) -> bool:
        return self.event_name.startswith("ObjectCreated:")

    def record(self) -> dict[str, Any]:
        """The record as S3 writes it into the notification (keys `quote_plus`-encoded)."""
        obj: dict[str, Any] = {"key": quote_plus(self.key, safe="/"), "sequencer": self.sequencer}
        if self.is_create:
            etag = hashlib.md5(f"{self.key}{self.sequencer}".encode(), usedforsecurity=False).hexdigest()
            obj |= {"size": self.size, "eTag": etag}
        return {
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "awsRegion": REGION,
            "eventTime": iso_utc_millis(self.event_time),
            "eventName": self.event_name,
            "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
            "requestParameters": {"sourceIPAddress": "203.0.113.10"},
            "responseElements": {"x-amz-request-id": "EXAMPLE123456789"},
            "s3": {
                "s3SchemaVersion": "1.0",
                "configurationId": "file-search",
                "bucket": {"name": self.bucket, "arn": f"arn:aws:s3:::{self.bucket}"},
                "object": obj,
            },
        }

    def message_body(self) -> str:
        """The SQS message body S3 sends: one record per message."""
        return json.dumps({"Records": [self.record()]})


def sqs_record(body: str, message_id: str | None = None) -> dict[str, Any]:
    """One record of the SQS event Lambda's event source mapping hands the indexer."""
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": "bench-receipt-handle",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1503220502113",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1503220502120",
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": REGION,
    }


def sqs_event(events: Iterable[S3Event]) -> dict[str, Any]:
    """An SQS batch event with one message per S3 event."""
    return {"Records": [sqs_record(event.message_body()) for event in events]}


def batches(events: Sequence[S3Event], size: int) -> list[list[S3Event]]:
    return [list(events[i : i + size]) for i in range(0, len(events), size)]


def object_key(user: int, file: int) -> str:
    """Keys in both placements the default key pattern accepts, some needing URL-decoding."""
    if file % 3 == 0:
        return f"USER{user:03d}/report {file:05d}.pdf"
    return f"USER{user:03d}_FILE{file:05d}.txt"


def _sequencer(value: int, rng: random.Random) -> str:
    # S3 sequencers are hex strings compared after right-padding with zeros; dropping trailing zeros from
    # some of them checks that the comparison pads rather than compares raw lengths.
    text = f"{value:018X}"
    return (text.rstrip("0") or "0") if rng.random() < 0.3 else text


def event_stream(
    *,
    keys: int,
    bucket: str = "fileupload.bench",
    users: int = 20,
    duplicate_ratio: float = 0.2,
    reorder_window: int = 8,
    seed: int = 7,
) -> list[S3Event]:
    """The delivered stream: every key's history, with duplicates and local reordering."""
    rng = random.Random(seed)
    history: list[S3Event] = []
    counter = 0x0055AED6DCD9028100
    clock = _EPOCH
    for index in range(keys):
        key = object_key(index % users, index)
        # create, then maybe overwrite, maybe delete, maybe re-create: the paths the indexer must order.
        names = ["ObjectCreated:Put"]
        if rng.random() < 0.5:
            names.append("ObjectCreated:Put")
        if rng.random() < 0.3:
            names.append("ObjectRemoved:Delete")
            if rng.random() < 0.3:
                names.append("ObjectCreated:CompleteMultipartUpload")
        for name in names:
            counter += 0x100  # multiples of 0x100 so the padding trick above applies to some
            clock += timedelta(milliseconds=rng.randint(1, 900))
            history.append(
                S3Event(name, bucket, key, rng.randint(1, 10_000_000), _sequencer(counter, rng), clock)
            )
    history.sort(key=lambda event: event.event_time)

    delivered: list[S3Event] = []
    for event in history:
        delivered.append(event)
        if rng.random() < duplicate_ratio:  # at-least-once delivery
            delivered.insert(rng.randint(max(0, len(delivered) - reorder_window), len(delivered)), event)
    for start in range(0, len(delivered), reorder_window):  # no ordering across nearby messages
        window = delivered[start : start + reorder_window]
        rng.shuffle(window)
        delivered[start : start + reorder_window] = window
    return delivered


def padded(sequencer: str, width: int) -> str:
    return sequencer.ljust(width, "0")


def final_state(events: Iterable[S3Event]) -> dict[str, int | None]:
    """Per key, the size of the object after its latest event, or None if the latest is a delete."""
    latest: dict[str, S3Event] = {}
    for event in events:
        current = latest.get(event.key)
        width = max(len(event.sequencer), len(current.sequencer)) if current else 0
        if current is None or padded(event.sequencer, width) > padded(current.sequencer, width):
            latest[event.key] = event
    return {key: (event.size if event.is_create else None) for key, event in latest.items()}


def creates(
    count: int, *, first: int = 0, bucket: str = "fileupload.bench", users: int = 20
) -> list[S3Event]:
    """`count` uploads of distinct new keys, numbered from `first`, so every one is a real write."""
    return [
        S3Event(
            "ObjectCreated:Put",
            bucket,
            object_key(index % users, index),
            1024 + index,
            f"{0x0055AED6DCD9028100 + index * 0x100:018X}",
            _EPOCH + timedelta(milliseconds=index),
        )
        for index in range(first, first + count)
    ]
