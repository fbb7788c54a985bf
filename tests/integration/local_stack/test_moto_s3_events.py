"""moto's S3 as the local stack serves it (`local_stack.moto_server.moto_changes`): of two writes to one key,
the one S3 holds afterwards carries the later event time.

moto has no sequencers, so the indexer orders a key's events by their time; moto stores an object first,
then stamps its event. The test widens the gap between the two for the first write (a pause before its
event is sent) and makes a second write to the same key inside it. The bucket is versioned, so the first
write's object stays readable while its event waits.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest
from moto.s3 import notifications

from tests.integration.local_stack.conftest import moto_server_with

PAUSE_S = 0.5


@pytest.fixture
def endpoint() -> Iterator[str]:
    send = notifications.send_event
    first = threading.Lock()

    def late_for_the_first(account_id: str, event_name: Any, bucket: Any, key: Any) -> None:
        if first.acquire(blocking=False):  # the first write's event, and only it, waits
            time.sleep(PAUSE_S)
        send(account_id, event_name, bucket, key)

    with moto_server_with(mock.patch.object(notifications, "send_event", late_for_the_first)) as endpoint:
        yield endpoint


def test_the_write_s3_holds_has_the_later_event(endpoint: str) -> None:
    options = {"endpoint_url": endpoint, "region_name": "us-east-1"}
    s3, sqs, second_writer = (boto3.client(name, **options) for name in ("s3", "sqs", "s3"))
    queue_url = sqs.create_queue(QueueName="events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.create_bucket(Bucket="bucket")
    s3.put_bucket_versioning(Bucket="bucket", VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_notification_configuration(
        Bucket="bucket",
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": queue_arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    sqs.purge_queue(QueueUrl=queue_url)  # the s3:TestEvent
    s3.head_bucket(Bucket="bucket")
    second_writer.head_bucket(Bucket="bucket")  # both clients ready before the race

    first = threading.Thread(target=lambda: s3.put_object(Bucket="bucket", Key="k", Body=b"first write"))
    first.start()
    time.sleep(PAUSE_S / 4)  # the first write is stored and waits to send its event
    second_writer.put_object(Bucket="bucket", Key="k", Body=b"second write")
    first.join(30)

    records: list[dict[str, Any]] = []
    while len(records) < 2:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=5)
        assert messages.get("Messages"), f"only {len(records)} event(s) arrived"
        records += [record for m in messages["Messages"] for record in json.loads(m["Body"])["Records"]]
    latest = max(records, key=lambda record: record["eventTime"])
    held = s3.head_object(Bucket="bucket", Key="k")["ETag"].strip('"')
    assert latest["s3"]["object"]["eTag"] == held, "the later event is of a version S3 no longer shows"
