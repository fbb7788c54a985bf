"""Hand-built S3 notifications and SQS deliveries, shaped as S3 and the Lambda event source send them.

moto's S3 sends no sequencer, no versionId and no delete-marker events; real S3 does, so the ordering
tests build their events here. `SqsQueue` stands in for SQS redelivery: a message stays until a handler
invocation acknowledges it (is not in `batchItemFailures`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus

from boto3.dynamodb.types import TypeDeserializer

from file_index.rules import schema

TEST_EVENT_BODY = json.dumps(
    {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2024-05-01T10:00:00.000Z",
        "Bucket": "fileupload.a",
        "RequestId": "5582815E1AEA5ADF",
        "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE",
    }
)
_ids = itertools.count()


def s3_record(
    event_name: str,
    key: str,
    *,
    bucket: str = "fileupload.a",
    sequencer: str | None = None,
    size: int | None = 12,
    e_tag: str | None = "d41d8cd98f00b204e9800998ecf8427e",
    version_id: str | None = None,
    event_time: str = "2024-05-01T10:00:00.123Z",
) -> dict[str, Any]:
    """One S3 record; `key` is given decoded and encoded here with quote_plus, as S3 does."""
    obj: dict[str, Any] = {"key": quote_plus(key)}
    if size is not None and event_name.startswith("ObjectCreated:"):
        obj["size"] = size
    for name, value in (("eTag", e_tag), ("versionId", version_id), ("sequencer", sequencer)):
        if value is not None:
            obj[name] = value
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": event_time,
        "eventName": event_name,
        "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "indexer",
            "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
            "object": obj,
        },
    }


def notification(*records: dict[str, Any]) -> str:
    return json.dumps({"Records": list(records)})


@dataclass(frozen=True)
class SqsMessage:
    message_id: str
    body: str
    receive_count: int = 1


def new_message(body: str) -> SqsMessage:
    return SqsMessage(f"msg-{next(_ids):06d}", body)


def sqs_event(messages: Iterable[SqsMessage]) -> dict[str, Any]:
    """The event the Lambda SQS event source passes to the handler."""
    return {
        "Records": [
            {
                "messageId": message.message_id,
                "receiptHandle": f"handle-{message.message_id}-{message.receive_count}",
                "body": message.body,
                "attributes": {
                    "ApproximateReceiveCount": str(message.receive_count),
                    "SentTimestamp": "1714557600000",
                    "SenderId": "AIDAEXAMPLE",
                    "ApproximateFirstReceiveTimestamp": "1714557600000",
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:file-events",
                "awsRegion": "us-east-1",
            }
            for message in messages
        ]
    }


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass
class SqsQueue:
    """Redelivers what the handler reports as failed, in batches, until the queue is empty."""

    pending: list[SqsMessage] = field(default_factory=list)
    invocations: int = 0
    failed_deliveries: int = 0

    def send(self, *bodies: str) -> None:
        self.pending.extend(new_message(body) for body in bodies)

    def deliver(self, handler: Handler, context: Any, batches: Sequence[int] = (10,)) -> list[str]:
        """One pass over the queue in batches of the given sizes (cycled); returns the failed message ids."""
        messages, self.pending = self.pending, []
        failed_ids: list[str] = []
        sizes = itertools.cycle(batches)
        start = 0
        while start < len(messages):
            batch = messages[start : start + next(sizes)]
            start += len(batch)
            self.invocations += 1
            response = handler(sqs_event(batch), context)
            failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
            failed_ids.extend(failed)
            self.failed_deliveries += len(failed)
            self.pending.extend(
                SqsMessage(message.message_id, message.body, message.receive_count + 1)
                for message in batch
                if message.message_id in failed
            )
        return failed_ids

    def drain(self, handler: Handler, context: Any, *, max_rounds: int = 50) -> int:
        """Deliver until nothing is pending; returns the rounds it took."""
        for round_number in range(1, max_rounds + 1):
            self.deliver(handler, context)
            if not self.pending:
                return round_number
        raise AssertionError(f"{len(self.pending)} messages still failing after {max_rounds} rounds")


_deserializer = TypeDeserializer()


def read_items(client: Any, table_name: str, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """The index's items for `keys` (strongly consistent), as Python values; None where there is none."""
    items: dict[str, dict[str, Any] | None] = {}
    for key in keys:
        response = client.get_item(
            TableName=table_name, Key={schema.OBJECT_KEY: {"S": key}}, ConsistentRead=True
        )
        raw = response.get("Item")
        items[key] = None if raw is None else {k: _deserializer.deserialize(v) for k, v in raw.items()}
    return items


def query_keys(client: Any, table_name: str, index: schema.GlobalIndex, partition_value: str) -> set[str]:
    """The object keys a GSI holds under one partition value (all pages)."""
    paginator = client.get_paginator("query")
    keys: set[str] = set()
    for page in paginator.paginate(
        TableName=table_name,
        IndexName=index.name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": index.partition_key.name},
        ExpressionAttributeValues={":pk": {"S": partition_value}},
    ):
        keys.update(item[schema.OBJECT_KEY]["S"] for item in page["Items"])
    return keys


def is_live(item: dict[str, Any] | None) -> bool:
    return item is not None and not item.get(schema.DELETED, False)
