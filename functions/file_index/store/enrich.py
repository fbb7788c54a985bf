"""What S3's events do not carry: an object's content type, user metadata and tags (opt-in `enrich`).

`enrich` names any of `contentType`, `metadata`, `tags` (cdk.json; the functions' `ENRICH`, comma
separated). Off (the default), nothing here runs and no S3 request is made. On, the indexer reads, for
each create, what it names and stores it on the entry (`contentType`, `meta`, `tags`):

- `contentType`, `metadata`: one HeadObject of the event's version (or of the object, without one);
- `tags`: one GetObjectTagging of the same version.

What is read is the object's state when the event is applied, which is never older than the event's, so
a late create never rolls tags back. An object (or version) gone by then is not an error: the entry is
written without the extras, and the event of its removal follows.

Tag changes (`ObjectTagging:Put`, `ObjectTagging:Delete`; EventBridge "Object Tags Added"/"Object Tags
Deleted") update a live entry's `tags` from a GetObjectTagging, conditional on the entry still being live
and, in a versioned bucket, still holding the tagged version: a tagging event never resurrects a deleted
file nor writes the tags of another version. A create whose GetObjectTagging ran before a tag change and
whose write lands after that change's update would keep the older tags until the next tag change (rare:
the change and the create must cross within one write).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from file_index.rules import schema
from file_index.rules.config import ConfigError
from file_index.rules.objects import ObjectEvent

CONTENT_TYPE = "contentType"
METADATA = "metadata"
TAGS = "tags"
CHOICES = (CONTENT_TYPE, METADATA, TAGS)
ENV = "ENRICH"
_GONE_CODES = frozenset({"404", "NoSuchKey", "NotFound", "NoSuchVersion", "MethodNotAllowed", "405"})

Enrich = frozenset[str]
NONE: Enrich = frozenset()


def check_enrich(name: str, value: Any) -> Enrich:
    """The set `value` names (a list of CHOICES); ConfigError naming `name` otherwise."""
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f'{name} must be a list of any of {", ".join(CHOICES)}, e.g. ["contentType"]')
    unknown = sorted(set(value) - set(CHOICES))
    if unknown:
        raise ConfigError(f"{name}: {', '.join(map(repr, unknown))} is not one of {', '.join(CHOICES)}")
    return frozenset(value)


def from_env(env: Mapping[str, str]) -> Enrich:
    raw = env.get(ENV, "").strip()
    return check_enrich(ENV, [part.strip() for part in raw.split(",") if part.strip()]) if raw else NONE


def to_env(enrich: Iterable[str]) -> str:
    return ",".join(choice for choice in CHOICES if choice in set(enrich))


def _is_gone(error: ClientError) -> bool:
    return str(error.response.get("Error", {}).get("Code")) in _GONE_CODES


def _version(event: ObjectEvent) -> dict[str, str]:
    return {"VersionId": event.version_id} if event.version_id is not None else {}


def read_tags(s3: Any, event: ObjectEvent) -> dict[str, str] | None:
    """The tags of the event's version (None: it is gone)."""
    try:
        response = s3.get_object_tagging(Bucket=event.bucket, Key=event.key, **_version(event))
    except ClientError as error:
        if _is_gone(error):
            return None
        raise
    return {str(tag["Key"]): str(tag["Value"]) for tag in response.get("TagSet", [])}


def enriched(s3: Any, event: ObjectEvent, enrich: Enrich) -> ObjectEvent:
    """`event` (a create) with what `enrich` names read from S3; unchanged when the object is gone."""
    if not enrich or event.is_removal:
        return event
    content_type = metadata = None
    if CONTENT_TYPE in enrich or METADATA in enrich:
        try:
            head = s3.head_object(Bucket=event.bucket, Key=event.key, **_version(event))
        except ClientError as error:
            if _is_gone(error):
                return event
            raise
        if CONTENT_TYPE in enrich and head.get("ContentType"):
            content_type = str(head["ContentType"])
        if METADATA in enrich:
            metadata = {str(name).lower(): str(value) for name, value in (head.get("Metadata") or {}).items()}
    tags = read_tags(s3, event) if TAGS in enrich else None
    return dataclasses.replace(event, content_type=content_type, metadata=metadata, tags=tags)


def update_tags(dynamodb: Any, table_name: str, s3: Any, event: ObjectEvent) -> bool:
    """Apply a tagging event: the live entry of the tagged version gets the object's tags now. True if
    written; False when the entry is not live, holds another version, or the object is gone."""
    tags = read_tags(s3, event)
    if tags is None:
        return False
    names = {"#tags": schema.TAGS, "#bucket": schema.BUCKET_NAME, "#deleted": schema.DELETED}
    values: dict[str, Any] = {":tags": {"M": {name: {"S": value} for name, value in tags.items()}}}
    condition = "attribute_exists(#bucket) AND attribute_not_exists(#deleted)"
    if event.version_id is not None and event.version_id != "null":
        names["#version"] = schema.VERSION_ID
        values[":version"] = {"S": event.version_id}
        condition += " AND #version = :version"
    try:
        dynamodb.update_item(
            TableName=table_name,
            Key={schema.OBJECT_KEY: {"S": event.key}},
            UpdateExpression="SET #tags = :tags",
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True
