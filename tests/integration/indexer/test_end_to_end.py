"""End to end on moto: real put_object / delete_object on a bucket whose notifications go to SQS, the
queue drained by the handler as the Lambda event source would, then the index must equal the bucket.

moto's events carry no sequencer: this is the time-ordered guarantee (see `indexer.events`), with the
messages received in the order moto sent them.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from file_index.rules import schema
from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsMessage, is_live, query_keys, read_items, sqs_event

BUCKET = "fileupload.a"
KEYS = [
    "USER001_FILE001.txt",
    "USER001_my file.txt",
    "USER002_a+b=c.txt",
    "USER002_100%.csv",
    "USER003/reports/2024 Q1.pdf",
    "USER003/日本語のファイル.txt",
    "Ünïcødé_naïve café.md",
    "no-user-key.bin",
]


@pytest.fixture
def bucket_to_queue(moto_indexer: Indexer) -> tuple[Any, str]:
    s3 = boto3.client("s3")
    sqs = boto3.client("sqs")
    s3.create_bucket(Bucket=BUCKET)
    queue_url = sqs.create_queue(QueueName="file-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [
                {"QueueArn": queue_arn, "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}
            ]
        },
    )
    return s3, queue_url


def drain(indexer: Indexer, queue_url: str) -> int:
    """Receive, invoke, delete what succeeded; returns the number of invocations."""
    sqs = boto3.client("sqs")
    invocations = 0
    while True:
        received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = received.get("Messages", [])
        if not messages:
            return invocations
        invocations += 1
        batch = [SqsMessage(m["MessageId"], m["Body"]) for m in messages]
        response = indexer(sqs_event(batch))
        assert response["batchItemFailures"] == []
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )


def test_index_equals_bucket(moto_indexer: Indexer, bucket_to_queue: tuple[Any, str]) -> None:
    s3, queue_url = bucket_to_queue
    for number, key in enumerate(KEYS):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" * (number + 1))
    s3.put_object(Bucket=BUCKET, Key=KEYS[1], Body=b"overwritten, longer")
    s3.delete_object(Bucket=BUCKET, Key=KEYS[2])
    s3.delete_object(Bucket=BUCKET, Key=KEYS[4])
    s3.put_object(Bucket=BUCKET, Key=KEYS[4], Body=b"back again")
    s3.put_object(Bucket=BUCKET, Key="USER009_gone.txt", Body=b"soon deleted")
    s3.delete_object(Bucket=BUCKET, Key="USER009_gone.txt")  # put then delete, often in one millisecond

    assert drain(moto_indexer, queue_url) >= 2

    objects = {o["Key"]: o for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]}
    assert set(objects) == set(KEYS) - {KEYS[2]}
    items = read_items(moto_indexer.client, moto_indexer.table_name, [*KEYS, "USER009_gone.txt"])
    for key, item in items.items():
        if key not in objects:
            assert not is_live(item), key
            continue
        assert is_live(item), key
        assert item is not None
        assert item["size"] == objects[key]["Size"]
        assert item["eTag"] == objects[key]["ETag"].strip('"')
        assert item["bucketName"] == BUCKET
    assert query_keys(moto_indexer.client, moto_indexer.table_name, schema.BUCKET_SIZE_INDEX, BUCKET) == set(
        objects
    )
    by_user = {
        user: query_keys(moto_indexer.client, moto_indexer.table_name, schema.USER_DATE_INDEX, user)
        for user in ("USER001", "USER002", "USER003", "Ünïcødé", "USER009")
    }
    assert by_user == {
        "USER001": {KEYS[0], KEYS[1]},
        "USER002": {KEYS[3]},
        "USER003": {KEYS[4], KEYS[5]},
        "Ünïcødé": {KEYS[6]},
        "USER009": set(),
    }
    assert items["USER003/reports/2024 Q1.pdf"]["fileId"] == "reports/2024 Q1.pdf"  # type: ignore[index]
    assert items["no-user-key.bin"]["fileId"] == "no-user-key.bin"  # type: ignore[index]
    assert "uploadUser" not in items["no-user-key.bin"]  # type: ignore[operator]
