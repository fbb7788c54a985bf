"""The state machine's Lambdas on moto, with the exact inputs Step Functions sends them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from backfill import handler
from backfill.batches import ForeignBucketError, InvalidInputError
from backfill.config import ConfigError
from file_index.rules import name_items, schema
from file_index.rules.name_terms import name_terms
from file_index.store.entries import plain_item
from file_index.store.state import IndexStateStore, State
from tests.conftest import FakeLambdaContext

BUCKET = "fileupload.a"
TABLE = "FileMetaData"


@dataclass
class Env:
    s3: Any
    dynamodb: Any

    def item(self, key: str) -> dict[str, Any] | None:
        raw = self.dynamodb.get_item(TableName=TABLE, Key={"objectKey": {"S": key}})
        return plain_item(raw["Item"]) if "Item" in raw else None

    def put(self, key: str, body: bytes) -> dict[str, Any]:
        self.s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        head = self.s3.head_object(Bucket=BUCKET, Key=key)
        # The item shape of the Distributed Map's S3 listObjectsV2 reader (AWS's documented example).
        return {
            "Etag": head["ETag"],
            "Key": key,
            "LastModified": int(head["LastModified"].timestamp()),
            "Size": head["ContentLength"],
            "StorageClass": "STANDARD",
        }

    def state(self) -> Any:
        return IndexStateStore(self.dynamodb, TABLE).read(BUCKET)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("SCAN_SEGMENTS", "3")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "file-backfill")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE))
        handler.cold_start.cache_clear()
        yield Env(s3, dynamodb)
        handler.cold_start.cache_clear()


def test_start_run_marks_building_and_names_the_segments(env: Env, lambda_context: Any) -> None:
    started = handler.start_run({"operation": "reconcile"}, lambda_context)
    assert started["bucket"] == BUCKET
    assert started["operation"] == "reconcile"
    assert started["segments"] == [{"segment": i, "totalSegments": 3} for i in range(3)]
    state = env.state()
    assert state.state is State.BUILDING
    assert state.run_id == started["runId"]
    assert handler.start_run({}, lambda_context)["operation"] == "backfill"


def test_start_run_refuses_an_unknown_operation(env: Env, lambda_context: Any) -> None:
    with pytest.raises(InvalidInputError, match="operation must be one of"):
        handler.start_run({"operation": "rebuild"}, lambda_context)


def test_a_backfill_batch_writes_where_nothing_is_indexed(env: Env, lambda_context: Any) -> None:
    items = [env.put(f"USER00{n}_file{n}.txt", b"x" * n) for n in range(1, 4)]
    items.append(env.put("USER009/folder/", b""))  # a folder placeholder is an object like any other
    started = handler.start_run({"operation": "backfill"}, lambda_context)
    # An entry a live event wrote is never overwritten by a listing.
    env.dynamodb.put_item(
        TableName=TABLE,
        Item={
            "objectKey": {"S": "USER001_file1.txt"},
            "orderKey": {"S": "F" * 64},
            "deleted": {"BOOL": True},
        },
    )
    batch = {
        "BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": started["runId"]},
        "Items": items,
    }
    counts = handler.write_batch(batch, lambda_context)
    assert counts == {"listed": 4, "written": 3, "skipped": 1}
    item = env.item("USER002_file2.txt")
    assert item is not None
    assert item["size"] == 2
    assert item["eTag"] == items[1]["Etag"].strip('"')
    assert item["uploadUser"] == "USER002"
    assert "orderKey" not in item
    assert env.item("USER009/folder/") is not None
    assert env.item("USER001_file1.txt") == {
        "objectKey": "USER001_file1.txt",
        "orderKey": "F" * 64,
        "deleted": True,
    }
    # A retried child (Step Functions may re-run one) changes nothing and counts every item as skipped.
    assert handler.write_batch(batch, lambda_context) == {"listed": 4, "written": 0, "skipped": 4}
    assert env.state().counts == {"listed": 8, "written": 3, "skipped": 5}
    # Each batch adds its listing's statistics, as it adds `listed` (a retried child counts again: the
    # planner's statistics are estimates).
    assert env.state().statistics["entries"] == 8
    assert sum(v for k, v in env.state().statistics.items() if k.startswith("size")) == 8
    finished = handler.finish_run({"bucket": BUCKET, "runId": started["runId"]}, lambda_context)
    assert finished["state"] == "READY"


@pytest.mark.parametrize(
    "last_modified",
    [1668699881, 1668699881.0, "1668699881", "2022-11-17T15:44:41Z", "2022-11-17T15:44:41.000+00:00"],
)
def test_last_modified_may_be_epoch_seconds_or_iso(env: Env, lambda_context: Any, last_modified: Any) -> None:
    run = handler.start_run({}, lambda_context)["runId"]
    item = {
        "Etag": '"abc"',
        "Key": "USER001_x",
        "LastModified": last_modified,
        "Size": 1,
        "StorageClass": "STANDARD",
    }
    handler.write_batch(
        {"BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": run}, "Items": [item]},
        lambda_context,
    )
    written = env.item("USER001_x")
    assert written is not None
    assert written["uploadDate"] == "2022-11-17T15:44:41.000Z"


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"Items": []}, "BatchInput"),
        ({"BatchInput": {"bucket": BUCKET, "operation": "backfill"}, "Items": []}, "runId"),
        ({"BatchInput": {"bucket": BUCKET, "operation": "x", "runId": "r"}, "Items": []}, "operation"),
        (
            {"BatchInput": {"bucket": BUCKET, "runId": "r"}, "Items": [{"Key": "k", "LastModified": 1}]},
            "Size",
        ),
        (
            {
                "BatchInput": {"bucket": BUCKET, "runId": "r"},
                "Items": [{"Key": "k", "Size": 1, "LastModified": "soon"}],
            },
            "LastModified",
        ),
    ],
)
def test_a_malformed_batch_is_refused(
    env: Env, lambda_context: Any, event: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        handler.write_batch(event, lambda_context)


def test_a_batch_of_another_bucket_is_refused(env: Env, lambda_context: Any) -> None:
    batch = {"BatchInput": {"bucket": "other", "operation": "backfill", "runId": "r"}, "Items": []}
    with pytest.raises(ForeignBucketError, match="'other' is not the indexed bucket"):
        handler.write_batch(batch, lambda_context)
    with pytest.raises(ForeignBucketError):
        handler.sweep_segment(
            {"bucket": "other", "runId": "r", "segment": 0, "totalSegments": 1}, lambda_context
        )


def test_a_reconcile_batch_repairs_missing_and_stale_entries(env: Env, lambda_context: Any) -> None:
    items = [env.put(f"USER001_{n}.txt", b"y" * (n + 1)) for n in range(4)]
    run = handler.start_run({"operation": "backfill"}, lambda_context)["runId"]
    handler.write_batch(
        {"BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": run}, "Items": items},
        lambda_context,
    )
    # Break the index: one entry gone, one of the wrong size.
    env.dynamodb.delete_item(TableName=TABLE, Key={"objectKey": {"S": "USER001_0.txt"}})
    env.dynamodb.update_item(
        TableName=TABLE,
        Key={"objectKey": {"S": "USER001_1.txt"}},
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "size"},
        ExpressionAttributeValues={":s": {"N": "999"}},
    )
    run = handler.start_run({"operation": "reconcile"}, lambda_context)["runId"]
    batch = {"BatchInput": {"bucket": BUCKET, "operation": "reconcile", "runId": run}, "Items": items}
    counts = handler.write_batch(batch, lambda_context)
    assert counts == {"listed": 4, "missing": 1, "stale": 1, "orphaned": 0, "repaired": 2, "conflicts": 0}
    assert env.item("USER001_0.txt")["size"] == 1  # type: ignore[index]
    assert env.item("USER001_1.txt")["size"] == 2  # type: ignore[index]
    again = handler.write_batch(batch, lambda_context)
    assert again == {"listed": 4, "missing": 0, "stale": 0, "orphaned": 0, "repaired": 0, "conflicts": 0}


def test_sweep_segments_tombstone_entries_of_deleted_objects(env: Env, lambda_context: Any) -> None:
    items = [env.put(f"USER001_{n:03d}.txt", b"z") for n in range(250)]
    run = handler.start_run({"operation": "backfill"}, lambda_context)["runId"]
    handler.write_batch(
        {"BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": run}, "Items": items},
        lambda_context,
    )
    gone = {f"USER001_{n:03d}.txt" for n in range(0, 250, 7)}
    for key in gone:
        env.s3.delete_object(Bucket=BUCKET, Key=key)
    started = handler.start_run({"operation": "reconcile"}, lambda_context)
    orphaned = 0
    for segment in started["segments"]:
        step = {"bucket": BUCKET, "runId": started["runId"], **segment, "startKey": None}
        calls = 0
        while True:
            # No time left: each call reads one page, so the loop shows startKey carrying the sweep on.
            step = handler.sweep_segment(step, cast(Any, NoTimeContext()))
            calls += 1
            orphaned += step["counts"]["orphaned"]
            json.dumps(step)  # the state machine passes it on as JSON
            if step["done"]:
                break
            assert step["startKey"] is not None
        assert calls >= 1
    assert orphaned == len(gone)
    for n in range(250):
        key = f"USER001_{n:03d}.txt"
        item = env.item(key)
        assert item is not None
        assert bool(item.get("deleted")) == (key in gone), key
    state = env.state()
    assert state.counts["orphaned"] == len(gone)
    assert state.counts["repaired"] == len(gone)
    # Every item read is counted, the state record included (read, never judged).
    assert state.counts["swept"] == 251


def test_fail_run_records_the_error_and_keeps_building(env: Env, lambda_context: Any) -> None:
    run = handler.start_run({}, lambda_context)["runId"]
    handler.fail_run(
        {"bucket": BUCKET, "runId": run, "error": {"Error": "States.TaskFailed", "Cause": "boom"}},
        lambda_context,
    )
    state = env.state()
    assert state.state is State.BUILDING
    assert "States.TaskFailed" in state.last_error


def test_a_missing_variable_fails_the_cold_start_with_its_name(
    env: Env, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BUCKET_NAME")
    handler.cold_start.cache_clear()
    with pytest.raises(ConfigError, match="BUCKET_NAME"):
        handler.start_run({}, lambda_context)


class NoTimeContext(FakeLambdaContext):
    def get_remaining_time_in_millis(self) -> int:
        return 0


def test_batches_and_repairs_keep_the_name_index_in_step(
    env: Env, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With NAME_TABLE_NAME, a backfill batch gives each written entry its name items, and a reconcile
    that finds an object gone removes them with its entry."""
    names_table = "FileNameIndex"
    env.dynamodb.create_table(**schema.create_name_table_request(names_table))
    monkeypatch.setenv("NAME_TABLE_NAME", names_table)
    handler.cold_start.cache_clear()

    def name_keys() -> set[str]:
        return {item["objectKey"]["S"] for item in env.dynamodb.scan(TableName=names_table)["Items"]}

    items = [env.put("USER001_Invoice_March.pdf", b"x"), env.put("USER002/notes/Q3 plan.txt", b"yy")]
    run = handler.start_run({}, lambda_context)["runId"]
    batch = {"BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": run}, "Items": items}
    assert handler.write_batch(batch, lambda_context)["written"] == 2
    # Each key: its own item (folders), and one term item per term of its name.
    scanned = env.dynamodb.scan(TableName=names_table)["Items"]

    def count(key: str, *, terms: bool) -> int:
        return sum(
            1
            for item in scanned
            if item["objectKey"]["S"] == key
            and (f"|{name_items.TERM_MARK}" in item[schema.NAME_SCOPE]["S"]) == terms
        )

    assert count("USER001_Invoice_March.pdf", terms=False) == 1
    assert count("USER002/notes/Q3 plan.txt", terms=False) == 1
    assert count("USER001_Invoice_March.pdf", terms=True) == len(name_terms("Invoice_March.pdf"))
    assert count("USER002/notes/Q3 plan.txt", terms=True) == len(name_terms("Q3 plan.txt"))

    env.s3.delete_object(Bucket=BUCKET, Key="USER001_Invoice_March.pdf")
    run = handler.start_run({"operation": "reconcile"}, lambda_context)["runId"]
    for segment in range(3):
        handler.sweep_segment(
            {
                "bucket": BUCKET,
                "runId": run,
                "operation": "reconcile",
                "segment": segment,
                "totalSegments": 3,
            },
            lambda_context,
        )
    assert env.item("USER001_Invoice_March.pdf") is not None
    assert name_keys() == {"USER002/notes/Q3 plan.txt"}
