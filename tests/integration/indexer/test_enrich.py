"""Enrichment (`enrich`): the indexer reads content type, user metadata and tags from S3 for each create,
updates tags on tag changes, never makes a request when it is off, and keeps the ordering rules."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.store.entries import plain_item
from indexer import handler
from tests.conftest import FakeLambdaContext
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

BUCKET = "fileupload.a"
TABLE = "FileMetaData"
KEY = "USER001/photos/cat.png"


@dataclass
class Env:
    s3: Any
    dynamodb: Any
    context: FakeLambdaContext
    s3_calls: list[str]

    def deliver(self, *records: dict[str, Any]) -> None:
        queue = SqsQueue()
        queue.send(*(notification(record) for record in records))
        assert queue.deliver(handler.lambda_handler, self.context, batches=[len(records)]) == []

    def entry(self, key: str = KEY) -> dict[str, Any] | None:
        raw = self.dynamodb.get_item(TableName=TABLE, Key={schema.OBJECT_KEY: {"S": key}})
        return plain_item(raw["Item"]) if "Item" in raw else None


def _count_s3_calls(calls: list[str]) -> None:
    """Record every S3 request the indexer's own clients make (a botocore hook on every new client)."""
    original = boto3.session.Session.client

    def client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)
        if service == "s3":
            made.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
        return made

    mock.patch.object(boto3.session.Session, "client", client).start()


@pytest.fixture(params=["", "contentType", "contentType,metadata,tags", "tags"])
def env(request: pytest.FixtureRequest, lambda_context: FakeLambdaContext) -> Iterator[Env]:
    variables = {"TABLE_NAME": TABLE, "BUCKET_NAME": BUCKET, "POWERTOOLS_SERVICE_NAME": "file-indexer"}
    if request.param:
        variables["ENRICH"] = request.param
    calls: list[str] = []
    with mock_aws(), mock.patch.dict(os.environ, variables):
        if "ENRICH" not in variables:
            os.environ.pop("ENRICH", None)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE))
        handler.cold_start.cache_clear()
        _count_s3_calls(calls)
        try:
            yield Env(s3, dynamodb, lambda_context, calls)
        finally:
            mock.patch.stopall()
            handler.cold_start.cache_clear()


def enriched_names(env: Env) -> set[str]:
    return set(filter(None, os.environ.get("ENRICH", "").split(",")))


def put(env: Env, key: str = KEY, **extra: Any) -> dict[str, Any]:
    env.s3.put_object(
        Bucket=BUCKET,
        Key=key,
        Body=b"meow",
        ContentType="image/png",
        Metadata={"Project": "apollo"},
        Tagging="team=red&stage=draft",
        **extra,
    )
    return s3_record("ObjectCreated:Put", key, size=4, sequencer="0A", event_time="2024-05-01T10:00:00.000Z")


def test_a_create_is_enriched_with_exactly_what_enrich_names(env: Env) -> None:
    record = put(env)
    env.s3_calls.clear()

    env.deliver(record)

    entry = env.entry()
    assert entry is not None
    names = enriched_names(env)
    assert (entry.get(schema.CONTENT_TYPE) == "image/png") == ("contentType" in names)
    assert (entry.get(schema.META) == {"project": "apollo"}) == ("metadata" in names)
    assert (entry.get(schema.TAGS) == {"team": "red", "stage": "draft"}) == ("tags" in names)
    if not names:
        assert not {schema.CONTENT_TYPE, schema.META, schema.TAGS} & set(entry)
    # The requests: none when off; one HEAD for contentType/metadata, one GetObjectTagging for tags.
    expected = []
    if names & {"contentType", "metadata"}:
        expected.append("HeadObject")
    if "tags" in names:
        expected.append("GetObjectTagging")
    assert env.s3_calls == expected


def test_an_object_gone_before_it_is_read_is_indexed_without_extras(env: Env) -> None:
    record = put(env)
    env.s3.delete_object(Bucket=BUCKET, Key=KEY)

    env.deliver(record)

    entry = env.entry()
    assert entry is not None
    assert entry[schema.SIZE] == 4
    assert not {schema.CONTENT_TYPE, schema.META, schema.TAGS} & set(entry)


def test_a_tag_change_updates_a_live_entry_and_never_a_deleted_one(env: Env) -> None:
    env.deliver(put(env))
    env.s3.put_object_tagging(Bucket=BUCKET, Key=KEY, Tagging={"TagSet": [{"Key": "team", "Value": "blue"}]})
    tagging = s3_record("ObjectTagging:Put", KEY, sequencer="0B", event_time="2024-05-01T10:00:01.000Z")
    env.s3_calls.clear()

    env.deliver(tagging)

    entry = env.entry()
    assert entry is not None
    if "tags" in enriched_names(env):
        assert entry[schema.TAGS] == {"team": "blue"}
        assert env.s3_calls == ["GetObjectTagging"]
    else:
        assert schema.TAGS not in entry
        assert env.s3_calls == []  # a deployment without tags skips tag changes without a request

    # Deleted, then a late tag change: the tombstone stays a tombstone, in no index.
    env.deliver(s3_record("ObjectRemoved:Delete", KEY, sequencer="0C", event_time="2024-05-01T10:00:02.000Z"))
    env.deliver(tagging)
    entry = env.entry()
    assert entry is not None
    assert entry.get(schema.DELETED) is True
    assert schema.BUCKET_NAME not in entry


def test_a_tag_change_of_another_version_leaves_the_entry_alone(env: Env) -> None:
    env.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    first = env.s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"one", Tagging="team=red")["VersionId"]
    second = env.s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"two!", Tagging="team=green")["VersionId"]
    env.deliver(
        s3_record("ObjectCreated:Put", KEY, size=4, version_id=second, sequencer="0B"),
    )
    env.s3.put_object_tagging(
        Bucket=BUCKET, Key=KEY, VersionId=first, Tagging={"TagSet": [{"Key": "team", "Value": "old"}]}
    )

    env.deliver(s3_record("ObjectTagging:Put", KEY, version_id=first, sequencer="0C"))

    entry = env.entry()
    assert entry is not None
    assert entry[schema.VERSION_ID] == second
    if "tags" in enriched_names(env):
        assert entry[schema.TAGS] == {"team": "green"}
