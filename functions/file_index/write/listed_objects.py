"""Objects as a listing or a HEAD shows them, and the backfill that indexes them.

**Backfill.** A listed object (`ListedObject`) becomes the entry a create event would write
(`entry_items.entry_item`), without a sequencer and without `orderKey`: it holds no position in the key's
history, so any live event replaces it. It is written only where the index has no item for the key
(`attribute_not_exists(objectKey)`): an entry or a tombstone a live event wrote always wins over a
listing, so a backfill may run while uploads and deletes go on. A failed condition is `SKIPPED`.

Version ids: an item without `versionId` and the `null` version are the same version (objects written
while versioning was off). A listing that cannot see versions (the state machine's S3 reader) compares
size and eTag only; the HEAD that confirms a difference brings the version id.

Folder placeholders (keys ending in `/`) are objects like any other: listed, indexed and repaired.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from file_index.rules import schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import put_if
from file_index.store.sdk import DynamoDBClient
from file_index.write.entry_items import DEFAULT_PLACEMENT, entry_item
from file_index.write.names import NameIndex

BACKFILL_EVENT = "ObjectCreated:Backfill"
RECONCILE_EVENT = "ObjectCreated:Reconcile"


class BackfillOutcome(StrEnum):
    WRITTEN = "written"  # the index had no item for the key: the listed object is now indexed
    SKIPPED = "skipped"  # the index already had an entry or a tombstone (a live event wins)


@dataclass(frozen=True)
class ListedObject:
    """One current object version as a listing or a HEAD shows it.

    `e_tag` is without its quotes. `version_id` is None where the source cannot see versions (an
    unversioned bucket's listing, the state machine's reader); "null" is the version of an object written
    while versioning was off.
    """

    key: str
    size: int
    e_tag: str
    last_modified: datetime
    version_id: str | None = None

    @classmethod
    def from_listing(cls, entry: Mapping[str, Any]) -> ListedObject:
        """An entry of boto3's list_objects_v2 `Contents` or list_object_versions `Versions`."""
        return cls(
            key=str(entry["Key"]),
            size=int(entry["Size"]),
            e_tag=strip_etag(str(entry.get("ETag", ""))),
            last_modified=_aware(entry["LastModified"]),
            version_id=entry.get("VersionId"),
        )

    @classmethod
    def from_head(cls, key: str, response: Mapping[str, Any]) -> ListedObject:
        return cls(
            key=key,
            size=int(response["ContentLength"]),
            e_tag=strip_etag(str(response.get("ETag", ""))),
            last_modified=_aware(response["LastModified"]),
            version_id=response.get("VersionId"),
        )

    def event(self, bucket: str, key_pattern: KeyPattern, event_name: str = BACKFILL_EVENT) -> ObjectEvent:
        """The create this object stands for: no sequencer, the object's time as the event's time."""
        parts = key_pattern.split(self.key)
        return ObjectEvent(
            event_name=event_name,
            bucket=bucket,
            key=self.key,
            event_time=self.last_modified,
            sequencer=None,
            size=self.size,
            e_tag=self.e_tag or None,
            version_id=self.version_id,
            upload_user=parts.upload_user,
            file_id=parts.file_id,
            no_user_reason=parts.mismatch_reason,
        )


def strip_etag(raw: str) -> str:
    """S3's ETag header and listings quote the value; events and the index do not."""
    return raw.strip('"')


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def backfill_object(
    dynamodb: DynamoDBClient,
    table_name: str,
    bucket: str,
    obj: ListedObject,
    key_pattern: KeyPattern,
    shard_placement: ShardPlacement = DEFAULT_PLACEMENT,
    names: NameIndex | None = None,
) -> BackfillOutcome:
    """Index `obj` only if the index has no item (entry or tombstone) for its key: one PutItem.

    `key_pattern` names the uploader from the key; `shard_placement` places the entry
    (`entry_items.entry_item`); `names`, when given, gets the new entry's name items
    (`file_index.write.names`).
    """
    item = entry_item(obj.event(bucket, key_pattern), None, shard_placement)
    if not put_if(dynamodb, table_name, item, "attribute_not_exists(#key)", {"#key": schema.OBJECT_KEY}):
        return BackfillOutcome.SKIPPED
    if names is not None:
        names.put_entry(item, None)
    return BackfillOutcome.WRITTEN
