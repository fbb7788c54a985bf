"""Applies S3 object events to FileMetaData: one conditional write per ordinary event, no read.

The ordering rule lives in DynamoDB's ConditionExpression, so any number of writers may run at once and
an event may arrive any number of times, in any order:

    attribute_not_exists(orderKey) OR orderKey < :orderKey

`orderKey` (see `file_index.rules.objects`) compares as a plain string exactly as S3 sequencers compare under
AWS's right-pad rule. An equal or older event fails the condition and changes nothing (`STALE`).
Events without a sequencer use `<=` instead, so that of two events with the same time the one applied
last wins (the indexer applies one key's events in delivery order).

Creates and removals
--------------------
A create is a PutItem of the whole entry; a removal of the object (a delete marker,
`LifecycleExpiration:DeleteMarkerCreated`, or a delete in an unversioned bucket) is a PutItem of a
*tombstone* (`deleted`, `expiresAt` for DynamoDB TTL, the event's `orderKey`, none of the GSI key
attributes), so it is in no index, and an older create that arrives later fails the condition instead of
resurrecting the file. Both also check that their version was not deleted for good: a real version id
must not be in `deletedVersions`; the "null" version (an upload while versioning was off or suspended, or
a create without versionId) must be newer than `nullPurgedAt`, because S3 re-creates "null" in place and
only the null versions from before the purge are gone.

The PutItem replaces the item. That is only safe when the bookkeeping it drops (`deletedVersions`,
`nullPurgedAt`) can no longer matter, which `purgedUntil` tells: it is at least the position of every
recorded version delete, and a deleted version's create is older than its delete, so an event newer than
`purgedUntil` leaves nothing for the bookkeeping to block. The PutItem therefore also requires
`purgedUntil < :orderKey`. When only that fails (an event that overtook a later version delete, rare),
the same write is made as an UpdateItem that keeps the bookkeeping. The condition failure returns the
old item (`ReturnValuesOnConditionCheckFailure`), so telling the two apart costs no read, and a stale or
duplicate event stays one call.

Permanent deletes of one version
--------------------------------
`ObjectRemoved:Delete` or `LifecycleExpiration:Delete` with a versionId: `file_index.write.version_delete`
tells its three cases, decided by the conditions.

Placement
---------
Every entry this module writes is built by `entry_item` under the writer's `ShardPlacement`
(`file_index.rules.placement`): the bucket's shard value in `bucketName`, the user's in `uploadUser` (with
`userShard` on a hot user's shard above 0), and `zAddress` when the Z-order index is on. Shards depend only
on the object key, so under one placement an overwrite lands in the shard of the entry it replaces; after a
raise of a shard count it may land in another, and the key's name items move with it (`update_names`,
which knows the old shard from the replaced entry that the write returns). Every tombstone, whichever
write makes it, carries none of these, so it is in no index.

A version delete's case 2 is the only one with more than one call (two writes and a HEAD); an ordinary
event, a duplicate or an older event is one call and no read.

What this gives
---------------
Once the queue is drained, the index shows for each key its current version in the bucket (a delete
marker hides the key), whatever the delivery order, for overwrites, delete markers, lifecycle expiry,
suspended versioning, and permanent deletes of any version, current or not, delete markers included.

Limits. A delete whose event carries no versionId is taken as the object being gone (an unversioned
bucket): should S3 send one for the null version of a bucket whose older versions remain, the key shows
as deleted until its next event. A lookup whose HEAD keeps failing (the indexer may not read the bucket)
leaves its key hidden under the delete's position once the message is dead-lettered, until the key's
next event or a reconcile. The HEAD answers what is current when it runs, possibly a later state than the
delete's; that state's own events are still to come and write the same. The lookup needs `s3:GetObject`
on the bucket, and `s3:ListBucket` so that S3 answers a missing key with 404 rather than 403.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from file_index.rules import schema
from file_index.rules.name_items import is_live_entry
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS, NULL_VERSION, ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.rules.upload_statistics import StatisticsTally
from file_index.store.sdk import DynamoDBClient, S3Client, serialize
from file_index.write.conditions import APPLIED, Outcome
from file_index.write.entry_items import (
    DEFAULT_PLACEMENT,
    NULL_PURGED_AT,
    PURGED_UNTIL,
    entry_item,
    set_and_remove,
    tombstone,
)
from file_index.write.names import NameIndex
from file_index.write.version_delete import VersionDeleteWrite


def apply_event(
    dynamodb: DynamoDBClient,
    table_name: str,
    event: ObjectEvent,
    *,
    s3: S3Client,
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS,
    now: datetime | None = None,
    placement: ShardPlacement = DEFAULT_PLACEMENT,
    names: NameIndex | None = None,
    statistics: StatisticsTally | None = None,
) -> Outcome:
    """Write `event` into the index if it is newer than what the index holds for its key.

    One PutItem or UpdateItem (SDK retries aside), except in the rare cases the module docstring names.
    `s3` is used only for a HEAD of the event's object when a permanent version delete may have changed
    which version is current. `placement` places the entry (`entry_item`). `names`, when given, keeps the
    name index in step (`file_index.write.names`): a new live entry's items are put after it (an overwrite of
    a live entry moves its term items to its new upload time, and every item when it moved the entry to
    another shard), a removed
    entry's items, in the shards its stored values name, are deleted (those its key's live entry has by
    then put back). Raises
    botocore's ClientError for anything but a failed condition (e.g. throttling that outlasted the SDK's
    retries, or a HEAD answered with 403), and `WriteContentionError` when other writers kept changing
    the item.
    """
    expires_at = int(((now or datetime.now(UTC)) + timedelta(days=tombstone_ttl_days)).timestamp())
    write = _Write(dynamodb, table_name, event, expires_at, placement)
    outcome = write.remove_version(s3) if event.removes_one_version else write.put()
    if names is not None:
        write.update_names(names, outcome)
    if statistics is not None:
        write.update_statistics(statistics, outcome)
    return outcome


@dataclass(frozen=True)
class _Write(VersionDeleteWrite):
    """The writes of one event, and what they tell the name index and the statistics."""

    # Creates and removals of the object.

    def put(self) -> Outcome:
        """A create's entry or a removal's tombstone (module docstring, "Creates and removals")."""
        done = Outcome.DELETED if self.event.is_removal else Outcome.WRITTEN
        item = (
            tombstone(self.event, self.order, self.expires_at)
            if self.event.is_removal
            else entry_item(self.event, self.order, self.placement)
        )
        checks_version = not self.event.is_removal or self.event.version_id is not None
        names = {"#order": schema.ORDER_KEY, "#purgedUntil": PURGED_UNTIL}
        values: dict[str, Any] = {":order": self.order}
        condition = f"({self.newer('#order')})"
        if checks_version:
            condition += f" AND {self._version_allowed(names, values)}"
        unbound = "(attribute_not_exists(#purgedUntil) OR #purgedUntil < :order)"
        self.seen["written"] = item
        old = self.conditional(
            "put_item",
            Item=serialize(item),
            ReturnValues="ALL_OLD",
            ConditionExpression=f"{condition} AND {unbound}",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
        if old is APPLIED:
            return done
        if old is not None and (
            not self.is_newer_than(old.get(schema.ORDER_KEY))
            or (checks_version and not self._allowed_by(old))
        ):
            return Outcome.STALE
        # Only the bookkeeping rule failed: the same write, keeping it.
        del names["#purgedUntil"]
        set_part, remove_part = set_and_remove(item, names, values)
        old = self.conditional(
            "update_item",
            Key=self.key(),
            ReturnValues="ALL_OLD",
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
        return done if old is APPLIED else Outcome.STALE

    def _version_allowed(self, names: dict[str, str], values: dict[str, Any]) -> str:
        if self.version == NULL_VERSION:
            names["#nullPurgedAt"] = NULL_PURGED_AT
            return "(attribute_not_exists(#nullPurgedAt) OR #nullPurgedAt < :order)"
        names["#deletedVersions"] = schema.DELETED_VERSIONS
        values[":version"] = self.version
        return "NOT contains(#deletedVersions, :version)"

    def _allowed_by(self, old: Mapping[str, Any]) -> bool:
        """Python's reading of `_version_allowed` against an item."""
        if self.version == NULL_VERSION:
            purged = old.get(NULL_PURGED_AT)
            return purged is None or purged < self.order
        return self.version not in old.get(schema.DELETED_VERSIONS, set())

    # The name index.

    def update_names(self, names: NameIndex, outcome: Outcome) -> None:
        """Keep the name index in step with what this event did (`file_index.write.names`)."""
        if self.event.removes_one_version:
            hidden = self.seen.get("hidden")
            if self.seen.get("restored_applied"):
                # The restored current version gets its items; those of the entry it hid that it lacks
                # (it may land in another shard than the hidden entry) go.
                names.put_entry(self.seen["restored"], self.order)
                if is_live_entry(hidden):
                    names.delete_left_behind(hidden, self.seen["restored"])
            elif is_live_entry(hidden):
                # No version is current (or a later event wrote one, with its own items): the hidden
                # entry's items go (those of the key's live entry, if one is there by then, put back).
                names.delete_entry(hidden)
            elif self.is_own_entry(self.seen.get("old")):
                # This delete delivered again, after it restored a version and failed before its items.
                names.put_entry(self.seen["old"], self.order)
            return
        old = self.seen.get("old")
        if outcome is Outcome.WRITTEN and not self.event.is_removal:
            # A new key, or one that was deleted: its items. An overwrite of a live entry moves its term
            # items to its upload time, and every item when it moved to another shard (a raised count).
            if not is_live_entry(old):
                names.put_entry(self.seen["written"], self.order)
            else:
                names.move_entry(old, self.seen["written"], self.order)
                if self.is_own_entry(old):
                    # This event applied again (one without a sequencer delivered again after its items
                    # failed, or the write sent again by the SDK): moving found nothing to put.
                    names.put_entry(self.seen["written"], self.order)
        elif outcome is Outcome.DELETED:
            if is_live_entry(old):
                names.delete_entry(old)
        elif outcome is Outcome.STALE and not self.event.is_removal and is_live_entry(old):
            # A duplicate or older create: the live entry's items again, under its own position, in
            # case the first delivery wrote the entry and failed before its items.
            names.put_entry(old, str(old.get(schema.ORDER_KEY) or ""))

    def update_statistics(self, tally: StatisticsTally, outcome: Outcome) -> None:
        """Tally the live entry this event made and the live entry it removed (an overwrite's old one, a
        delete's): the bucket's statistics follow what it holds, churn included."""
        if self.event.removes_one_version:
            hidden = self.seen.get("hidden")
            if is_live_entry(hidden):
                tally.removed(hidden, self.event.bucket)
            if self.seen.get("restored_applied"):
                tally.added(self.seen["restored"], self.event.bucket)
            return
        old = self.seen.get("old")
        if self.is_own_entry(old):
            return  # this event applied again: its first write was tallied
        if outcome is Outcome.WRITTEN and not self.event.is_removal:
            tally.added(self.seen["written"], self.event.bucket)
        if outcome in (Outcome.WRITTEN, Outcome.DELETED) and is_live_entry(old):
            tally.removed(old, self.event.bucket)
