"""Backfill and repair writes on moto and DynamoDB Local: conditional, positionless, bookkeeping kept."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import ObjectEvent
from file_index.store.entries import get_items, plain_item
from file_index.write.conditions import Outcome
from file_index.write.differences import Difference, difference
from file_index.write.listed_objects import BackfillOutcome, ListedObject, backfill_object
from file_index.write.repair import repair
from file_index.write.writer import apply_event

BUCKET = "fileupload.a"
PLACEMENT = KeyPattern.parse("default")
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@dataclass
class Table:
    client: Any
    name: str
    s3: Any

    def apply(self, event: ObjectEvent) -> Outcome:
        return apply_event(self.client, self.name, event, s3=self.s3)

    def item(self, key: str) -> dict[str, Any] | None:
        raw = self.client.get_item(TableName=self.name, Key={"objectKey": {"S": key}}, ConsistentRead=True)
        return plain_item(raw["Item"]) if "Item" in raw else None

    def put(self, item: dict[str, Any]) -> None:
        from file_index.store.sdk import serialize

        self.client.put_item(TableName=self.name, Item=serialize(item))


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def table(request: pytest.FixtureRequest) -> Iterator[Table]:
    # S3 is always moto's: the writer HEADs the object after a permanent delete of the version it holds.
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        if request.param == "moto":
            client: Any = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(**schema.create_table_request("repair-test"))
            yield Table(client, "repair-test", s3)
        else:
            name = request.getfixturevalue("dynamodb_local_table")
            yield Table(request.getfixturevalue("dynamodb_local").client(), name, s3)


def listed(
    key: str = "USER001_a.txt", size: int = 10, e_tag: str = "e1", version: str | None = None
) -> ListedObject:
    return ListedObject(key=key, size=size, e_tag=e_tag, last_modified=T0, version_id=version)


def event(
    name: str,
    key: str = "USER001_a.txt",
    *,
    sequencer: str,
    size: int | None = 10,
    version: str | None = None,
) -> ObjectEvent:
    removal = name.startswith("ObjectRemoved")
    return ObjectEvent(
        event_name=name,
        bucket=BUCKET,
        key=key,
        event_time=T0,
        sequencer=sequencer,
        size=None if removal else size,
        e_tag=None if removal else f"etag{sequencer}",
        version_id=version,
        upload_user="USER001",
        file_id="a.txt",
    )


def test_backfill_writes_only_where_the_index_has_no_item(table: Table) -> None:
    assert backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT) is BackfillOutcome.WRITTEN
    item = table.item("USER001_a.txt")
    assert item is not None
    assert item["size"] == 10
    assert item["eTag"] == "e1"
    assert item["uploadUser"] == "USER001"
    assert item["fileId"] == "a.txt"
    assert item["uploadDate"] == "2024-05-01T12:00:00.000Z"
    assert "orderKey" not in item
    assert "sequencer" not in item
    # A second listing of another version changes nothing: the item is there.
    assert (
        backfill_object(table.client, table.name, BUCKET, listed(size=99), PLACEMENT)
        is BackfillOutcome.SKIPPED
    )
    assert table.item("USER001_a.txt") == item


def test_backfill_never_overwrites_a_live_event_nor_a_tombstone(table: Table) -> None:
    table.apply(event("ObjectCreated:Put", "USER001_live.txt", sequencer="10"))
    table.apply(event("ObjectRemoved:Delete", "USER001_gone.txt", sequencer="20"))
    live_before, gone_before = table.item("USER001_live.txt"), table.item("USER001_gone.txt")
    for key in ("USER001_live.txt", "USER001_gone.txt"):
        outcome = backfill_object(table.client, table.name, BUCKET, listed(key, size=1), PLACEMENT)
        assert outcome is BackfillOutcome.SKIPPED
    assert table.item("USER001_live.txt") == live_before
    assert table.item("USER001_gone.txt") == gone_before


def test_any_live_event_replaces_a_backfilled_entry(table: Table) -> None:
    backfill_object(table.client, table.name, BUCKET, listed(), PLACEMENT)
    assert table.apply(event("ObjectRemoved:Delete", sequencer="01")) is Outcome.DELETED
    item = table.item("USER001_a.txt")
    assert item is not None
    assert item["deleted"] is True


def test_a_missing_entry_is_written_without_a_position(table: Table) -> None:
    assert repair(table.client, table.name, BUCKET, "USER001_a.txt", None, listed(version="v1"), PLACEMENT)
    item = table.item("USER001_a.txt")
    assert item is not None
    assert item["versionId"] == "v1"
    assert "orderKey" not in item
    # Written only while there is no item: a second repair from the same read is a conflict.
    assert not repair(table.client, table.name, BUCKET, "USER001_a.txt", None, listed(size=5), PLACEMENT)
    assert table.item("USER001_a.txt") == item


def test_a_stale_entry_is_rewritten_keeping_its_position_and_bookkeeping(table: Table) -> None:
    table.apply(event("ObjectCreated:Put", sequencer="50", version="v1"))
    # Bookkeeping the repair does not know about must survive it.
    table.client.update_item(
        TableName=table.name,
        Key={"objectKey": {"S": "USER001_a.txt"}},
        UpdateExpression="SET nullPurgedAt = :t ADD deletedVersions :v",
        ExpressionAttributeValues={":t": {"S": "#2024"}, ":v": {"SS": ["v0"]}},
    )
    read = table.item("USER001_a.txt")
    assert read is not None
    current = listed(size=77, e_tag="e77", version="v2")
    assert difference(read, current) is Difference.STALE
    assert repair(table.client, table.name, BUCKET, "USER001_a.txt", read, current, PLACEMENT)
    item = table.item("USER001_a.txt")
    assert item is not None
    assert (item["size"], item["eTag"], item["versionId"]) == (77, "e77", "v2")
    assert item["orderKey"] == read["orderKey"]
    assert item["deletedVersions"] == {"v0"}
    assert item["nullPurgedAt"] == "#2024"
    assert "sequencer" not in item
    assert difference(item, current) is None
    # It took no position: the older create it replaced still changes nothing, a later one applies.
    assert table.apply(event("ObjectCreated:Put", sequencer="50")) is Outcome.STALE
    assert table.apply(event("ObjectCreated:Put", sequencer="51")) is Outcome.WRITTEN


def test_an_orphaned_entry_becomes_a_tombstone_that_keeps_its_position(table: Table) -> None:
    table.apply(event("ObjectCreated:Put", sequencer="50"))
    read = table.item("USER001_a.txt")
    assert read is not None
    assert difference(read, None) is Difference.ORPHANED
    assert repair(table.client, table.name, BUCKET, "USER001_a.txt", read, None, PLACEMENT)
    item = table.item("USER001_a.txt")
    assert item is not None
    assert item["deleted"] is True
    assert item["expiresAt"] > T0.timestamp()
    assert item["orderKey"] == read["orderKey"]
    assert not schema.GSI_KEY_ATTRIBUTES & item.keys()
    assert difference(item, None) is None
    # A duplicate of the create it hid changes nothing; the next upload shows again.
    assert table.apply(event("ObjectCreated:Put", sequencer="50")) is Outcome.STALE
    assert table.apply(event("ObjectCreated:Put", sequencer="60")) is Outcome.WRITTEN


def test_a_tombstone_with_version_bookkeeping_is_repaired_into_an_entry(table: Table) -> None:
    # A tombstone as the writer leaves it after permanent deletes of versions.
    table.put(
        {
            "objectKey": "USER001_a.txt",
            "orderKey": "3".ljust(64, "0"),
            "deleted": True,
            "expiresAt": 2_000_000_000,
            "deletedVersions": {"v1"},
            "nullPurgedAt": "2".ljust(64, "0"),
            "purgedUntil": "3".ljust(64, "0"),
        }
    )
    read = table.item("USER001_a.txt")
    assert read is not None
    assert difference(read, listed(version="v2")) is Difference.MISSING
    assert repair(table.client, table.name, BUCKET, "USER001_a.txt", read, listed(version="v2"), PLACEMENT)
    item = table.item("USER001_a.txt")
    assert item is not None
    assert "deleted" not in item
    assert "expiresAt" not in item
    assert item["versionId"] == "v2"
    kept = ("orderKey", "deletedVersions", "nullPurgedAt", "purgedUntil")
    assert {name: item[name] for name in kept} == {name: read[name] for name in kept}


def test_a_bookkeeping_attribute_added_since_the_read_stops_the_repair(table: Table) -> None:
    table.apply(event("ObjectCreated:Put", sequencer="50", version="v1"))
    read = table.item("USER001_a.txt")
    assert read is not None
    # What the writer does when it records a version delete without hiding the entry.
    table.client.update_item(
        TableName=table.name,
        Key={"objectKey": {"S": "USER001_a.txt"}},
        UpdateExpression="SET purgedUntil = :p",
        ExpressionAttributeValues={":p": {"S": "6".ljust(64, "0")}},
    )
    assert not repair(table.client, table.name, BUCKET, "USER001_a.txt", read, listed(size=1), PLACEMENT)
    assert table.item("USER001_a.txt")["purgedUntil"] == "6".ljust(64, "0")  # type: ignore[index]


@pytest.mark.parametrize(
    "meanwhile",
    [
        event("ObjectCreated:Put", sequencer="60", size=3),
        event("ObjectRemoved:DeleteMarkerCreated", sequencer="60", version="m1"),
        event("ObjectRemoved:Delete", sequencer="60", version="v1"),
    ],
    ids=["newer-create", "delete-marker", "permanent-delete-of-the-held-version"],
)
def test_a_live_event_between_read_and_repair_wins(table: Table, meanwhile: ObjectEvent) -> None:
    table.apply(event("ObjectCreated:Put", sequencer="50", version="v1"))
    read = table.item("USER001_a.txt")
    assert read is not None
    assert table.apply(meanwhile) in (Outcome.WRITTEN, Outcome.DELETED)
    after_event = table.item("USER001_a.txt")
    for current in (listed(size=99, version="v9"), None):
        assert not repair(table.client, table.name, BUCKET, "USER001_a.txt", read, current, PLACEMENT)
    assert table.item("USER001_a.txt") == after_event


def test_get_items_reads_more_keys_than_one_batch(table: Table) -> None:
    keys = [f"USER001_{number:04d}" for number in range(230)]
    for key in keys[::2]:
        backfill_object(table.client, table.name, BUCKET, listed(key), PLACEMENT)
    found = get_items(table.client, table.name, keys)
    assert sorted(found) == keys[::2]
