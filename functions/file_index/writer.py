"""Applies S3 object events to FileMetaData: one conditional PutItem per event, no read.

The ordering rule lives in DynamoDB's ConditionExpression, so any number of writers may run at once and
an event may arrive any number of times, in any order:

    attribute_not_exists(objectKey) OR orderKey < :orderKey

`orderKey` (see `indexer.events`) compares as a plain string exactly as S3 sequencers compare under
AWS's right-pad rule. An equal or older event fails the condition and changes nothing (`STALE`).
Events without a sequencer use `<=` instead, so that of two events with the same time the one applied
last wins (the indexer applies one key's events in delivery order).

A removal writes a tombstone (`deleted`, `expiresAt` for DynamoDB TTL, the event's position) with none of
the GSI key attributes, so it is in no index and no search returns it, and an older create that arrives
later fails the condition instead of resurrecting the file. A create replaces the whole item, tombstone
attributes included. A permanent delete of one version (`ObjectRemoved:Delete` with a versionId) also
requires that version to be the indexed one; a delete marker always hides the object.

Limits, from S3 itself: when the current version of a versioned object is deleted permanently, S3 sends
no event for the version that becomes current again, so the index shows the object as deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from botocore.config import Config
from botocore.exceptions import ClientError

from file_index import schema
from indexer.events import ObjectEvent

# boto3 ships no type information for its generated clients.
DynamoDBClient = Any

DEFAULT_TOMBSTONE_TTL_DAYS = 30

_serializer = TypeSerializer()


class Outcome(StrEnum):
    WRITTEN = "written"  # the item now describes the object
    DELETED = "deleted"  # the item is now a tombstone
    STALE = "stale"  # the index already holds this event or a later one: nothing changed


def dynamodb_client(*, max_attempts: int = 5, max_connections: int = 32) -> DynamoDBClient:
    """A DynamoDB client for concurrent writers: standard retries (throttling, 5xx) and a pool per writer.

    boto3 picks up AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_DYNAMODB), which is how local runs reach moto
    or DynamoDB Local. Clients, unlike resources, are safe to share between threads.
    """
    config = Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        max_pool_connections=max_connections,
    )
    return boto3.session.Session().client("dynamodb", config=config)


def apply_event(
    dynamodb: DynamoDBClient,
    table_name: str,
    event: ObjectEvent,
    *,
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS,
    now: datetime | None = None,
) -> Outcome:
    """Write `event` into the index if it is newer than what the index holds for its key.

    Exactly one PutItem call (SDK retries aside). Raises botocore's ClientError for anything but a failed
    condition, e.g. throttling that outlasted the SDK's retries.
    """
    order_key = event.order_key
    if event.is_removal:
        expires = (now or datetime.now(UTC)) + timedelta(days=tombstone_ttl_days)
        item = _tombstone(event, order_key, int(expires.timestamp()))
    else:
        item = _entry(event, order_key)

    names = {"#key": schema.OBJECT_KEY, "#order": schema.ORDER_KEY}
    values: dict[str, Any] = {":order": order_key}
    # Without a sequencer, equal times go to the event applied last (see module docstring).
    newer = "#order < :order" if event.sequencer is not None else "#order <= :order"
    if event.removes_one_version:
        names["#version"] = schema.VERSION_ID
        values[":version"] = event.version_id
        same_version = "#version = :version"
        if event.version_id == "null":
            # The "null" version is what an unversioned upload became; its item has no versionId.
            same_version = "(#version = :version OR attribute_not_exists(#version))"
        newer = f"({newer} AND {same_version})"
    try:
        dynamodb.put_item(
            TableName=table_name,
            Item={name: _serializer.serialize(value) for name, value in item.items()},
            ConditionExpression=f"attribute_not_exists(#key) OR {newer}",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={name: _serializer.serialize(value) for name, value in values.items()},
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return Outcome.STALE
        raise
    return Outcome.DELETED if event.is_removal else Outcome.WRITTEN


def _entry(event: ObjectEvent, order_key: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        schema.OBJECT_KEY: event.key,
        schema.BUCKET_NAME: event.bucket,
        schema.FILE_ID: event.file_id,
        schema.SIZE: event.size,
        schema.UPLOAD_DATE: event.upload_date,
        schema.ORDER_KEY: order_key,
    }
    # Absent, not empty: a key without a user must stay out of the user index.
    optional = {
        schema.UPLOAD_USER: event.upload_user,
        schema.SEQUENCER: event.sequencer,
        schema.E_TAG: event.e_tag,
        schema.VERSION_ID: event.version_id,
    }
    item.update({name: value for name, value in optional.items() if value is not None})
    return item


def _tombstone(event: ObjectEvent, order_key: str, expires_at: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        schema.OBJECT_KEY: event.key,
        schema.ORDER_KEY: order_key,
        schema.DELETED: True,
        schema.EXPIRES_AT: expires_at,
    }
    optional = {
        schema.SEQUENCER: event.sequencer,
        schema.E_TAG: event.e_tag,
        schema.VERSION_ID: event.version_id,
    }
    item.update({name: value for name, value in optional.items() if value is not None})
    assert not schema.GSI_KEY_ATTRIBUTES & item.keys(), "a tombstone must stay out of every index"
    return item
