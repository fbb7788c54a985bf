"""End to end on moto through EventBridge: real uploads and deletes, the bucket's events sent to EventBridge,
a rule forwarding Object Created / Object Deleted to the queue, the real handler draining it.

moto 5.2.5's events differ from AWS's (see `indexer.events`): a constant sequencer, so they are ordered by
their time (one second), which in-order delivery makes exact. A second bucket's events reach the same queue
through a rule without a bucket filter: they are refused, counted and logged once per batch.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from tests.integration.indexer.conftest import BUCKET, Indexer
from tests.integration.indexer.notifications import is_live, read_items
from tests.integration.indexer.test_end_to_end import drain

OTHER_BUCKET = "another-bucket"
KEYS = ["USER001_FILE001.txt", "USER001_my file+x.txt", "USER002/reports/2024 Q1.pdf", "USER003_日本語.txt"]


def forward_to_queue(rule: str, queue_arn: str, bucket: str | None) -> None:
    pattern: dict[str, Any] = {"source": ["aws.s3"], "detail-type": ["Object Created", "Object Deleted"]}
    if bucket is not None:
        pattern["detail"] = {"bucket": {"name": [bucket]}}
    events = boto3.client("events")
    events.put_rule(Name=rule, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": queue_arn}])


@pytest.fixture
def eventbridge_queue(moto_indexer: Indexer) -> str:
    s3 = boto3.client("s3")
    sqs = boto3.client("sqs")
    queue_url = sqs.create_queue(QueueName="file-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    forward_to_queue("indexed-bucket", queue_arn, BUCKET)
    return queue_url


def test_uploads_and_deletes_through_eventbridge_are_indexed(
    moto_indexer: Indexer, eventbridge_queue: str
) -> None:
    s3 = boto3.client("s3")
    for number, key in enumerate(KEYS):
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" * (number + 1))
    s3.put_object(Bucket=BUCKET, Key=KEYS[1], Body=b"overwritten, longer")
    s3.delete_object(Bucket=BUCKET, Key=KEYS[2])
    s3.put_object(Bucket=BUCKET, Key="USER009_gone.txt", Body=b"soon deleted")
    s3.delete_object(Bucket=BUCKET, Key="USER009_gone.txt")  # in the same second: the later applied wins

    assert drain(moto_indexer, eventbridge_queue) > 0

    listed = {o["Key"]: o["Size"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}
    items = read_items(moto_indexer.client, moto_indexer.table_name, [*KEYS, "USER009_gone.txt"])
    assert {key: item["size"] for key, item in items.items() if is_live(item) and item is not None} == listed
    assert listed[KEYS[1]] == len(b"overwritten, longer")
    assert KEYS[2] not in listed


def test_events_of_another_bucket_are_refused_counted_and_logged_once(
    moto_indexer: Indexer,
    eventbridge_queue: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    s3 = boto3.client("s3")
    sqs = boto3.client("sqs")
    queue_arn = sqs.get_queue_attributes(QueueUrl=eventbridge_queue, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    s3.create_bucket(Bucket=OTHER_BUCKET)
    s3.put_bucket_notification_configuration(
        Bucket=OTHER_BUCKET, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    forward_to_queue("every-bucket", queue_arn, None)  # a rule too wide: the indexer must not trust it

    s3.put_object(Bucket=BUCKET, Key="USER001_same.txt", Body=b"ours")
    drain(moto_indexer, eventbridge_queue)
    capsys.readouterr()
    caplog.clear()
    # The same key in the other bucket: uploaded, then deleted. Today's entry must not move.
    s3.put_object(Bucket=OTHER_BUCKET, Key="USER001_same.txt", Body=b"theirs, longer")
    s3.put_object(Bucket=OTHER_BUCKET, Key="USER001_theirs.txt", Body=b"t")
    s3.delete_object(Bucket=OTHER_BUCKET, Key="USER001_same.txt")

    assert drain(moto_indexer, eventbridge_queue) == 1  # acknowledged, not retried

    items = read_items(
        moto_indexer.client, moto_indexer.table_name, ["USER001_same.txt", "USER001_theirs.txt"]
    )
    same = items["USER001_same.txt"]
    assert is_live(same)
    assert same is not None
    assert (same["bucketName"], same["size"]) == (BUCKET, len(b"ours"))
    assert items["USER001_theirs.txt"] is None
    refused = [
        record for record in caplog.records if record.getMessage() == "Events of another bucket refused"
    ]
    assert [(record.bucket, record.events, record.levelname) for record in refused] == [  # type: ignore[attr-defined]
        (OTHER_BUCKET, 3, "WARNING")
    ]
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    metrics = [line["ForeignBucketEvents"] for line in lines if "ForeignBucketEvents" in line]
    assert metrics == [[3.0]]
