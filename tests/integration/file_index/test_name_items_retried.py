"""An event delivered again after its entry was written but its name items were not (their write failed,
or the entry write's answer was lost and the SDK sent it again) writes them: the file is found by name and
listed in its folder, as `index-names` would have it.

Each test makes the first delivery fail where it hurts, then delivers the event again as SQS would.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from file_index.read.file_queries import BucketQuery
from file_index.read.name_query import NameQuery
from file_index.rules import schema
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.write.names import NameIndex
from file_index.write.writer import apply_event
from tests.integration.file_index.test_name_index_shard_raise import (
    AFTER,
    BEFORE,
    BUCKET,
    KEYS,
    START,
    USER,
    Tables,
    moved_key,
    tables,
    versioned_pair,
)

__all__ = ["tables"]  # the fixture, imported for this module's tests


class NameWriteFails(Exception):
    """The name index's write failing (throttling that outlasted the SDK's retries, say)."""


class FailingNames(NameIndex):
    """A name index whose first write of an entry's items fails."""

    def put_entry(self, *args: Any, **kwargs: Any) -> Any:
        raise NameWriteFails

    def move_entry(self, *args: Any, **kwargs: Any) -> Any:
        raise NameWriteFails


def found(tables: Tables, key: str, placement: ShardPlacement = BEFORE) -> None:
    """`key` has every item `index-names` would give it (an older version's items may be left: every
    reader drops them, and `index-names` removes them), is found by a word of its name, and is listed in
    its folder."""
    assert tables.expected_name_keys() <= tables.name_keys()
    word = key.rsplit("/", 1)[1].split("-")[0]
    by_name = NameQuery(listing=BucketQuery(bucket=BUCKET), words=(word,), q=word)
    assert tables.pages(by_name, placement=placement)[0] == [key]
    assert tables.pages(
        NameQuery(listing=BucketQuery(bucket=BUCKET), prefix=f"{USER}/reports/"), placement=placement
    )[0] == [key]


def test_a_create_without_a_sequencer_delivered_again_writes_its_name_items(tables: Tables) -> None:
    """S3-compatible stores and the local stack send no sequencer: the same event applies again (equal
    positions go to the event applied last), and finds its own entry already there."""
    key = f"{USER}/reports/no-sequencer.txt"
    parts = KEYS.split(key)
    event = ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=BUCKET,
        key=key,
        event_time=START + timedelta(seconds=1),
        sequencer=None,
        size=10,
        e_tag="etag",
        version_id=None,
        upload_user=parts.upload_user,
        file_id=parts.file_id,
    )
    failing = FailingNames(tables.dynamodb, tables.name_table, entry_table=tables.table)
    with pytest.raises(NameWriteFails):
        apply_event(tables.dynamodb, tables.table, event, s3=tables.s3, placement=BEFORE, names=failing)

    apply_event(tables.dynamodb, tables.table, event, s3=tables.s3, placement=BEFORE, names=tables.names)

    found(tables, key)


def test_a_version_restored_then_delivered_again_writes_its_name_items(tables: Tables) -> None:
    """The current version deleted for good: the version current again is written, its items fail; the
    delete delivered again finds the restored entry at its own position and writes them."""
    key = moved_key("restored-again")
    first, second = versioned_pair(tables, key)
    tables.apply("put", key, BEFORE, version_id=first)
    tables.apply("put", key, BEFORE, version_id=second)
    tables.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=second)
    purge = tables.position + 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            Tables,
            "names",
            property(lambda self: FailingNames(self.dynamodb, self.name_table, entry_table=self.table)),
        )
        with pytest.raises(NameWriteFails):
            tables.apply("purge", key, BEFORE, position=purge, version_id=second)

    tables.apply("purge", key, BEFORE, position=purge, version_id=second)

    assert tables.entry(key)[schema.VERSION_ID] == first
    found(tables, key)


class ResentRestore:
    """A DynamoDB client whose write of a restored version is sent twice, as the SDK does when the first
    answer is lost (a read timeout, a 500): the second finds its condition failed by the first."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def update_item(self, **request: Any) -> Any:
        condition = request.get("ConditionExpression", "")
        if "#deleted = :true" in condition and "attribute_not_exists(#version)" in condition:
            self._client.update_item(**request)
        return self._client.update_item(**request)


def test_a_restore_write_sent_again_is_taken_as_applied(tables: Tables) -> None:
    key = moved_key("restore-resent")
    first, second = versioned_pair(tables, key)
    tables.apply("put", key, BEFORE, version_id=first)
    tables.apply("put", key, BEFORE, version_id=second)
    tables.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=second)
    tables.dynamodb = ResentRestore(tables.dynamodb)

    tables.apply("purge", key, AFTER, version_id=second)

    assert tables.entry(key)[schema.VERSION_ID] == first
    found(tables, key, AFTER)
