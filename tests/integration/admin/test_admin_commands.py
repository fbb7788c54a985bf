"""The admin commands on an in-process moto account: backfill, reconcile, redrive, status, errors."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError

from file_index.rules.objects import ObjectEvent
from file_index.store.state import IndexStateStore, state_key
from file_index.write.writer import apply_event
from tests.integration.admin.conftest import BUCKET, TABLE, Account


def upload(account: Account, count: int, prefix: str = "USER001_") -> dict[str, bytes]:
    bodies = {f"{prefix}{n:04d}.txt": f"body {n}".encode() * (n % 5 + 1) for n in range(count)}
    for key, body in bodies.items():
        account.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    return bodies


def live_event(key: str, name: str, sequencer: str, size: int = 1) -> ObjectEvent:
    return ObjectEvent(
        event_name=name,
        bucket=BUCKET,
        key=key,
        event_time=datetime.now(UTC),
        sequencer=sequencer,
        size=None if name.startswith("ObjectRemoved") else size,
        e_tag=None if name.startswith("ObjectRemoved") else "live",
        version_id=None,
        upload_user="USER001",
        file_id=key,
    )


# -- backfill -----------------------------------------------------------------------------------------------


def test_backfill_indexes_the_bucket_and_leaves_live_events_alone(account: Account) -> None:
    upload(account, 30)
    # What live events wrote before the backfill wins over the listing.
    apply_event(
        account.dynamodb,
        TABLE,
        live_event("USER001_0001.txt", "ObjectCreated:Put", "AA", size=7),
        s3=account.s3,
    )
    apply_event(
        account.dynamodb, TABLE, live_event("USER001_0002.txt", "ObjectRemoved:Delete", "AB"), s3=account.s3
    )
    result = account.admin("backfill", "--bucket", BUCKET, "--table", TABLE, "--json", "--page-size", "7")
    assert result.status == 0, result.stderr
    summary = result.json()
    assert (summary["listed"], summary["written"], summary["skipped"]) == (30, 28, 2)
    assert summary["state"] == "READY"
    assert summary["resumed"] is False
    assert isinstance(summary["objectsPerSecond"], float)
    assert summary["total"] == {"listed": 30, "written": 28, "skipped": 2}
    index = account.live_index()
    expected = account.bucket()
    expected["USER001_0001.txt"] = (7, "live")
    del expected["USER001_0002.txt"]
    assert index == expected
    status = account.admin("status", "--bucket", BUCKET, "--table", TABLE, "--json").json()
    assert status["state"] == "READY"
    assert status["operation"] == "backfill"
    assert status["progress"] == {"listed": 30, "written": 28, "skipped": 2}
    # What the planner weighs its plans with: the 30 objects the listing showed.
    assert status["statistics"]["entries"] == 30
    record = IndexStateStore(account.dynamodb, TABLE).read(BUCKET)
    assert record is not None
    statistics = record.index_statistics()
    assert statistics is not None
    assert sum(statistics.sizes.values()) == sum(statistics.months.values()) == 30


def test_backfill_prints_a_summary_line_without_json(account: Account) -> None:
    upload(account, 3)
    result = account.admin("backfill", "--bucket", BUCKET)
    assert result.status == 0, result.stderr
    assert result.stdout.startswith(f"backfill of s3://{BUCKET} into {TABLE}: listed 3, written 3, skipped 0")
    assert result.stdout.rstrip().endswith("index READY")
    assert result.stderr == ""  # not a terminal: no progress bar


def test_backfill_of_a_versioned_bucket_records_version_ids(account: Account) -> None:
    account.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    account.s3.put_object(Bucket=BUCKET, Key="USER001_a", Body=b"old")
    latest = account.s3.put_object(Bucket=BUCKET, Key="USER001_a", Body=b"newer")["VersionId"]
    account.s3.put_object(Bucket=BUCKET, Key="USER001_b", Body=b"b")
    account.s3.delete_object(Bucket=BUCKET, Key="USER001_b")  # a delete marker is current: not listed
    summary = account.admin("backfill", "--bucket", BUCKET, "--json").json()
    assert (summary["listed"], summary["written"]) == (1, 1)
    item = account.item("USER001_a")
    assert item is not None
    assert (item["versionId"], item["size"]) == (latest, 5)
    assert account.item("USER001_b") is None


def test_an_interrupted_backfill_resumes_from_its_checkpoint(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload(account, 50)
    writes = Counter[str]()
    original = boto3.session.Session.client

    def failing_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)

        def fail_after_25(**_: Any) -> None:
            writes["put"] += 1
            if writes["put"] > 25:
                raise EndpointConnectionError(endpoint_url="https://dynamodb.example")

        if service == "dynamodb":
            made.meta.events.register("before-call.dynamodb.PutItem", fail_after_25)
        return made

    with monkeypatch.context() as patch:
        patch.setattr(boto3.session.Session, "client", failing_client)
        failed = account.admin("backfill", "--bucket", BUCKET, "--page-size", "10", "--concurrency", "2")
    assert failed.status == 1
    assert failed.stderr.count("\n") == 1
    assert "Could not connect to the endpoint URL" in failed.stderr
    state = account.admin("status", "--bucket", BUCKET, "--json").json()
    assert state["state"] == "BUILDING"
    assert "backfill stopped after 20 objects" in state["lastError"]
    assert state["progress"]["listed"] == 20

    resumed = account.admin("backfill", "--bucket", BUCKET, "--json", "--page-size", "10").json()
    assert resumed["resumed"] is True
    assert resumed["resumedAfter"] == "USER001_0019.txt"
    assert resumed["listed"] == 30
    # Writes of the failed page that went through before the failure are skipped now.
    assert resumed["written"] + resumed["skipped"] == 30
    assert resumed["total"]["listed"] == 50
    # Those went unrecorded (their page never finished): the run's counts still add up to the bucket.
    assert resumed["total"]["written"] + resumed["total"]["skipped"] == 50
    assert resumed["state"] == "READY"
    assert account.live_index() == account.bucket()

    # --restart lists everything again, writes nothing new.
    again = account.admin("backfill", "--bucket", BUCKET, "--json", "--restart").json()
    assert (again["resumed"], again["listed"], again["written"], again["skipped"]) == (False, 50, 0, 50)


# -- reconcile ----------------------------------------------------------------------------------------------


def corrupt(account: Account) -> None:
    """Entries removed, sizes changed, entries for objects that do not exist, a tombstone over a live file."""
    account.dynamodb.delete_item(TableName=TABLE, Key={"objectKey": {"S": "USER001_0000.txt"}})
    account.dynamodb.delete_item(TableName=TABLE, Key={"objectKey": {"S": "USER001_0001.txt"}})
    account.dynamodb.update_item(
        TableName=TABLE,
        Key={"objectKey": {"S": "USER001_0002.txt"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "size"},
        ExpressionAttributeValues={":s": {"N": "123456"}},
    )
    account.dynamodb.put_item(
        TableName=TABLE,
        Item={"objectKey": {"S": "USER001_0003.txt"}, "deleted": {"BOOL": True}, "orderKey": {"S": "#1"}},
    )
    for key in ("USER001_ghost.txt", "USER001_ghost2.txt"):
        apply_event(account.dynamodb, TABLE, live_event(key, "ObjectCreated:Put", "0A"), s3=account.s3)


def test_reconcile_finds_and_repairs_both_directions_then_finds_nothing(account: Account) -> None:
    upload(account, 12)
    assert account.admin("backfill", "--bucket", BUCKET).status == 0
    corrupt(account)

    dry = account.admin("reconcile", "--bucket", BUCKET, "--dry-run", "--json").json()
    assert dry["found"] == {"missing": 3, "stale": 1, "orphaned": 2}
    assert dry["fixed"] == {"missing": 0, "stale": 0, "orphaned": 0}
    assert dry["keys"]["orphaned"] == ["USER001_ghost.txt", "USER001_ghost2.txt"]
    assert dry["state"] is None
    assert account.live_index() != account.bucket()
    assert account.admin("status", "--bucket", BUCKET, "--json").json()["operation"] == "backfill"

    fixed = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert fixed["found"] == {"missing": 3, "stale": 1, "orphaned": 2}
    assert fixed["fixed"] == fixed["found"]
    assert fixed["keys"]["missing"] == ["USER001_0000.txt", "USER001_0001.txt", "USER001_0003.txt"]
    assert fixed["keys"]["stale"] == ["USER001_0002.txt"]
    assert fixed["state"] == "READY"
    assert account.live_index() == account.bucket()
    # The repaired tombstone over a live file kept its position.
    assert account.item("USER001_0003.txt")["orderKey"] == "#1"  # type: ignore[index]
    ghost = account.item("USER001_ghost.txt")
    assert ghost is not None
    assert ghost["deleted"] is True

    again = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert again["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    assert again["settled"] == 0
    status = account.admin("status", "--bucket", BUCKET, "--json").json()
    assert status["operation"] == "reconcile"
    assert status["state"] == "READY"
    # A reconcile refreshes the statistics from its listing.
    assert status["statistics"]["entries"] == len(account.bucket())


def test_reconcile_report_is_readable_and_bounded(account: Account) -> None:
    upload(account, 3)
    for n in range(5):
        apply_event(
            account.dynamodb, TABLE, live_event(f"USER001_ghost{n}", "ObjectCreated:Put", "0A"), s3=account.s3
        )
    result = account.admin("reconcile", "--bucket", BUCKET, "--max-keys", "2")
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == (
        "  missing from the index     found      3, fixed      3: USER001_0000.txt, USER001_0001.txt, ..."
    )
    assert lines[2] == "  entry of another version   found      0, fixed      0"
    assert lines[3] == (
        "  entry of a deleted object  found      5, fixed      5: USER001_ghost0, USER001_ghost1, ..."
    )
    assert result.stdout.rstrip().endswith("index READY")


def test_reconcile_of_a_versioned_bucket_compares_version_ids(account: Account) -> None:
    account.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    account.s3.put_object(Bucket=BUCKET, Key="USER001_a", Body=b"same")
    account.admin("backfill", "--bucket", BUCKET)
    # Same size and content, new version: only the version id tells.
    newer = account.s3.put_object(Bucket=BUCKET, Key="USER001_a", Body=b"same")["VersionId"]
    result = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert result["found"]["stale"] == 1
    assert account.item("USER001_a")["versionId"] == newer  # type: ignore[index]
    assert account.admin("reconcile", "--bucket", BUCKET, "--json").json()["found"]["stale"] == 0


def test_reconcile_costs_no_request_per_object_when_nothing_is_wrong(
    account: Account, count_requests: list[str]
) -> None:
    upload(account, 40)
    account.admin("backfill", "--bucket", BUCKET)
    count_requests.clear()
    result = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert result["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    per_operation = Counter(count_requests)
    assert per_operation["s3.HeadObject"] == 0
    assert per_operation["dynamodb.PutItem"] == 1  # the state record's start, not an object
    assert per_operation["s3.ListObjectsV2"] == 1
    assert per_operation["dynamodb.Scan"] == 1

    # Per difference: one HEAD and one write.
    corrupt(account)
    count_requests.clear()
    result = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    differences = sum(result["found"].values())
    assert differences == 6
    per_operation = Counter(count_requests)
    assert per_operation["s3.HeadObject"] == differences
    assert per_operation["dynamodb.PutItem"] == differences + 1


def test_a_live_event_between_scan_and_repair_wins(account: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    upload(account, 2)
    account.admin("backfill", "--bucket", BUCKET)
    account.dynamodb.delete_item(TableName=TABLE, Key={"objectKey": {"S": "USER001_0000.txt"}})
    import file_index.write.repair as repair_module

    original = repair_module.head_object

    def head_then_event(s3: Any, bucket: str, key: str) -> Any:
        # The object's create event lands while the reconcile confirms the difference.
        apply_event(
            account.dynamodb, TABLE, live_event(key, "ObjectCreated:Put", "FF", size=99), s3=account.s3
        )
        return original(s3, bucket, key)

    monkeypatch.setattr(repair_module, "head_object", head_then_event)
    result = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert result["found"]["missing"] == 1
    assert result["fixed"]["missing"] == 0
    assert result["conflicts"] == 1
    assert account.item("USER001_0000.txt")["size"] == 99  # type: ignore[index]


# -- redrive, status ----------------------------------------------------------------------------------------


def test_redrive_moves_every_dead_letter_back_once(account: Account) -> None:
    queue = account.sqs.create_queue(QueueName="file-events")["QueueUrl"]
    dlq = account.sqs.create_queue(QueueName="file-events-dlq")["QueueUrl"]
    bodies = {json.dumps({"n": n}) for n in range(23)}
    for body in bodies:
        account.sqs.send_message(
            QueueUrl=dlq,
            MessageBody=body,
            MessageAttributes={"origin": {"DataType": "String", "StringValue": "s3"}},
        )
    result = account.admin("redrive", "--dlq-url", dlq, "--queue-url", queue, "--json")
    assert result.status == 0, result.stderr
    assert result.json()["moved"] == 23
    assert result.json()["failed"] == 0
    moved = []
    while messages := account.sqs.receive_message(
        QueueUrl=queue, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages"):
        moved.extend(messages)
        account.sqs.delete_message_batch(
            QueueUrl=queue,
            Entries=[{"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in messages],
        )
    assert {m["Body"] for m in moved} == bodies
    assert len(moved) == 23
    assert all(m["MessageAttributes"]["origin"]["StringValue"] == "s3" for m in moved)
    attributes = account.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
    empty = account.admin("redrive", "--dlq-url", dlq, "--queue-url", queue)
    assert empty.stdout == f"moved 0 message(s) back to {queue}\n"


def test_redrive_keeps_a_message_whose_send_failed(account: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    queue = account.sqs.create_queue(QueueName="file-events")["QueueUrl"]
    dlq = account.sqs.create_queue(QueueName="file-events-dlq")["QueueUrl"]
    account.sqs.send_message(QueueUrl=dlq, MessageBody="kept")
    original = boto3.session.Session.client

    def refusing_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)

        def refuse(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
            failed = {"Id": "0", "SenderFault": False, "Code": "InternalError"}
            return AWSResponse("", 200, {}, None), {"Successful": [], "Failed": [failed]}

        # Answer SendMessageBatch with a failure instead of calling SQS (no emulator fails on demand).
        made.meta.events.register("before-call.sqs.SendMessageBatch", refuse)
        return made

    monkeypatch.setattr(boto3.session.Session, "client", refusing_client)
    result = account.admin("redrive", "--dlq-url", dlq, "--queue-url", queue, "--json")
    assert result.json() == {
        "command": "redrive",
        "deadLetterQueueUrl": dlq,
        "queueUrl": queue,
        "moved": 0,
        "failed": 1,
    }
    attributes = account.sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"  # still there, invisible for a while


def test_status_without_a_record_is_what_get_status_says(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One answer, from one function (`file_index.store.state.effective_state`): a bucket the stack created is
    READY from its first object; the existing bucket cdk.json names is BUILDING until its backfill."""
    monkeypatch.chdir(tmp_path)  # no cdk.json: a bucket the stack created
    result = account.admin("status", "--bucket", BUCKET, "--json").json()
    assert (result["command"], result["bucket"], result["state"], result["runId"]) == (
        "status",
        BUCKET,
        "READY",
        None,
    )
    text = account.admin("status", "--bucket", BUCKET)
    assert text.stdout == (
        f"bucket {BUCKET}: READY (no backfill or reconcile has run; a bucket the stack created: indexed "
        "from its first object)\n"
    )
    (tmp_path / "cdk.json").write_text(json.dumps({"context": {"existingBucketName": BUCKET}}))
    assert account.admin("status", "--bucket", BUCKET, "--json").json()["state"] == "BUILDING"
    text = account.admin("status", "--bucket", BUCKET)
    assert text.stdout == (
        f"bucket {BUCKET}: BUILDING (no backfill or reconcile has run; an existing bucket "
        "(existingBucketName) not backfilled yet)\n"
    )


def test_the_state_record_is_neither_listed_nor_repaired(account: Account) -> None:
    upload(account, 2)
    account.admin("backfill", "--bucket", BUCKET)
    result = account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert result["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    assert result["scanned"] == 2
    assert account.item(state_key(BUCKET)) is not None


# -- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["backfill", "--bucket", "no-such-bucket"], "bucket 'no-such-bucket' does not exist"),
        (["reconcile", "--bucket", "no-such-bucket"], "bucket 'no-such-bucket' does not exist"),
        (["backfill", "--bucket", BUCKET, "--table", "NoTable"], "table 'NoTable' does not exist"),
        (["reconcile", "--bucket", BUCKET, "--table", "NoTable"], "table 'NoTable' does not exist"),
        (["status", "--bucket", BUCKET, "--table", "NoTable"], "table 'NoTable' does not exist"),
        (["status", "--bucket", "no-such-bucket"], "bucket 'no-such-bucket' does not exist"),
        (
            [
                "redrive",
                "--dlq-url",
                "https://sqs.us-east-1.amazonaws.com/123456789012/nope",
                "--queue-url",
                "x",
            ],
            "queue 'https://sqs.us-east-1.amazonaws.com/123456789012/nope' does not exist",
        ),
        (["backfill", "--deployed", "--stack-name", "NoStack"], "stack 'NoStack' does not exist"),
    ],
)
def test_a_missing_resource_is_one_line_and_exit_1(account: Account, argv: list[str], message: str) -> None:
    result = account.admin(*argv)
    assert result.status == 1
    assert result.stdout == ""
    assert result.stderr == f"file_search_admin: error: {message}\n"


def test_access_denied_is_one_line_naming_the_operation(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = boto3.session.Session.client

    def denying_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)

        def deny(model: Any, **_: Any) -> None:
            # moto does not enforce IAM by default: answer as S3 does to a caller without s3:ListBucket.
            raise ClientError({"Error": {"Code": "403", "Message": "Forbidden"}}, model.name)

        made.meta.events.register("before-call.s3.HeadBucket", deny)
        return made

    monkeypatch.setattr(boto3.session.Session, "client", denying_client)
    result = account.admin("backfill", "--bucket", BUCKET)
    assert result.status == 1
    assert (
        result.stderr == f"file_search_admin: error: access denied: HeadBucket on bucket '{BUCKET}' (403)\n"
    )


def test_the_commands_never_write_to_the_bucket(account: Account, count_requests: list[str]) -> None:
    upload(account, 5)
    account.dynamodb.delete_item(TableName=TABLE, Key={"objectKey": {"S": "USER001_0000.txt"}})
    for argv in (
        ["backfill", "--bucket", BUCKET],
        ["reconcile", "--bucket", BUCKET],
        ["status", "--bucket", BUCKET],
    ):
        assert account.admin(*argv).status == 0
    s3_calls = {call for call in count_requests if call.startswith("s3.")}
    assert s3_calls <= {"s3.HeadBucket", "s3.GetBucketVersioning", "s3.ListObjectsV2", "s3.HeadObject"}
