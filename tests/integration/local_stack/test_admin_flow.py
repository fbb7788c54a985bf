"""Black-box through the local stack: files from before the index, a backfill during live changes, a
corrupted index, a reconcile; the API's answers then equal the bucket. The commands run as processes,
configured as a user would (AWS_ENDPOINT_URL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any
from urllib.parse import urlencode

import pytest

from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)


def admin(stack: LocalFileSearch, *argv: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": stack.aws_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": stack.region,
    }
    result = subprocess.run(
        [sys.executable, "-m", "file_search_admin", *argv, "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def api_files(stack: LocalFileSearch) -> dict[str, int]:
    """Every file the API lists for the bucket: key -> size."""
    files: dict[str, int] = {}
    query = {"bucket": stack.bucket, "limit": "1000"}
    while True:
        with urllib.request.urlopen(f"{stack.api_url}/files?{urlencode(query)}", timeout=30) as response:  # noqa: S310
            page = json.load(response)
        files.update({item["objectKey"]: item["size"] for item in page["items"]})
        if not page.get("nextCursor"):
            return files
        query["cursor"] = page["nextCursor"]


def bucket_files(stack: LocalFileSearch) -> dict[str, int]:
    paginator = stack.client("s3").get_paginator("list_objects_v2")
    return {
        entry["Key"]: entry["Size"]
        for page in paginator.paginate(Bucket=stack.bucket)
        for entry in page.get("Contents", [])
    }


def test_backfill_during_live_changes_then_reconcile_a_corrupted_index(
    running_stack: LocalFileSearch,
) -> None:
    stack = running_stack
    s3 = stack.client("s3")
    with stack.notifications_disabled():
        for n in range(300):
            s3.put_object(Bucket=stack.bucket, Key=f"OLD{n % 7}_file{n:04d}.txt", Body=b"o" * (n % 50 + 1))
    stack.wait_until_indexed()
    assert api_files(stack) == {}

    def live_changes() -> None:
        for n in range(0, 300, 3):
            key = f"OLD{n % 7}_file{n:04d}.txt"
            if n % 2:
                s3.delete_object(Bucket=stack.bucket, Key=key)
            else:
                s3.put_object(Bucket=stack.bucket, Key=key, Body=b"new" * (n % 11 + 1))
            s3.put_object(Bucket=stack.bucket, Key=f"NEW_file{n:04d}.txt", Body=b"n" * (n % 13 + 1))

    writer = threading.Thread(target=live_changes)
    writer.start()
    backfill = admin(
        stack, "backfill", "--bucket", stack.bucket, "--table", stack.table_name, "--page-size", "50"
    )
    writer.join()
    stack.wait_until_indexed(timeout=60)
    assert backfill["state"] == "READY"
    assert backfill["written"] + backfill["skipped"] == backfill["listed"]
    assert api_files(stack) == bucket_files(stack)

    # Corrupt the index: entries removed, sizes changed, entries for objects that do not exist.
    dynamodb = stack.client("dynamodb")
    keys = sorted(bucket_files(stack))
    for key in keys[:5]:
        dynamodb.delete_item(TableName=stack.table_name, Key={"objectKey": {"S": key}})
    for key in keys[5:9]:
        dynamodb.update_item(
            TableName=stack.table_name,
            Key={"objectKey": {"S": key}},
            UpdateExpression="SET #size = :size",
            ExpressionAttributeNames={"#size": "size"},
            ExpressionAttributeValues={":size": {"N": "31337"}},
        )
    for n in range(3):
        dynamodb.put_item(
            TableName=stack.table_name,
            Item={
                "objectKey": {"S": f"GHOST_{n}.txt"},
                "bucketName": {"S": stack.bucket},
                "fileId": {"S": f"{n}.txt"},
                "size": {"N": "1"},
                "uploadUser": {"S": "GHOST"},
                "uploadDate": {"S": "2020-01-01T00:00:00.000Z"},
            },
        )
    assert api_files(stack) != bucket_files(stack)

    started = time.monotonic()
    repaired = admin(stack, "reconcile", "--bucket", stack.bucket, "--table", stack.table_name)
    assert time.monotonic() - started < 60
    assert repaired["found"] == {"missing": 5, "stale": 4, "orphaned": 3}
    assert repaired["fixed"] == repaired["found"]
    assert api_files(stack) == bucket_files(stack)

    again = admin(stack, "reconcile", "--bucket", stack.bucket, "--table", stack.table_name)
    assert again["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    status = admin(stack, "status", "--bucket", stack.bucket, "--table", stack.table_name)
    assert status["state"] == "READY"
    assert status["operation"] == "reconcile"


def test_redrive_through_the_local_stack(running_stack: LocalFileSearch) -> None:
    stack = running_stack
    sqs = stack.client("sqs")
    with stack.event_source_disabled():
        stack.client("s3").put_object(Bucket=stack.bucket, Key="USER001_redriven.txt", Body=b"abc")
        # Play the redrive policy: the event lands in the dead-letter queue instead of the indexer.
        message = sqs.receive_message(QueueUrl=stack.queue_url, WaitTimeSeconds=5)["Messages"][0]
        sqs.send_message(QueueUrl=stack.dlq_url, MessageBody=message["Body"])
        sqs.delete_message(QueueUrl=stack.queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert "USER001_redriven.txt" not in api_files(stack)
    moved = admin(stack, "redrive", "--dlq-url", stack.dlq_url, "--queue-url", stack.queue_url)
    assert moved["moved"] == 1
    stack.wait_until_indexed()
    assert api_files(stack)["USER001_redriven.txt"] == 3


def names_found(stack: LocalFileSearch, q: str) -> set[str]:
    query = {"bucket": stack.bucket, "q": q, "limit": "1000"}
    with urllib.request.urlopen(f"{stack.api_url}/files?{urlencode(query)}", timeout=30) as response:  # noqa: S310
        return {item["objectKey"] for item in json.load(response)["items"]}


def test_index_names_gives_old_entries_their_name_items_and_removes_strays(
    running_stack: LocalFileSearch,
) -> None:
    stack = running_stack
    s3 = stack.client("s3")
    keys = [f"USER{n:03d}_Invoice_{n}.pdf" for n in range(12)]
    for key in keys:
        s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x")
    stack.wait_until_indexed()
    assert names_found(stack, "invoice") == set(keys)
    dynamodb = stack.client("dynamodb")
    name_table = stack.describe()["nameTable"]
    # A table from before the name index: its entries have no name items; and one stray item of no entry.
    # (The state items stay: the table was marked complete at start, `file_index.write.names`.)
    scanned = [
        item for item in dynamodb.scan(TableName=name_table)["Items"] if "|!" not in item["nameScope"]["S"]
    ]
    for item in scanned:
        dynamodb.delete_item(TableName=name_table, Key={k: item[k] for k in ("nameScope", "nameSort")})
    stray = {**scanned[0], "objectKey": {"S": "USER999_gone.pdf"}, "nameSort": {"S": "invoice 0000"}}
    dynamodb.put_item(TableName=name_table, Item=stray)
    assert names_found(stack, "invoice") == set()

    summary = admin(stack, "index-names", "--bucket", stack.bucket)

    assert summary["entries"] == len(keys)
    assert summary["put"] == len(scanned)
    assert summary["removed"] == 1
    assert names_found(stack, "invoice") == set(keys)
    assert names_found(stack, "inv 7") == {"USER007_Invoice_7.pdf"}
    again = admin(stack, "index-names", "--bucket", stack.bucket)
    assert (again["put"], again["removed"]) == (0, 0)
