"""The state machine's Lambdas write and judge entries by the shard placement of their environment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from backfill import handler
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.write.differences import expected_z_address
from tests.integration.backfill.test_handler import BUCKET, TABLE, Env, NoTimeContext

PLACEMENT = ShardPlacement(bucket_shards=4, hot_users={"USER001": 2}, multi_attribute_index=True)


@pytest.fixture
def placement_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    for name, value in {
        "TABLE_NAME": TABLE,
        "BUCKET_NAME": BUCKET,
        "SCAN_SEGMENTS": "2",
        "POWERTOOLS_SERVICE_NAME": "file-backfill",
        **PLACEMENT.to_env(),
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE, multi_attribute_index=True))
        handler.cold_start.cache_clear()
        yield Env(s3, dynamodb)
        handler.cold_start.cache_clear()


def backfill(env: Env, items: list[dict[str, Any]], context: Any, operation: str = "backfill") -> Any:
    run = handler.start_run({"operation": operation}, context)
    counts = handler.write_batch(
        {"BatchInput": {"bucket": BUCKET, "operation": operation, "runId": run["runId"]}, "Items": items},
        context,
    )
    return run, counts


def test_a_backfill_batch_places_entries_by_the_placement(placement_env: Env, lambda_context: Any) -> None:
    items = [placement_env.put(f"USER00{n % 2 + 1}_file{n}.txt", b"x" * n) for n in range(12)]
    backfill(placement_env, items, lambda_context)
    for listed in items:
        key = listed["Key"]
        entry = placement_env.item(key)
        assert entry is not None
        user = key.split("_")[0]
        assert entry["bucketName"] == PLACEMENT.bucket_partition(BUCKET, key)
        assert entry["uploadUser"] == PLACEMENT.user_partition(user, key)
        assert entry.get("userShard", 0) == PLACEMENT.user_shard(user, key)
        assert entry["zAddress"] == expected_z_address(entry, PLACEMENT)
    assert {placement_env.item(i["Key"])["bucketName"] for i in items} != {BUCKET}  # type: ignore[index]


def test_a_reconcile_batch_places_entries_that_lack_their_address(
    placement_env: Env, lambda_context: Any
) -> None:
    items = [placement_env.put(f"USER001_file{n}.txt", b"y" * n) for n in range(5)]
    backfill(placement_env, items, lambda_context)
    for listed in items[:3]:
        placement_env.dynamodb.update_item(
            TableName=TABLE, Key={"objectKey": {"S": listed["Key"]}}, UpdateExpression="REMOVE zAddress"
        )
    _, counts = backfill(placement_env, items, lambda_context, operation="reconcile")
    assert counts == {
        "listed": 5,
        "missing": 0,
        "stale": 0,
        "orphaned": 0,
        "unplaced": 3,
        "repaired": 3,
        "conflicts": 0,
    }
    for listed in items:
        entry = placement_env.item(listed["Key"])
        assert entry is not None
        assert entry["zAddress"] == expected_z_address(entry, PLACEMENT)


def test_the_sweep_judges_entries_of_every_shard_of_the_bucket(
    placement_env: Env, lambda_context: Any
) -> None:
    items = [placement_env.put(f"USER002_{n:03d}.txt", b"z") for n in range(20)]
    backfill(placement_env, items, lambda_context)
    for listed in items:
        placement_env.s3.delete_object(Bucket=BUCKET, Key=listed["Key"])
    started = handler.start_run({"operation": "reconcile"}, lambda_context)
    orphaned = 0
    for segment in started["segments"]:
        step = {"bucket": BUCKET, "runId": started["runId"], **segment, "startKey": None}
        while True:
            step = handler.sweep_segment(step, NoTimeContext())  # type: ignore[arg-type]
            orphaned += step["counts"]["orphaned"]
            if step["done"]:
                break
    # Entries whose bucketName is a shard value (`fileupload.a#k`) are the bucket's too.
    assert orphaned == 20
    for listed in items:
        tombstone = placement_env.item(listed["Key"])
        assert tombstone is not None
        assert tombstone["deleted"] is True
        assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & tombstone.keys()
