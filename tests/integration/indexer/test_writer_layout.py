"""The writer places entries by the shard placement: bucket shards, hot users' shards, the Z-order address.

On moto and DynamoDB Local, on a table with all three indexes: an entry is in exactly the partition the
placement names on each index, an overwrite stays in its shard, and every way an entry becomes a tombstone
(a delete, a delete marker, the hide of a permanent version delete) takes it out of every index,
`userShard` and `zAddress` included.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema, shards, zorder
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.write.conditions import Outcome
from file_index.write.entry_items import entry_item
from file_index.write.writer import apply_event
from tests.integration.conftest import DynamoDBLocal
from tests.integration.indexer.conftest import BUCKET, FAKE_CREDENTIALS, Engine
from tests.integration.indexer.notifications import query_keys, read_items
from tests.integration.indexer.test_writer import NOW, History, delete, event, put

HOT = "USER001"
PLACEMENT = ShardPlacement(bucket_shards=8, hot_users={HOT: 4}, multi_attribute_index=True)


def keys_of(user: str, count: int = 24) -> list[str]:
    return [f"{user}_file-{n:03}.txt" for n in range(count)]


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def z_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """A table with the Z-order index as well, on moto or DynamoDB Local; the bucket exists on moto."""
    request_kwargs = schema.create_table_request(
        f"FileMetaData-{uuid.uuid4().hex[:8]}", multi_attribute_index=True
    )
    if request.param == "moto":
        with mock_aws():
            client = boto3.client("dynamodb")
            client.create_table(**request_kwargs)
            boto3.client("s3").create_bucket(Bucket=BUCKET)
            yield Engine("moto", client, request_kwargs["TableName"])
        return
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local.endpoint_url)
    with mock_aws(), mock.patch.dict(os.environ, FAKE_CREDENTIALS):
        client = local.client()
        client.create_table(**request_kwargs)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        try:
            yield Engine("dynamodb_local", client, request_kwargs["TableName"])
        finally:
            client.delete_table(TableName=request_kwargs["TableName"])


def apply(engine: Engine, *events: ObjectEvent, placement: ShardPlacement = PLACEMENT) -> list[Outcome]:
    s3 = boto3.client("s3")
    return [
        apply_event(engine.client, engine.table_name, e, s3=s3, now=NOW, placement=placement) for e in events
    ]


def item(engine: Engine, key: str) -> dict[str, Any] | None:
    return read_items(engine.client, engine.table_name, [key])[key]


def every_index(engine: Engine, key: str) -> dict[str, set[str]]:
    """Index name -> the partition values under which `key` shows (one at most, for a placed entry)."""
    found: dict[str, set[str]] = {}
    for index in schema.global_indexes(True):
        values = (
            PLACEMENT.bucket_partitions(BUCKET)
            if index.partition_key.name == schema.BUCKET_NAME
            else [
                *PLACEMENT.user_partitions(HOT),
                "USER002",
            ]
        )
        found[index.name] = {
            value for value in values if key in query_keys(engine.client, engine.table_name, index, value)
        }
    return found


# -- entry_item: the attributes -----------------------------------------------------------------------------


def test_the_default_placement_writes_the_entries_of_release_0_2_0() -> None:
    created = put("0A", size=5, key="USER001_a.txt")
    assert entry_item(created, "k") == {
        "objectKey": "USER001_a.txt",
        "bucketName": BUCKET,
        "fileId": "a.txt",
        "size": 5,
        "uploadUser": "USER001",
        "uploadDate": created.upload_date,
        "orderKey": "k",
        "sequencer": "0A",
        "eTag": created.e_tag,
    }


def test_an_entry_carries_its_shard_values_user_shard_and_z_address() -> None:
    seen_user_shards = set()
    for key in keys_of(HOT, 40):
        created = put("0A", size=1234, key=key)
        entry = entry_item(created, None, PLACEMENT)
        bucket_shard = shards.shard_of(key, 8)
        assert entry["bucketName"] == (BUCKET if bucket_shard == 0 else f"{BUCKET}#{bucket_shard}")
        user_shard = shards.shard_of(key, 4)
        seen_user_shards.add(user_shard)
        if user_shard:
            assert (entry["uploadUser"], entry["userShard"]) == (f"{HOT}#{user_shard}", user_shard)
        else:
            assert entry["uploadUser"] == HOT
            assert "userShard" not in entry
        assert entry["zAddress"] == zorder.encode(zorder.epoch_millis(created.upload_date), 1234)
        assert PLACEMENT.public_bucket(entry["bucketName"]) == BUCKET
        assert PLACEMENT.public_user(entry["uploadUser"], entry.get("userShard")) == HOT
    assert seen_user_shards == {0, 1, 2, 3}
    # A user who is not hot is never sharded and never carries userShard.
    normal = entry_item(put("0A", key="USER002_x.txt"), None, PLACEMENT)
    assert normal["uploadUser"] == "USER002"
    assert "userShard" not in normal
    # A key without a user is in no user index, whatever the placement.
    nobody = entry_item(put("0A", key="no-user-here.txt"), None, PLACEMENT)
    assert {"uploadUser", "userShard"}.isdisjoint(nobody)


def test_z_address_is_written_only_when_the_z_order_index_is_on() -> None:
    created = put("0A", key=keys_of(HOT)[0])
    sharded_only = ShardPlacement(bucket_shards=8, hot_users={HOT: 4})
    assert "zAddress" not in entry_item(created, None, sharded_only)
    assert "zAddress" in entry_item(created, None, PLACEMENT)


def test_an_entry_needs_a_size() -> None:
    removal = delete("0A")
    with pytest.raises(ValueError, match="has no size"):
        entry_item(removal, None, PLACEMENT)


# -- apply_event on a real table ----------------------------------------------------------------------------


def test_a_create_shows_in_exactly_its_shard_of_every_index(z_engine: Engine) -> None:
    keys = keys_of(HOT, 12)
    apply(z_engine, *(put("0A", size=10 + n, key=key) for n, key in enumerate(keys)))
    for key in keys:
        stored = item(z_engine, key)
        assert stored is not None
        expected = {
            schema.BUCKET_SIZE_INDEX.name: {PLACEMENT.bucket_partition(BUCKET, key)},
            schema.BUCKET_DATE_INDEX.name: {PLACEMENT.bucket_partition(BUCKET, key)},
            schema.Z_ORDER_INDEX.name: {PLACEMENT.bucket_partition(BUCKET, key)},
            schema.USER_DATE_INDEX.name: {PLACEMENT.user_partition(HOT, key)},
            schema.USER_SIZE_INDEX.name: {PLACEMENT.user_partition(HOT, key)},
        }
        assert every_index(z_engine, key) == expected


def test_an_overwrite_keeps_the_shard_and_moves_the_z_address(z_engine: Engine) -> None:
    key = next(k for k in keys_of(HOT, 40) if shards.shard_of(k, 8) and shards.shard_of(k, 4))
    apply(z_engine, put("0A", size=10, key=key))
    first = item(z_engine, key)
    assert apply(z_engine, put("0B", size=10_000_000, key=key)) == [Outcome.WRITTEN]
    second = item(z_engine, key)
    assert first is not None
    assert second is not None
    assert (second["bucketName"], second["uploadUser"], second["userShard"]) == (
        first["bucketName"],
        first["uploadUser"],
        first["userShard"],
    )
    assert second["zAddress"] != first["zAddress"]
    assert second["zAddress"] == zorder.encode(zorder.epoch_millis(second["uploadDate"]), 10_000_000)
    assert set().union(*every_index(z_engine, key).values()) == {second["bucketName"], second["uploadUser"]}


def test_a_delete_and_a_delete_marker_leave_every_index(z_engine: Engine) -> None:
    deleted, hidden = [k for k in keys_of(HOT, 40) if shards.shard_of(k, 4)][:2]
    apply(z_engine, put("0A", key=deleted), put("0A", key=hidden, version_id="v1"))
    assert apply(z_engine, delete("0B", key=deleted)) == [Outcome.DELETED]
    assert apply(
        z_engine, event("ObjectRemoved:DeleteMarkerCreated", key=hidden, sequencer="0B", version_id="m")
    ) == [Outcome.DELETED]
    for key in (deleted, hidden):
        tombstone = item(z_engine, key)
        assert tombstone is not None
        assert tombstone["deleted"] is True
        assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & tombstone.keys()
        assert every_index(z_engine, key) == {index.name: set() for index in schema.global_indexes(True)}


def test_the_bookkeeping_update_path_places_the_entry_and_its_tombstone_leaves_every_index(
    z_engine: Engine,
) -> None:
    """Events older than a recorded version delete are written by UpdateItem (keeping the bookkeeping):
    a create there is placed like any other, and a tombstone there drops zAddress and userShard."""
    key = next(k for k in keys_of(HOT, 40) if shards.shard_of(k, 4))
    assert apply(z_engine, put("0B", size=5, key=key, version_id="v2")) == [Outcome.WRITTEN]
    # The purge of an older version, recorded on the entry: purgedUntil = 0F, the entry stays at 0B.
    purge = event("ObjectRemoved:Delete", key=key, sequencer="0F", version_id="v1")
    assert apply(z_engine, purge) == [Outcome.STALE]
    assert item(z_engine, key)["purgedUntil"] == purge.order_key  # type: ignore[index]
    assert apply(z_engine, put("0C", size=77, key=key, version_id="v3")) == [Outcome.WRITTEN]
    stored = item(z_engine, key)
    assert stored is not None
    assert stored["purgedUntil"] == purge.order_key  # the update path kept the bookkeeping
    assert (stored["size"], stored["userShard"]) == (77, shards.shard_of(key, 4))
    assert stored["zAddress"] == zorder.encode(zorder.epoch_millis(stored["uploadDate"]), 77)
    assert every_index(z_engine, key)[schema.Z_ORDER_INDEX.name] == {stored["bucketName"]}
    hide = event("ObjectRemoved:DeleteMarkerCreated", key=key, sequencer="0D", version_id="m")
    assert apply(z_engine, hide) == [Outcome.DELETED]
    tombstone = item(z_engine, key)
    assert tombstone is not None
    assert tombstone["purgedUntil"] == purge.order_key
    assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & tombstone.keys()
    assert every_index(z_engine, key) == {index.name: set() for index in schema.global_indexes(True)}


def test_the_hide_and_lookup_of_a_permanent_delete_place_the_version_current_again(
    z_engine: Engine,
) -> None:
    history = History(boto3.client("s3"))
    v1, v2 = history.put(1), history.put(2_000)
    assert apply(z_engine, v1, v2) == [Outcome.WRITTEN, Outcome.WRITTEN]
    purge_v2 = history.purge(v2.version_id)
    assert apply(z_engine, purge_v2) == [Outcome.WRITTEN]
    stored = item(z_engine, v1.key)
    assert stored is not None
    assert (stored["size"], stored["bucketName"]) == (1, PLACEMENT.bucket_partition(BUCKET, v1.key))
    assert stored["zAddress"] == zorder.encode(zorder.epoch_millis(stored["uploadDate"]), 1)
    assert PLACEMENT.public_user(stored["uploadUser"], stored.get("userShard")) == HOT
    # The purge of the only version left hides the key: out of every index.
    assert apply(z_engine, history.purge(v1.version_id)) == [Outcome.DELETED]
    hidden = item(z_engine, v1.key)
    assert hidden is not None
    assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & hidden.keys()
    assert every_index(z_engine, v1.key) == {index.name: set() for index in schema.global_indexes(True)}
