"""Repairs under an shard placement, on moto and DynamoDB Local: placement by the placement, the zAddress
update that a concurrent write always wins, and what counts as a difference of placement."""

from __future__ import annotations

from typing import Any

import pytest

from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.write.differences import Difference, difference, expected_z_address
from file_index.write.listed_objects import backfill_object
from file_index.write.repair import Placement, Repair, Repairer, place_entry, repair
from tests.integration.admin.test_repair_writes import BUCKET, PLACEMENT, Table, event, listed, table

__all__ = ["table"]  # the engine-parametrised fixture

Z_PLACEMENT = ShardPlacement(bucket_shards=4, hot_users={"USER001": 2}, multi_attribute_index=True)
KEY = "USER001_a.txt"


class NoS3:
    """An S3 client that must not be used: a placement needs no HEAD."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"S3 was called: {name}")


def test_backfill_and_repair_place_the_entry_by_the_placement(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(size=5), PLACEMENT, Z_PLACEMENT)
    backfilled = table.item(KEY)
    assert backfilled is not None
    assert backfilled["bucketName"] == Z_PLACEMENT.bucket_partition(BUCKET, KEY)
    assert backfilled["uploadUser"] == Z_PLACEMENT.user_partition("USER001", KEY)
    assert backfilled.get("userShard", 0) == Z_PLACEMENT.user_shard("USER001", KEY)
    assert backfilled["zAddress"] == expected_z_address(backfilled, Z_PLACEMENT)
    # A repair to another version keeps the shard and moves the address.
    assert repair(
        table.client,
        table.name,
        BUCKET,
        KEY,
        backfilled,
        listed(size=9_999),
        PLACEMENT,
        shard_placement=Z_PLACEMENT,
    )
    repaired = table.item(KEY)
    assert repaired is not None
    assert (repaired["bucketName"], repaired["uploadUser"]) == (
        backfilled["bucketName"],
        backfilled["uploadUser"],
    )
    assert repaired["zAddress"] == expected_z_address(repaired, Z_PLACEMENT) != backfilled["zAddress"]
    # A repair to "gone" leaves every index: no key attribute, no userShard, no zAddress.
    assert repair(
        table.client, table.name, BUCKET, KEY, repaired, None, PLACEMENT, shard_placement=Z_PLACEMENT
    )
    tombstone = table.item(KEY)
    assert tombstone is not None
    assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & tombstone.keys()


def test_an_entry_of_a_smaller_shard_count_is_no_difference(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT)  # unsharded: shard 0, no address
    entry = table.item(KEY)
    assert entry is not None
    sharded = ShardPlacement(bucket_shards=16, hot_users={"USER001": 8})
    assert difference(entry, listed(), placement=sharded) is None
    assert difference(entry, listed(), placement=Z_PLACEMENT) is Difference.UNPLACED
    assert difference(entry, listed(size=11), placement=Z_PLACEMENT) is Difference.STALE  # the version first
    assert difference(entry, None, placement=Z_PLACEMENT) is Difference.ORPHANED


def test_place_entry_sets_the_address_only_while_the_entry_is_unchanged(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT)
    read = table.item(KEY)
    assert read is not None
    assert place_entry(table.client, table.name, read, Z_PLACEMENT) is Placement.UPDATED
    placed = table.item(KEY)
    assert placed is not None
    assert placed == {**read, "zAddress": expected_z_address(read, Z_PLACEMENT)}
    assert place_entry(table.client, table.name, placed, Z_PLACEMENT) is Placement.ALREADY
    # A live event lands after the read: the stale read's update must not apply.
    table.client.update_item(
        TableName=table.name, Key={"objectKey": {"S": KEY}}, UpdateExpression="REMOVE zAddress"
    )
    stale_read = table.item(KEY)
    assert stale_read is not None
    table.apply(event("ObjectCreated:Put", sequencer="05", size=300))
    after_event = table.item(KEY)
    assert place_entry(table.client, table.name, stale_read, Z_PLACEMENT) is Placement.SKIPPED
    assert table.item(KEY) == after_event
    # Same size and date but another position (an event that wrote the same size): still skipped.
    assert after_event is not None
    same_shape = {**after_event, "orderKey": "00"}
    assert place_entry(table.client, table.name, same_shape, Z_PLACEMENT) is Placement.SKIPPED
    # A tombstone is never given an address, even if read as live before the delete.
    read_live = table.item(KEY)
    table.apply(event("ObjectRemoved:Delete", sequencer="06"))
    assert read_live is not None
    assert place_entry(table.client, table.name, read_live, Z_PLACEMENT) is Placement.SKIPPED
    assert "zAddress" not in (table.item(KEY) or {})


def test_place_entry_leaves_a_placed_entry_and_refuses_a_tombstone(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT)
    entry = table.item(KEY)
    assert entry is not None
    # The Z-order index off and the entry in shard 0: nothing to place.
    assert place_entry(table.client, table.name, entry, ShardPlacement()) is Placement.ALREADY
    assert table.item(KEY) == entry
    with pytest.raises(ValueError, match="tombstone"):
        place_entry(table.client, table.name, {**entry, "deleted": True}, Z_PLACEMENT)


def test_the_repairer_places_an_entry_without_a_head_and_a_dry_run_writes_nothing(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT)
    entry = table.item(KEY)
    assert entry is not None
    dry = Repairer(
        NoS3(), table.client, table.name, BUCKET, PLACEMENT, dry_run=True, shard_placement=Z_PLACEMENT
    )
    assert dry.check(KEY, entry, listed(), compare_versions=False) is not None
    assert table.item(KEY) == entry
    repairer = Repairer(NoS3(), table.client, table.name, BUCKET, PLACEMENT, shard_placement=Z_PLACEMENT)
    finding = repairer.check(KEY, entry, listed(), compare_versions=False)
    assert finding is not None
    assert (finding.kind, finding.result) == (Difference.UNPLACED, Repair.FIXED)
    placed = table.item(KEY)
    assert placed is not None
    assert repairer.check(KEY, placed, listed(), compare_versions=False) is None
    # The entry changed since it was read (an event at another size): the placement is a conflict.
    table.apply(event("ObjectCreated:Put", sequencer="07", size=10))
    conflict = repairer.check(KEY, entry, listed(), compare_versions=False)
    assert conflict is not None
    assert conflict.result is Repair.CONFLICT


# A placement that was never deployed (cdk.json raised before the deploy) and the one that was.
UNDEPLOYED = ShardPlacement(bucket_shards=64, hot_users={"USER001": 8})
DEPLOYED = ShardPlacement(bucket_shards=4)


def _key_outside(placement: ShardPlacement, deployed: ShardPlacement) -> str:
    """A key that `placement` writes to a bucket shard and a user shard `deployed` never reads."""
    for index in range(10_000):
        key = f"USER001_{index}.txt"
        bucket_shard = int(placement.bucket_partition(BUCKET, key).partition("#")[2] or 0)
        if bucket_shard >= deployed.bucket_shards and placement.user_shard("USER001", key) > 0:
            return key
    raise AssertionError("no such key")


def test_an_entry_outside_the_deployed_shards_is_unplaced_and_moved(table: Table) -> None:
    key = _key_outside(UNDEPLOYED, DEPLOYED)
    backfill_object(table.client, table.name, BUCKET, listed(key=key, size=5), PLACEMENT, UNDEPLOYED)
    entry = table.item(key)
    assert entry is not None
    assert entry["bucketName"] != DEPLOYED.bucket_partition(BUCKET, key)
    assert entry["userShard"] > 0
    # Where the deployed readers never look: a difference of placement, not of content.
    assert difference(entry, listed(key=key, size=5), placement=UNDEPLOYED) is None
    assert difference(entry, listed(key=key, size=5), placement=DEPLOYED) is Difference.UNPLACED
    repairer = Repairer(NoS3(), table.client, table.name, BUCKET, PLACEMENT, shard_placement=DEPLOYED)
    finding = repairer.check(key, entry, listed(key=key, size=5), compare_versions=False)
    assert finding is not None
    assert (finding.kind, finding.result) == (Difference.UNPLACED, Repair.FIXED)
    moved = table.item(key)
    assert moved is not None
    assert moved["bucketName"] == DEPLOYED.bucket_partition(BUCKET, key)
    assert moved["uploadUser"] == "USER001"  # not hot in the deployed placement: the plain user
    assert "userShard" not in moved
    assert {k: v for k, v in moved.items() if k not in ("bucketName", "uploadUser", "userShard")} == {
        k: v for k, v in entry.items() if k not in ("bucketName", "uploadUser", "userShard")
    }
    assert difference(moved, listed(key=key, size=5), placement=DEPLOYED) is None


def test_a_move_outside_the_shards_loses_to_an_event(table: Table) -> None:
    key = _key_outside(UNDEPLOYED, DEPLOYED)
    backfill_object(table.client, table.name, BUCKET, listed(key=key, size=5), PLACEMENT, UNDEPLOYED)
    read = table.item(key)
    assert read is not None
    # The deployed indexer rewrites the entry (another upload) before the move: the move is skipped.
    table.apply(event("ObjectCreated:Put", key=key, sequencer="08", size=6))
    assert place_entry(table.client, table.name, read, DEPLOYED) is Placement.SKIPPED
    now = table.item(key)
    assert now is not None
    assert now["size"] == 6
