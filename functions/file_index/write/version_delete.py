"""Permanent deletes of one version: the writer's (`file_index.write.writer`) rarest event.

`ObjectRemoved:Delete` or `LifecycleExpiration:Delete` with a versionId. What it means for the index
depends on what the entry holds (the decision is in the conditions, the old item says which applied):

1. The entry holds another version with a position older than the delete (the common case: a noncurrent
   version expires). A live entry without versionId holds "null"; a delete marker's tombstone holds the
   marker. One UpdateItem records the deleted version without hiding the entry: the id is added to
   `deletedVersions` ("null": `nullPurgedAt` is set to the delete's position) and `purgedUntil` is
   raised to it. The entry keeps its version and position, so a newer version's create still applies,
   while the deleted version's create, late or duplicated, changes nothing; this holds even if that
   version was the current one and its create is still in flight.
2. The entry holds that very version (or, for "null", a live entry without versionId), holds no position
   yet (no item, or an entry written by a backfill or repair), or is an older tombstone without versionId
   (a lookup of an earlier delete, pending or done, or a delete from before versioning). The deleted
   version may have been the current one, and S3 sends no event for the version that becomes current
   again. So: an UpdateItem hides the entry and takes the delete's position (it keeps the bookkeeping and
   drops the versionId, which marks the lookup as pending), then a HEAD of the object without VersionId
   gives its current version (404, also when a delete marker is current: none), then, if there is one, an
   UpdateItem writes it under the delete's position, only while the entry is still that pending lookup. A
   later event always wins; an older one is stale against the delete's position. A HEAD that fails raises:
   the record is retried, and its hide applies again (equal position, still pending).
3. Otherwise (the entry holds an event at or after the delete) it is stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from file_index.rules import schema
from file_index.rules.objects import NULL_VERSION, ObjectEvent
from file_index.store.bucket import head_current
from file_index.store.sdk import S3Client, serialize
from file_index.write.conditions import APPLIED, MAX_ROUNDS, ConditionalWrite, Outcome, WriteContentionError
from file_index.write.entry_items import NULL_PURGED_AT, PURGED_UNTIL, entry_item, set_and_remove


@dataclass(frozen=True)
class VersionDeleteWrite(ConditionalWrite):
    """The writes of one event, with those of a permanent delete of one version."""

    def remove_version(self, s3: S3Client) -> Outcome:
        """The module docstring's cases 1 to 3, decided by the conditions."""
        old: Mapping[str, Any] | None = None
        first = True
        for _ in range(MAX_ROUNDS):
            if first or self._holds_another_version(old):
                # Case 1 is tried first: it is the common one, and it is one call when it applies.
                result = self._record_deleted_version(old)
                first = False
                if result is APPLIED or isinstance(result, Outcome):
                    return Outcome.STALE
                old = result
                continue
            if old is not None and self._is_stale_delete(old):
                return Outcome.STALE
            hidden = self._hide()
            if hidden is not APPLIED:
                old = hidden
                continue
            return self._write_current(s3)
        raise WriteContentionError(f"{self.event.key!r}: the item changed under every write of one event")

    def _holds_another_version(self, old: Mapping[str, Any] | None) -> bool:
        """Python's reading of case 1's condition against an item."""
        if old is None or schema.ORDER_KEY not in old or not self.is_newer_than(old[schema.ORDER_KEY]):
            return False
        held = old.get(schema.VERSION_ID)
        if held is None:
            return self.version != NULL_VERSION and not old.get(schema.DELETED)
        return bool(held != self.version)

    def _is_stale_delete(self, old: Mapping[str, Any]) -> bool:
        held_order = old.get(schema.ORDER_KEY)
        if held_order is None or self.is_newer_than(held_order):
            return False
        return not (held_order == self.order and _is_pending_lookup(old))

    def _record_deleted_version(self, old: Mapping[str, Any] | None) -> Any:
        """Case 1: returns APPLIED, Outcome.STALE when nothing is left to record, or the old item."""
        names = {"#order": schema.ORDER_KEY, "#version": schema.VERSION_ID, "#purgedUntil": PURGED_UNTIL}
        values: dict[str, Any] = {":order": self.order, ":version": self.version}
        # Another version: a versionId that differs, or none (the "null" version) on an entry that is not
        # a tombstone (a tombstone without versionId may be a pending lookup, which case 2 owns).
        another = "(attribute_exists(#version) AND #version <> :version)"
        if self.version != NULL_VERSION:
            names["#deleted"] = schema.DELETED
            another = f"({another} OR (attribute_not_exists(#version) AND attribute_not_exists(#deleted)))"
        condition = f"{self.later('#order')} AND {another}"
        raise_bound = old is None or _below(old.get(PURGED_UNTIL), self.order)
        if raise_bound:
            condition += " AND (attribute_not_exists(#purgedUntil) OR #purgedUntil < :order)"
            updates = ["#purgedUntil = :order"]
        else:
            condition += " AND #purgedUntil >= :order"
            updates = []
        if self.version == NULL_VERSION:
            names["#nullPurgedAt"] = NULL_PURGED_AT
            if old is not None and not _below(old.get(NULL_PURGED_AT), self.order):
                return Outcome.STALE  # null versions up to here are already blocked
            condition += " AND (attribute_not_exists(#nullPurgedAt) OR #nullPurgedAt < :order)"
            expression = "SET " + ", ".join([*updates, "#nullPurgedAt = :order"])
        else:
            names["#deletedVersions"] = schema.DELETED_VERSIONS
            values[":versions"] = {self.version}
            expression = "ADD #deletedVersions :versions"
            if updates:
                expression = "SET " + ", ".join(updates) + " " + expression
        return self.conditional(
            "update_item",
            Key=self.key(),
            ConditionExpression=condition,
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )

    def _hide(self) -> Any:
        """Case 2, first write: hide the entry under the delete's position and mark the lookup pending."""
        names = {"#order": schema.ORDER_KEY, "#version": schema.VERSION_ID, "#deleted": schema.DELETED}
        values: dict[str, Any] = {":order": self.order, ":version": self.version, ":true": True}
        # An older entry without versionId holds "null", or nothing case 1 can keep showing.
        condition = (
            "attribute_not_exists(#order)"
            f" OR ({self.later('#order')} AND (#version = :version OR attribute_not_exists(#version)))"
            " OR (#order = :order AND #deleted = :true AND attribute_not_exists(#version))"
        )
        tombstone: dict[str, Any] = {
            schema.ORDER_KEY: self.order,
            schema.DELETED: True,
            schema.EXPIRES_AT: self.expires_at,
        }
        if self.event.sequencer is not None:
            tombstone[schema.SEQUENCER] = self.event.sequencer
        update_names: dict[str, str] = {}
        update_values: dict[str, Any] = {}
        set_part, remove_part = set_and_remove(tombstone, update_names, update_values, prefix="h")
        result = self.conditional(
            "update_item",
            Key=self.key(),
            # The entry hidden, for its name items (returned values cost no capacity).
            ReturnValues="ALL_OLD",
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames={**names, **update_names},
            ExpressionAttributeValues=serialize({**values, **update_values}),
        )
        if result is APPLIED:
            self.seen["hidden"] = self.seen.get("old")
        return result

    def _write_current(self, s3: S3Client) -> Outcome:
        """Case 2, the lookup and the second write; DELETED when there is no current version."""
        current = head_current_version(s3, self.event.bucket, self.event.key)
        if current is None:
            return Outcome.DELETED
        restored = ObjectEvent(
            event_name="ObjectCreated:Put",
            bucket=self.event.bucket,
            key=self.event.key,
            event_time=current.last_modified,
            sequencer=self.event.sequencer,
            size=current.size,
            e_tag=current.e_tag,
            version_id=current.version_id,
            upload_user=self.event.upload_user,
            file_id=self.event.file_id,
            no_user_reason=self.event.no_user_reason,
        )
        item = entry_item(restored, self.order, self.placement)
        self.seen["restored"] = item
        names = {"#order": schema.ORDER_KEY, "#deleted": schema.DELETED, "#version": schema.VERSION_ID}
        values: dict[str, Any] = {":order": self.order, ":true": True}
        # Still the lookup this delete started. No version delete can record anything meanwhile (case 1
        # needs a versionId, which the hide removed): they take this path and a later position instead.
        condition = "#order = :order AND #deleted = :true AND attribute_not_exists(#version)"
        update_names: dict[str, str] = {}
        update_values: dict[str, Any] = {}
        set_part, remove_part = set_and_remove(item, update_names, update_values, prefix="c")
        old = self.conditional(
            "update_item",
            Key=self.key(),
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames={**names, **update_names},
            ExpressionAttributeValues=serialize({**values, **update_values}),
        )
        if old is APPLIED or self._is_own_restore(old, current.version_id):
            self.seen["restored_applied"] = True
            return Outcome.WRITTEN
        return Outcome.DELETED  # a later event got there first; the delete itself was applied

    def _is_own_restore(self, old: Mapping[str, Any] | None, version_id: str | None) -> bool:
        """Whether the item a failed restore found is that restore's own write: the SDK sent the write
        again after its first answer was lost (a read timeout, a 500), and the first had applied."""
        return self.is_own_entry(old) and old.get(schema.VERSION_ID) == version_id


def _below(value: str | None, order: str) -> bool:
    return value is None or value < order


def _is_pending_lookup(item: Mapping[str, Any]) -> bool:
    """A hide that has no version yet: a lookup in progress, or one that found no current version."""
    return bool(item.get(schema.DELETED)) and schema.VERSION_ID not in item


@dataclass(frozen=True)
class CurrentVersion:
    version_id: str | None
    size: int
    e_tag: str | None
    last_modified: datetime


def head_current_version(s3: S3Client, bucket: str, key: str) -> CurrentVersion | None:
    """The object's current version; None when it has none (404, also when a delete marker is current)."""
    response = head_current(s3, bucket, key)
    if response is None:
        return None
    e_tag = response.get("ETag")
    return CurrentVersion(
        version_id=response.get("VersionId"),
        size=int(response["ContentLength"]),
        e_tag=e_tag.strip('"') if e_tag else None,
        last_modified=response["LastModified"],
    )
