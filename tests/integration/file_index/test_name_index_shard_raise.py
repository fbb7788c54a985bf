"""The name index across a raise of `bucketIndexShards`: every folder and name list answers each file once.

An entry is written to the shard its writer's placement gives its key; raising the count moves a key's next
overwrite to another shard. These tests write a key's events under the placement before and after a raise
(1 shard, then 16) through the writer (`writer.apply_event` with a `NameIndex`), then read the folder and
the words of the key as the search does (`NameReader`), on moto and on DynamoDB Local.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.read.name_query import NameQuery
from file_index.read.name_reader import NameReader
from file_index.read.reader import FileReader
from file_index.rules import schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.name_items import term_items
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import plain_item
from file_index.write.listed_objects import ListedObject
from file_index.write.name_sync import sync_names
from file_index.write.names import NameIndex
from file_index.write.repair import Placement, place_entry, repair
from file_index.write.writer import apply_event
from tests.integration.conftest import DynamoDBLocal

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)

BUCKET = "fileupload.a"
USER = "alice"
BEFORE = ShardPlacement()
AFTER = ShardPlacement(bucket_shards=16)
START = datetime(2024, 5, 1, 10, tzinfo=UTC)


KEYS = KeyPattern.parse(None)
NameKey = tuple[str, str, str | None]


def moved_key(name: str, moves: Callable[[str], bool] | None = None) -> str:
    """A key of alice's reports folder that 16 shards place outside shard 0 (where 1 shard puts it), and
    that `moves` accepts."""
    for n in range(200):
        key = f"{USER}/reports/{name}-{n}.txt"
        if AFTER.bucket_partition(BUCKET, key) != BUCKET and (moves is None or moves(key)):
            return key
    raise AssertionError("no candidate key fits")


@dataclass
class Tables:
    dynamodb: Any
    s3: Any
    table: str
    name_table: str
    position: int = 0

    @property
    def names(self) -> NameIndex:
        return NameIndex(self.dynamodb, self.name_table, entry_table=self.table)

    def apply(
        self,
        kind: str,
        key: str,
        placement: ShardPlacement,
        *,
        position: int | None = None,
        version_id: str | None = None,
    ) -> NameIndex:
        """Apply the event `kind` of `key` ("put"; "delete" in an unversioned bucket; "purge", the
        permanent delete of `version_id`) at the next position of the history, or at `position` (a late
        delivery of an earlier event). Returns the name index writer the event used."""
        if position is None:
            self.position += 1
            position = self.position
        parts = KEYS.split(key)
        event = ObjectEvent(
            event_name={
                "put": "ObjectCreated:Put",
                "delete": "ObjectRemoved:Delete",
                "purge": "ObjectRemoved:Delete",
            }[kind],
            bucket=BUCKET,
            key=key,
            event_time=START + timedelta(seconds=position),
            sequencer=f"{position:016X}",
            size=100 + position if kind == "put" else None,
            e_tag=f"etag-{position}" if kind == "put" else None,
            version_id=version_id,
            upload_user=parts.upload_user,
            file_id=parts.file_id,
        )
        names = self.names
        apply_event(self.dynamodb, self.table, event, s3=self.s3, placement=placement, names=names)
        return names

    def entries(self) -> list[dict[str, Any]]:
        """Every live entry of the table."""
        paginator = self.dynamodb.get_paginator("scan")
        found = []
        for page in paginator.paginate(TableName=self.table, ConsistentRead=True):
            for raw in page["Items"]:
                entry = plain_item(raw)
                if not entry.get(schema.DELETED) and schema.BUCKET_NAME in entry:
                    found.append(entry)
        return found

    def entry(self, key: str) -> dict[str, Any]:
        response = self.dynamodb.get_item(
            TableName=self.table, Key={schema.OBJECT_KEY: {"S": key}}, ConsistentRead=True
        )
        return plain_item(response["Item"])

    def name_keys(self) -> set[NameKey]:
        """Every item of the name index: its key and the user partition it is under."""
        paginator = self.dynamodb.get_paginator("scan")
        return {
            (raw[schema.NAME_SCOPE]["S"], raw[schema.NAME_SORT]["S"], raw.get(schema.NAME_USER, {}).get("S"))
            for page in paginator.paginate(TableName=self.name_table, ConsistentRead=True)
            for raw in page["Items"]
        }

    def expected_name_keys(self) -> set[NameKey]:
        """What `index-names` gives the live entries: the items of each entry's stored partitions."""
        return {
            (item[schema.NAME_SCOPE], item[schema.NAME_SORT], item.get(schema.NAME_USER))
            for entry in self.entries()
            for item in self.names.items_of(entry, "")
        }

    def stale_items(self, key: str, bucket_partition: str) -> None:
        """Name items of `key` under `bucket_partition`, as a shard move before this release left them."""
        entry = {**self.entry(key), schema.BUCKET_NAME: bucket_partition}
        self.names.put_entry(entry, "")

    def reader(self, placement: ShardPlacement = AFTER) -> NameReader:
        table = boto3.resource("dynamodb", endpoint_url=self.dynamodb.meta.endpoint_url).Table(self.table)
        return NameReader(
            table.meta.client,
            self.table,
            self.name_table,
            placement=placement,
            entries=FileReader(table, placement),
        )

    def pages(
        self, query: NameQuery, *, limit: int = 100, placement: ShardPlacement = AFTER
    ) -> tuple[list[str], list[str]]:
        """Every key and every sub-folder of `query`, page after page."""
        reader = self.reader(placement)
        keys: list[str] = []
        folders: list[str] = []
        position = None
        for _ in range(100):
            page = reader.list_files(query, limit=limit, position=position)
            keys += [item[schema.OBJECT_KEY] for item in page.items]
            folders += page.common_prefixes or []
            position = page.next_position
            if position is None:
                return keys, folders
        raise AssertionError("the list never ended")

    def folder(
        self, prefix: str, *, limit: int = 100, placement: ShardPlacement = AFTER, **query: Any
    ) -> list[str]:
        """Every key of the folder list of `prefix` (the bucket's unless `listing` is given)."""
        listing = query.pop("listing", BucketQuery(bucket=BUCKET))
        return self.pages(
            NameQuery(listing=listing, prefix=prefix, **query), limit=limit, placement=placement
        )[0]


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def tables(request: pytest.FixtureRequest) -> Iterator[Tables]:
    endpoint = None
    if request.param == "dynamodb_local":
        local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        endpoint = local.endpoint_url
    suffix = uuid.uuid4().hex[:8]
    table, name_table = f"FileMetaData-{suffix}", f"FileNameIndex-{suffix}"
    # S3 is moto's in both cases: the writer's lookups after a permanent version delete read it.
    with mock_aws():
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint)
        dynamodb.create_table(**schema.create_table_request(table))
        dynamodb.create_table(**schema.create_name_table_request(name_table))
        for name in (table, name_table):
            dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        try:
            yield Tables(dynamodb, s3, table, name_table)
        finally:
            dynamodb.delete_table(TableName=table)
            dynamodb.delete_table(TableName=name_table)


# -- the history -------------------------------------------------------------------------------


def test_a_key_recreated_after_a_raise_is_listed_once(tables: Tables) -> None:
    """Create at 1 shard; overwrite, delete and create again at 16; the folder lists the key once, and
    the name index holds what `index-names` would give it."""
    key = moved_key("q3")
    tables.apply("put", key, BEFORE)
    tables.apply("put", key, AFTER)
    tables.apply("delete", key, AFTER)
    tables.apply("put", key, AFTER)
    assert tables.folder(f"{USER}/") == [key]
    assert tables.folder(f"{USER}/", listing=UserQuery(user=USER)) == [key]
    assert tables.pages(NameQuery(listing=BucketQuery(bucket=BUCKET), prefix="", delimiter="/")) == (
        [],
        [f"{USER}/"],
    )
    assert tables.name_keys() == tables.expected_name_keys()
    assert sync_names(tables.dynamodb, tables.table, tables.name_table, BUCKET).to_json()["removed"] == 0


# -- the reader: each key once, whatever the name items say ------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
@pytest.mark.parametrize("ascending", [True, False])
def test_lists_hold_each_key_once_when_its_items_are_in_two_shards(
    tables: Tables, limit: int, ascending: bool
) -> None:
    """Items of a key in its own shard and in shard 0 (left by a shard move): every list answers each
    file once, in order, across pages; BatchGetItem is never asked for a key twice."""
    keys = sorted(
        [moved_key("a"), moved_key("b"), f"{USER}/reports/zz.txt", f"{USER}/old/y.txt", f"{USER}/top.txt"]
    )
    for key in keys:
        tables.apply("put", key, AFTER)
        tables.stale_items(key, BUCKET)
    in_order = keys if ascending else keys[::-1]
    reports = [key for key in in_order if key.startswith(f"{USER}/reports/")]
    for scope in (BucketQuery(bucket=BUCKET), UserQuery(user=USER)):
        assert tables.folder(f"{USER}/", listing=scope, limit=limit, ascending=ascending) == in_order
        assert tables.folder(f"{USER}/reports/", listing=scope, limit=limit, ascending=ascending) == reports
        keys_seen, folders = tables.pages(
            NameQuery(listing=scope, prefix=f"{USER}/", delimiter="/", ascending=ascending), limit=limit
        )
        assert keys_seen == [f"{USER}/top.txt"]
        assert folders == sorted([f"{USER}/old/", f"{USER}/reports/"], reverse=not ascending)
        found, _ = tables.pages(
            NameQuery(listing=scope, words=("txt",), order_by="objectKey", ascending=ascending), limit=limit
        )
        assert found == in_order
        found, _ = tables.pages(NameQuery(listing=scope, ext="txt"), limit=limit)
        assert sorted(found) == keys


# -- the writers: name items follow the entry to its shard ------------------------------------------------


def test_an_overwrite_that_moves_the_entry_moves_its_name_items(tables: Tables) -> None:
    key = moved_key("moves")
    tables.apply("put", key, BEFORE)
    before = tables.name_keys()
    assert {scope.split("|")[0] for scope, _, _ in before} == {BUCKET}
    tables.apply("put", key, AFTER)
    after = tables.name_keys()
    assert after == tables.expected_name_keys()
    assert {scope.split("|")[0] for scope, _, _ in after} == {AFTER.bucket_partition(BUCKET, key)}


def test_an_overwrite_in_place_moves_only_its_term_items(tables: Tables) -> None:
    """The common overwrite (the entry stays in its shard) moves its term items to its new upload time
    (one put and one delete each) and writes no key or word item."""
    key = moved_key("stays")
    assert tables.apply("put", key, BEFORE).items_written > 0
    moved = 2 * len(term_items(tables.entry(key), ""))
    assert tables.apply("put", key, BEFORE).items_written == moved
    tables.apply("put", key, AFTER)
    assert tables.apply("put", key, AFTER).items_written == moved
    assert tables.name_keys() == tables.expected_name_keys()


def test_an_overwrite_after_a_user_turns_hot_moves_the_items_to_the_users_shard(tables: Tables) -> None:
    hot = ShardPlacement(bucket_shards=16, hot_users={USER: 4})
    key = moved_key("hot", lambda key: hot.user_shard(USER, key) != 0)
    tables.apply("put", key, AFTER)
    tables.apply("put", key, hot)
    held = tables.name_keys()
    assert held == tables.expected_name_keys()
    assert {str(user).split("|")[0] for _, _, user in held} == {hot.user_partition(USER, key)}
    assert tables.folder(f"{USER}/", listing=UserQuery(user=USER), placement=hot) == [key]


@pytest.mark.parametrize("raise_after", range(5))
def test_any_delivery_order_around_a_raise_leaves_the_items_index_names_would_build(
    tables: Tables, raise_after: int
) -> None:
    """A key's create, overwrite, delete and create, delivered in every order, the first `raise_after`
    deliveries by a writer of 1 shard and the others by one of 16: the name index is what `index-names`
    would build, and the folder lists the key once."""
    history = ("put", "put", "delete", "put")
    for number, order in enumerate(itertools.permutations(range(len(history)))):
        key = moved_key(f"order{raise_after}-{number}")
        for delivered, position in enumerate(order):
            placement = BEFORE if delivered < raise_after else AFTER
            tables.apply(history[position], key, placement, position=position + 1)
        assert tables.name_keys() == tables.expected_name_keys(), (raise_after, order)
        live = sorted(entry[schema.OBJECT_KEY] for entry in tables.entries())
        assert tables.folder(f"{USER}/reports/", ascending=True) == live


def test_a_delete_removes_the_items_in_the_shard_the_entry_was_in(tables: Tables) -> None:
    key = moved_key("gone")
    tables.apply("put", key, BEFORE)
    tables.apply("delete", key, AFTER)  # a writer of 16 shards deletes an entry of shard 0
    assert tables.name_keys() == set()
    assert tables.folder(f"{USER}/") == []


def versioned_pair(tables: Tables, key: str) -> list[str]:
    """Two versions of `key` in the (now versioned) bucket, oldest first."""
    tables.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    return [
        str(tables.s3.put_object(Bucket=BUCKET, Key=key, Body=body)["VersionId"]) for body in (b"1", b"22")
    ]


def test_a_version_restored_in_another_shard_takes_the_name_items_along(tables: Tables) -> None:
    """The current version is deleted for good after a raise: the version that is current again is
    written to the key's new shard, and the items of the entry it replaced leave shard 0."""
    key = moved_key("restored")
    first, second = versioned_pair(tables, key)
    tables.apply("put", key, BEFORE, version_id=first)
    tables.apply("put", key, BEFORE, version_id=second)
    tables.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=second)
    tables.apply("purge", key, AFTER, version_id=second)
    assert tables.entry(key)[schema.VERSION_ID] == first
    assert tables.entry(key)[schema.BUCKET_NAME] == AFTER.bucket_partition(BUCKET, key)
    assert tables.name_keys() == tables.expected_name_keys()
    assert tables.folder(f"{USER}/") == [key]


def test_the_last_version_deleted_for_good_takes_its_name_items(tables: Tables) -> None:
    key = moved_key("purged")
    first, second = versioned_pair(tables, key)
    tables.apply("put", key, BEFORE, version_id=second)
    for version in (first, second):
        tables.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version)
    tables.apply("purge", key, AFTER, version_id=second)
    assert tables.entries() == []
    assert tables.name_keys() == set()


# -- backfill and reconcile writes ---------------------------------------------------------------------


def test_a_repair_that_moves_the_entry_moves_its_name_items(tables: Tables) -> None:
    """A reconcile under 16 shards rewrites a stale entry of shard 0 in the key's shard: its items go too."""
    key = moved_key("repaired")
    tables.apply("put", key, BEFORE)
    body = tables.s3.put_object(Bucket=BUCKET, Key=key, Body=b"the object as it is now")
    current = ListedObject(key=key, size=23, e_tag=body["ETag"].strip('"'), last_modified=START)
    assert repair(
        tables.dynamodb,
        tables.table,
        BUCKET,
        key,
        tables.entry(key),
        current,
        KEYS,
        shard_placement=AFTER,
        name_index=tables.names,
    )
    assert tables.entry(key)[schema.BUCKET_NAME] == AFTER.bucket_partition(BUCKET, key)
    assert tables.name_keys() == tables.expected_name_keys()
    assert tables.folder(f"{USER}/") == [key]


def test_placing_an_entry_in_another_shard_moves_its_name_items(tables: Tables) -> None:
    """An entry in a shard the placement never reads (written under 16 shards, read under 4) is placed in
    its shard of 4, and its name items with it."""
    four = ShardPlacement(bucket_shards=4)
    key = moved_key("placed", lambda key: int(AFTER.bucket_partition(BUCKET, key).split("#")[1]) >= 4)
    tables.apply("put", key, AFTER)
    entry = tables.entry(key)
    assert (
        place_entry(tables.dynamodb, tables.table, entry, four, name_index=tables.names) is Placement.UPDATED
    )
    assert tables.entry(key)[schema.BUCKET_NAME] == four.bucket_partition(BUCKET, key)
    assert tables.name_keys() == tables.expected_name_keys()
    assert tables.folder(f"{USER}/") == [key]
