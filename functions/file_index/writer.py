"""Applies S3 object events to FileMetaData: one conditional write per event, no read.

The ordering rule lives in DynamoDB's ConditionExpression, so any number of writers may run at once and
an event may arrive any number of times, in any order:

    attribute_not_exists(orderKey) OR orderKey < :orderKey

`orderKey` (see `file_index.objects`) compares as a plain string exactly as S3 sequencers compare under
AWS's right-pad rule. An equal or older event fails the condition and changes nothing (`STALE`).
Events without a sequencer use `<=` instead, so that of two events with the same time the one applied
last wins (the indexer applies one key's events in delivery order).

Three kinds of write, one call each:

- A create is a PutItem of the whole entry under the rule above and
  `NOT contains(deletedVersions, :versionId)`: a version recorded as deleted for good cannot come back. A
  create without a versionId is the "null" version. The PutItem replaces the item, tombstone attributes
  and `deletedVersions` included.
- A removal of the object (a delete marker, `LifecycleExpiration:DeleteMarkerCreated`, or a delete in an
  unversioned bucket) is a PutItem of a tombstone (`deleted`, `expiresAt` for DynamoDB TTL, the event's
  `orderKey`) with none of the GSI key attributes, so it is in no index and no search returns it, and an
  older create that arrives later fails the condition instead of resurrecting the file. A delete marker
  also checks `deletedVersions` for its own versionId.
- A permanent delete of one version (`ObjectRemoved:Delete` or `LifecycleExpiration:Delete` with a
  versionId) is an UpdateItem that takes no position in the key's history, because it must not hide a
  newer version whose create is yet to arrive. Its condition is

      NOT contains(deletedVersions, :v) AND
      (attribute_not_exists(orderKey) OR (versionId = :v AND orderKey < :orderKey))

  ("null" also matches an item without versionId). So it applies only when the item holds that very
  version, or holds no position yet (no item, or only earlier deletes of versions). It then sets
  `deleted` and `expiresAt`, removes the GSI key attributes, `fileId` and `eTag`, and adds the version to
  `deletedVersions`. `orderKey` stays what it was (absent if there was none), so every newer create still
  replaces the tombstone, while the deleted version's own create, late or duplicated, changes nothing.
  Against an item that holds another version it changes nothing: that version is either newer, or older
  and bound to be replaced by the key's newer events, as the next paragraph explains.

Once the queue is drained, the index shows for each key the newest version S3 created (an upload, or a
delete marker: then the key is hidden), provided no version was deleted for good while it was current.
That version is never deleted, so no condition can stop its write, and after it nothing older applies.
This covers overwrites, delete markers and lifecycle expiry of noncurrent versions, in any delivery order.

Limits, from S3 itself: when the current version of a versioned object is deleted permanently (or the
current delete marker is removed), S3 sends no event for the version that becomes current again, so the
index shows the key as deleted (or still deleted) until its next upload; no event says which version is
current now, and one write per event cannot read it. In one delivery order it is worse: if that delete
arrives while the index holds an older version, it changes nothing, and the deleted version's create,
arriving later, is indexed and stays until the key's next upload or delete marker.
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
from file_index.objects import ObjectEvent

# boto3 ships no type information for its generated clients.
DynamoDBClient = Any

DEFAULT_TOMBSTONE_TTL_DAYS = 30
# The versionId S3 gives an object written while versioning was off or suspended.
NULL_VERSION = "null"

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

    Exactly one PutItem or UpdateItem call (SDK retries aside). Raises botocore's ClientError for anything
    but a failed condition, e.g. throttling that outlasted the SDK's retries.
    """
    expires_at = int(((now or datetime.now(UTC)) + timedelta(days=tombstone_ttl_days)).timestamp())
    try:
        if event.removes_one_version:
            _remove_version(dynamodb, table_name, event, expires_at)
        else:
            _put(dynamodb, table_name, event, expires_at)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return Outcome.STALE
        raise
    return Outcome.DELETED if event.is_removal else Outcome.WRITTEN


def _put(dynamodb: DynamoDBClient, table_name: str, event: ObjectEvent, expires_at: int) -> None:
    """A create's entry or a removal's tombstone, if the event is newer than the item."""
    order_key = event.order_key
    item = _tombstone(event, order_key, expires_at) if event.is_removal else entry_item(event, order_key)
    names = {"#order": schema.ORDER_KEY}
    values: dict[str, Any] = {":order": order_key}
    condition = f"({_newer(event)})"
    if not event.is_removal or event.version_id is not None:
        names["#deletedVersions"] = schema.DELETED_VERSIONS
        values[":version"] = _version_of(event)
        condition += " AND NOT contains(#deletedVersions, :version)"
    dynamodb.put_item(
        TableName=table_name,
        Item=serialize(item),
        ConditionExpression=condition,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=serialize(values),
    )


def _remove_version(dynamodb: DynamoDBClient, table_name: str, event: ObjectEvent, expires_at: int) -> None:
    """A permanent delete of one version: hides the item only if it holds that version (module docstring)."""
    version = _version_of(event)
    same_version = "#version = :version"
    if version == NULL_VERSION:
        # The "null" version is what an unversioned upload became; its item has no versionId.
        same_version = "(#version = :version OR attribute_not_exists(#version))"
    removed = sorted(schema.GSI_KEY_ATTRIBUTES | {schema.FILE_ID, schema.E_TAG})
    names = {
        "#order": schema.ORDER_KEY,
        "#version": schema.VERSION_ID,
        "#deletedVersions": schema.DELETED_VERSIONS,
        "#deleted": schema.DELETED,
        "#expiresAt": schema.EXPIRES_AT,
        **{f"#removed{position}": name for position, name in enumerate(removed)},
    }
    values = {
        ":order": event.order_key,
        ":version": version,
        ":versions": {version},
        ":true": True,
        ":expiresAt": expires_at,
    }
    dynamodb.update_item(
        TableName=table_name,
        Key=serialize({schema.OBJECT_KEY: event.key}),
        ConditionExpression=(
            "NOT contains(#deletedVersions, :version)"
            f" AND (attribute_not_exists(#order) OR ({same_version} AND {_later(event)}))"
        ),
        UpdateExpression=(
            "SET #deleted = :true, #expiresAt = :expiresAt ADD #deletedVersions :versions REMOVE "
            + ", ".join(f"#removed{position}" for position in range(len(removed)))
        ),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=serialize(values),
    )


def _newer(event: ObjectEvent) -> str:
    return f"attribute_not_exists(#order) OR {_later(event)}"


def _later(event: ObjectEvent) -> str:
    # Without a sequencer, equal times go to the event applied last (see module docstring).
    return "#order < :order" if event.sequencer is not None else "#order <= :order"


def _version_of(event: ObjectEvent) -> str:
    return event.version_id if event.version_id is not None else NULL_VERSION


def serialize(values: dict[str, Any]) -> dict[str, Any]:
    """Plain values as DynamoDB attribute values, for the low-level client."""
    return {name: _serializer.serialize(value) for name, value in values.items()}


def entry_item(event: ObjectEvent, order_key: str | None) -> dict[str, Any]:
    """The index entry of a create, as plain values; without `orderKey` when `order_key` is None.

    An entry without `orderKey` holds no position in the key's history: any event replaces it (what a
    backfill or a repair writes).
    """
    item: dict[str, Any] = {
        schema.OBJECT_KEY: event.key,
        schema.BUCKET_NAME: event.bucket,
        schema.FILE_ID: event.file_id,
        schema.SIZE: event.size,
        schema.UPLOAD_DATE: event.upload_date,
    }
    # Absent, not empty: a key without a user must stay out of the user index.
    optional = {
        schema.ORDER_KEY: order_key,
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
