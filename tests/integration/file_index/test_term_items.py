"""The term items the writer keeps beside each live entry (`file_index.write.names`), and the per-bucket flag
that says a bucket's name index is complete: a new key, an overwrite, a delete, a shard move, on moto."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.name_items import key_digest, term_items
from file_index.rules.name_terms import name_terms
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import plain_item
from file_index.store.name_index_flag import (
    ALL_BUCKETS,
    NameIndexFlag,
    flag_key,
    mark_table_complete,
    terms_complete,
)
from file_index.write.names import NameIndex
from file_index.write.writer import apply_event

BUCKET = "fileupload.a"
TABLE, NAME_TABLE = "FileMetaData", "FileNameIndex"
START = datetime(2024, 5, 1, 10, tzinfo=UTC)
KEY = "alice/reports/Quarterly Report.pdf"
ONE_SHARD = ShardPlacement()


@dataclass
class World:
    dynamodb: Any
    s3: Any
    position: int = 0

    def names(self) -> NameIndex:
        return NameIndex(self.dynamodb, NAME_TABLE, entry_table=TABLE)

    def apply(self, kind: str, key: str = KEY, placement: ShardPlacement = ONE_SHARD) -> NameIndex:
        self.position += 1
        event = ObjectEvent(
            event_name="ObjectCreated:Put" if kind == "put" else "ObjectRemoved:Delete",
            bucket=BUCKET,
            key=key,
            event_time=START + timedelta(seconds=self.position),
            sequencer=f"{self.position:016X}",
            size=100 + self.position if kind == "put" else None,
            e_tag=None,
            version_id=None,
            upload_user="alice",
            file_id=key,
        )
        names = self.names()
        apply_event(self.dynamodb, TABLE, event, s3=self.s3, placement=placement, names=names)
        return names

    def entry(self, key: str = KEY) -> dict[str, Any]:
        raw = self.dynamodb.get_item(
            TableName=TABLE, Key={schema.OBJECT_KEY: {"S": key}}, ConsistentRead=True
        )
        return plain_item(raw["Item"])

    def items(self) -> dict[tuple[str, str], dict[str, Any]]:
        paginator = self.dynamodb.get_paginator("scan")
        return {
            (item[schema.NAME_SCOPE], item[schema.NAME_SORT]): item
            for page in paginator.paginate(TableName=NAME_TABLE, ConsistentRead=True)
            for item in map(plain_item, page["Items"])
        }

    def term_keys(self) -> set[tuple[str, str]]:
        return {key for key in self.items() if key[0].partition("|")[2].startswith(":")}

    def word_keys(self) -> set[tuple[str, str]]:
        return {key for key in self.items() if key[0].partition("|")[2][:1] not in (":", "/", "!")}


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE))
        dynamodb.create_table(**schema.create_name_table_request(NAME_TABLE))
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield World(dynamodb, s3)


def expected_terms(entry: dict[str, Any]) -> set[tuple[str, str]]:
    return {(item[schema.NAME_SCOPE], item[schema.NAME_SORT]) for item in term_items(entry, "")}


def test_a_new_key_gets_one_term_item_per_term_under_its_upload_time(world: World) -> None:
    world.apply("put")
    entry = world.entry()
    terms = name_terms("Quarterly Report.pdf")
    held = world.items()
    upload = entry[schema.UPLOAD_DATE]
    for term in terms:
        item = held[(f"{BUCKET}|:{term}", f"{upload} {key_digest(KEY)}")]
        assert item[schema.NAME_USER] == f"alice|:{term}"
        assert item[schema.OBJECT_KEY] == KEY
        assert item[schema.FILE_NAME] == "Quarterly Report.pdf"
        assert item[schema.SIZE] == entry[schema.SIZE]
        assert item[schema.UPLOAD_DATE] == upload
        assert item[schema.NAME_SINCE] == entry[schema.ORDER_KEY]
    assert world.term_keys() == expected_terms(entry)
    assert (f"{BUCKET}|/", KEY) in held  # the key item, as before
    assert not world.word_keys()  # the bucket is not complete: still term and key items only


def test_an_overwrite_moves_the_term_items_to_its_upload_time(world: World) -> None:
    world.apply("put")
    first = world.entry()
    words = world.word_keys()
    world.apply("put")
    second = world.entry()
    assert first[schema.UPLOAD_DATE] != second[schema.UPLOAD_DATE]
    assert world.term_keys() == expected_terms(second)
    assert {item[schema.SIZE] for key, item in world.items().items() if key in world.term_keys()} == {
        second[schema.SIZE]
    }
    assert world.word_keys() == words


def test_an_overwrite_removes_the_old_time_items_whatever_wrote_them(world: World) -> None:
    """The old time's items go even where a later write put them (`since` newer than the replaced entry)
    when the key's live entry does not have them: they lead no search anywhere. (Where the live entry has
    them, a version restored, they are put back: `test_name_removals.py`.)"""
    world.apply("put")
    first = world.entry()
    newer = [{**item, schema.NAME_SINCE: "~"} for item in term_items(first, "")]
    world.names().put_items(newer)
    world.apply("put")
    assert not expected_terms(first) & world.term_keys()
    assert world.term_keys() == expected_terms(world.entry())


def test_a_delete_removes_the_term_items(world: World) -> None:
    world.apply("put")
    assert world.term_keys() == expected_terms(world.entry())
    world.apply("delete")
    assert world.items() == {}


def test_a_shard_move_moves_the_term_items(world: World) -> None:
    after = ShardPlacement(bucket_shards=16)
    key = next(
        k for k in (f"alice/r{n}.txt" for n in range(200)) if after.bucket_partition(BUCKET, k) != BUCKET
    )
    world.apply("put", key)
    world.apply("put", key, after)
    entry = world.entry(key)
    assert world.term_keys() == expected_terms(entry)
    assert {scope.partition("|")[0] for scope, _ in world.term_keys()} == {entry[schema.BUCKET_NAME]}


def test_the_flag_starts_unset_and_stays_set_with_its_first_time(world: World) -> None:
    state = NameIndexFlag(world.dynamodb, NAME_TABLE, ttl=0.0)
    assert not state.complete(BUCKET)
    assert not terms_complete(world.dynamodb, NAME_TABLE, BUCKET)
    first = state.mark_complete(BUCKET, START)
    assert state.mark_complete(BUCKET, START + timedelta(hours=1)) == first == START.timestamp()
    assert state.complete(BUCKET)
    assert not state.complete("other-bucket")
    fresh = NameIndexFlag(world.dynamodb, NAME_TABLE)
    assert fresh.complete(BUCKET)


def test_the_whole_table_flag_is_read_for_every_bucket(world: World) -> None:
    """The table's own state item (`ALL_BUCKETS`) answers for any bucket, and asked for itself it is read
    once (a BatchGetItem with a key twice is refused)."""
    state = NameIndexFlag(world.dynamodb, NAME_TABLE, ttl=0.0)
    assert not state.complete(ALL_BUCKETS)
    assert mark_table_complete(world.dynamodb, NAME_TABLE, START)
    assert state.complete(ALL_BUCKETS)
    assert state.complete(BUCKET)
    assert terms_complete(world.dynamodb, NAME_TABLE, ALL_BUCKETS)


def test_a_cached_incomplete_flag_is_read_again_after_the_ttl(world: World) -> None:
    now = [0.0]
    state = NameIndexFlag(world.dynamodb, NAME_TABLE, clock=lambda: now[0])
    assert not state.complete(BUCKET)
    NameIndexFlag(world.dynamodb, NAME_TABLE).mark_complete(BUCKET, START)
    now[0] = 59.0
    assert not state.complete(BUCKET)
    now[0] = 61.0
    assert state.complete(BUCKET)


def test_an_empty_table_is_marked_complete_for_every_bucket(world: World) -> None:
    """Every entry it will hold gets its items from its first write."""
    assert mark_table_complete(world.dynamodb, NAME_TABLE, START)
    assert NameIndexFlag(world.dynamodb, NAME_TABLE).complete("any-bucket")
    world.apply("put")
    assert world.word_keys() == set()
    assert world.term_keys() == expected_terms(world.entry())
    held = world.dynamodb.get_item(TableName=NAME_TABLE, Key={k: {"S": v} for k, v in flag_key("*").items()})
    assert held["Item"]["complete"] == {"BOOL": True}


def test_a_table_with_items_is_not_marked_complete(world: World) -> None:
    world.apply("put")
    assert not mark_table_complete(world.dynamodb, NAME_TABLE, START)
    assert not NameIndexFlag(world.dynamodb, NAME_TABLE).complete(BUCKET)
