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

Placement
---------
Every entry this module writes is built by `entry_item` under the writer's `ShardPlacement`
(`file_index.rules.placement`): the bucket's shard value in `bucketName`, the user's in `uploadUser` (with
`userShard` on a hot user's shard above 0), and `zAddress` when the Z-order index is on. Shards depend only
on the object key, so under one placement an overwrite lands in the shard of the entry it replaces; after a
raise of a shard count it may land in another, and the key's name items move with it (`update_names`,
which knows the old shard from the replaced entry that the write returns). Every tombstone, whichever
write makes it, carries none of these, so it is in no index.

Case 2 is the only one with more than one call (two writes and a HEAD); an ordinary event, a duplicate or
an older event is one call and no read.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, TypeGuard

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from file_index.rules import schema
from file_index.rules.name_items import is_live_entry
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS, NULL_VERSION, ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.rules.upload_statistics import StatisticsTally
from file_index.store.sdk import DynamoDBClient, S3Client, serialize
from file_index.write.names import NameIndex

# Bookkeeping of permanent version deletes (see the module docstring and `schema`).
NULL_PURGED_AT = schema.NULL_PURGED_AT
PURGED_UNTIL = schema.PURGED_UNTIL

# Where the placement places an entry, besides its bucket and user values: written by `entry_item` only.
PLACEMENT_ATTRIBUTES = (schema.USER_SHARD, schema.Z_ADDRESS)
# Attributes an entry or a tombstone may carry, besides the key and the bookkeeping above. A write that
# keeps the bookkeeping sets some and removes the rest, so it leaves what a PutItem would (a tombstone
# written that way loses `zAddress` and `userShard` as well, so it leaves every index).
_ENTRY_ATTRIBUTES = (
    *schema.OBJECT_ATTRIBUTES,
    *schema.ENRICHMENT_ATTRIBUTES,
    *PLACEMENT_ATTRIBUTES,
    schema.ORDER_KEY,
    schema.DELETED,
    schema.EXPIRES_AT,
)
# The placement of a writer that is given none: unsharded entries (one shard, no hot user, no Z-order).
DEFAULT_PLACEMENT = ShardPlacement()
# Conditions only change when the item changes, so a handful of rounds covers any real contention.
_MAX_ROUNDS = 6
_NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})

_deserializer = TypeDeserializer()


class Outcome(StrEnum):
    WRITTEN = "written"  # the item now describes the object
    DELETED = "deleted"  # the item is now a tombstone
    STALE = "stale"  # the index already holds this event or a later one: nothing visible changed


class WriteContentionError(RuntimeError):
    """The item kept changing between the conditional writes of one event; retry the event."""


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
    entry's items, in the shards its stored values name, are deleted where older than the removal. Raises
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
class _Write:
    """The writes of one event, and the reading of the old item a failed condition returns."""

    dynamodb: DynamoDBClient
    table_name: str
    event: ObjectEvent
    expires_at: int
    placement: ShardPlacement = DEFAULT_PLACEMENT
    # What the name index needs to know of the writes made: the entry written, the item it replaced or
    # the item a failed condition returned (`update_names`).
    seen: dict[str, Any] = field(default_factory=dict)

    @property
    def order(self) -> str:
        return self.event.order_key

    @property
    def version(self) -> str:
        return _version_of(self.event)

    # Creates and removals of the object.

    def put(self) -> Outcome:
        """A create's entry or a removal's tombstone (module docstring, "Creates and removals")."""
        done = Outcome.DELETED if self.event.is_removal else Outcome.WRITTEN
        item = (
            _tombstone(self.event, self.order, self.expires_at)
            if self.event.is_removal
            else entry_item(self.event, self.order, self.placement)
        )
        checks_version = not self.event.is_removal or self.event.version_id is not None
        names = {"#order": schema.ORDER_KEY, "#purgedUntil": PURGED_UNTIL}
        values: dict[str, Any] = {":order": self.order}
        condition = f"({self._newer('#order')})"
        if checks_version:
            condition += f" AND {self._version_allowed(names, values)}"
        unbound = "(attribute_not_exists(#purgedUntil) OR #purgedUntil < :order)"
        self.seen["written"] = item
        old = self._conditional(
            "put_item",
            Item=serialize(item),
            ReturnValues="ALL_OLD",
            ConditionExpression=f"{condition} AND {unbound}",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
        if old is _APPLIED:
            return done
        if old is not None and (
            not self._is_newer_than(old.get(schema.ORDER_KEY))
            or (checks_version and not self._allowed_by(old))
        ):
            return Outcome.STALE
        # Only the bookkeeping rule failed: the same write, keeping it.
        del names["#purgedUntil"]
        set_part, remove_part = _set_and_remove(item, names, values)
        old = self._conditional(
            "update_item",
            Key=self._key(),
            ReturnValues="ALL_OLD",
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
        return done if old is _APPLIED else Outcome.STALE

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

    # Permanent deletes of one version.

    def remove_version(self, s3: S3Client) -> Outcome:
        """Module docstring, "Permanent deletes of one version": cases 1 to 3, decided by the conditions."""
        old: Mapping[str, Any] | None = None
        first = True
        for _ in range(_MAX_ROUNDS):
            if first or self._holds_another_version(old):
                # Case 1 is tried first: it is the common one, and it is one call when it applies.
                result = self._record_deleted_version(old)
                first = False
                if result is _APPLIED or isinstance(result, Outcome):
                    return Outcome.STALE
                old = result
                continue
            if old is not None and self._is_stale_delete(old):
                return Outcome.STALE
            hidden = self._hide()
            if hidden is not _APPLIED:
                old = hidden
                continue
            return self._write_current(s3)
        raise WriteContentionError(f"{self.event.key!r}: the item changed under every write of one event")

    def _holds_another_version(self, old: Mapping[str, Any] | None) -> bool:
        """Python's reading of case 1's condition against an item."""
        if old is None or schema.ORDER_KEY not in old or not self._is_newer_than(old[schema.ORDER_KEY]):
            return False
        held = old.get(schema.VERSION_ID)
        if held is None:
            return self.version != NULL_VERSION and not old.get(schema.DELETED)
        return bool(held != self.version)

    def _is_stale_delete(self, old: Mapping[str, Any]) -> bool:
        held_order = old.get(schema.ORDER_KEY)
        if held_order is None or self._is_newer_than(held_order):
            return False
        return not (held_order == self.order and _is_pending_lookup(old))

    def _record_deleted_version(self, old: Mapping[str, Any] | None) -> Any:
        """Case 1: returns _APPLIED, Outcome.STALE when nothing is left to record, or the old item."""
        names = {"#order": schema.ORDER_KEY, "#version": schema.VERSION_ID, "#purgedUntil": PURGED_UNTIL}
        values: dict[str, Any] = {":order": self.order, ":version": self.version}
        # Another version: a versionId that differs, or none (the "null" version) on an entry that is not
        # a tombstone (a tombstone without versionId may be a pending lookup, which case 2 owns).
        another = "(attribute_exists(#version) AND #version <> :version)"
        if self.version != NULL_VERSION:
            names["#deleted"] = schema.DELETED
            another = f"({another} OR (attribute_not_exists(#version) AND attribute_not_exists(#deleted)))"
        condition = f"{self._later('#order')} AND {another}"
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
        return self._conditional(
            "update_item",
            Key=self._key(),
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
            f" OR ({self._later('#order')} AND (#version = :version OR attribute_not_exists(#version)))"
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
        set_part, remove_part = _set_and_remove(tombstone, update_names, update_values, prefix="h")
        result = self._conditional(
            "update_item",
            Key=self._key(),
            # The entry hidden, for its name items (returned values cost no capacity).
            ReturnValues="ALL_OLD",
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames={**names, **update_names},
            ExpressionAttributeValues=serialize({**values, **update_values}),
        )
        if result is _APPLIED:
            self.seen["hidden"] = self.seen.get("old")
        return result

    def _write_current(self, s3: S3Client) -> Outcome:
        """Case 2, the lookup and the second write; DELETED when there is no current version."""
        current = _head(s3, self.event.bucket, self.event.key)
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
        set_part, remove_part = _set_and_remove(item, update_names, update_values, prefix="c")
        old = self._conditional(
            "update_item",
            Key=self._key(),
            ConditionExpression=condition,
            UpdateExpression=f"{set_part} {remove_part}".strip(),
            ExpressionAttributeNames={**names, **update_names},
            ExpressionAttributeValues=serialize({**values, **update_values}),
        )
        if old is _APPLIED or self._is_own_restore(old, current.version_id):
            self.seen["restored_applied"] = True
            return Outcome.WRITTEN
        return Outcome.DELETED  # a later event got there first; the delete itself was applied

    def _is_own_restore(self, old: Mapping[str, Any] | None, version_id: str | None) -> bool:
        """Whether the item a failed restore found is that restore's own write: the SDK sent the write
        again after its first answer was lost (a read timeout, a 500), and the first had applied."""
        return self._is_own_entry(old) and old.get(schema.VERSION_ID) == version_id

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
                # entry's items go, where older than the delete.
                names.delete_entry(hidden, self.order)
            elif self._is_own_entry(self.seen.get("old")):
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
                if self._is_own_entry(old):
                    # This event applied again (one without a sequencer delivered again after its items
                    # failed, or the write sent again by the SDK): moving found nothing to put.
                    names.put_entry(self.seen["written"], self.order)
        elif outcome is Outcome.DELETED:
            if is_live_entry(old):
                names.delete_entry(old, self.order)
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
        if self._is_own_entry(old):
            return  # this event applied again: its first write was tallied
        if outcome is Outcome.WRITTEN and not self.event.is_removal:
            tally.added(self.seen["written"], self.event.bucket)
        if outcome in (Outcome.WRITTEN, Outcome.DELETED) and is_live_entry(old):
            tally.removed(old, self.event.bucket)

    def _is_own_entry(self, entry: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
        """A live entry this event wrote (at its own position): its items may not have been written."""
        return is_live_entry(entry) and entry.get(schema.ORDER_KEY) == self.order

    # Shared pieces.

    def _newer(self, order: str) -> str:
        return f"attribute_not_exists({order}) OR {self._later(order)}"

    def _later(self, order: str) -> str:
        # Without a sequencer, equal times go to the event applied last (see module docstring).
        return f"{order} < :order" if self.event.sequencer is not None else f"{order} <= :order"

    def _is_newer_than(self, held_order: str | None) -> bool:
        """Python's reading of `_newer` against an item's orderKey."""
        if held_order is None:
            return True
        return held_order < self.order if self.event.sequencer is not None else held_order <= self.order

    def _key(self) -> dict[str, Any]:
        return serialize({schema.OBJECT_KEY: self.event.key})

    def _conditional(self, operation: str, **request: Any) -> Any:
        """`_APPLIED`, or the item as it was when the condition failed (None: there was none)."""
        try:
            response = getattr(self.dynamodb, operation)(
                TableName=self.table_name, ReturnValuesOnConditionCheckFailure="ALL_OLD", **request
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            raw = error.response.get("Item")
            old = None if raw is None else {name: _deserializer.deserialize(v) for name, v in raw.items()}
            self.seen["old"] = old
            return old
        raw = response.get("Attributes") if isinstance(response, Mapping) else None
        self.seen["old"] = None if not raw else {n: _deserializer.deserialize(v) for n, v in raw.items()}
        return _APPLIED


_APPLIED: Any = object()


def _below(value: str | None, order: str) -> bool:
    return value is None or value < order


def _is_pending_lookup(item: Mapping[str, Any]) -> bool:
    """A hide that has no version yet: a lookup in progress, or one that found no current version."""
    return bool(item.get(schema.DELETED)) and schema.VERSION_ID not in item


@dataclass(frozen=True)
class _CurrentVersion:
    version_id: str | None
    size: int
    e_tag: str | None
    last_modified: datetime


def _head(s3: S3Client, bucket: str, key: str) -> _CurrentVersion | None:
    """The object's current version; None when it has none (404, also when a delete marker is current)."""
    try:
        response = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in _NOT_FOUND_CODES:
            return None
        raise
    e_tag = response.get("ETag")
    return _CurrentVersion(
        version_id=response.get("VersionId"),
        size=int(response["ContentLength"]),
        e_tag=e_tag.strip('"') if e_tag else None,
        last_modified=response["LastModified"],
    )


def _set_and_remove(
    item: Mapping[str, Any], names: dict[str, str], values: dict[str, Any], *, prefix: str = "a"
) -> tuple[str, str]:
    """SET and REMOVE clauses that leave an existing item's entry attributes exactly as `item` has them,
    and its bookkeeping as it was."""
    sets, removes = [], []
    for position, name in enumerate(_ENTRY_ATTRIBUTES):
        alias = f"#{prefix}{position}"
        names[alias] = name
        if name in item:
            values[f":{prefix}{position}"] = item[name]
            sets.append(f"{alias} = :{prefix}{position}")
        else:
            removes.append(alias)
    extra = set(item) - set(_ENTRY_ATTRIBUTES) - {schema.OBJECT_KEY}
    assert not extra, f"not an entry attribute: {sorted(extra)}"
    return ("SET " + ", ".join(sets)) if sets else "", ("REMOVE " + ", ".join(removes)) if removes else ""


def _version_of(event: ObjectEvent) -> str:
    return event.version_id if event.version_id is not None else NULL_VERSION


def entry_item(
    event: ObjectEvent, order_key: str | None, placement: ShardPlacement = DEFAULT_PLACEMENT
) -> dict[str, Any]:
    """The index entry of a create, as plain values; without `orderKey` when `order_key` is None.

    An entry without `orderKey` holds no position in the key's history: any event replaces it (what a
    backfill or a repair writes).

    `placement` places it: `bucketName` is the bucket's shard value for the key (the bucket itself on shard
    0), `uploadUser` the user's (the user itself unless hot), `userShard` the user's shard when above 0,
    and `zAddress` is written when the Z-order index is on. Every shard depends only on the object key,
    so an overwrite of a key lands where the entry it replaces was (for the placement that wrote both).
    """
    if event.size is None:
        raise ValueError(f"{event.event_name} of {event.key!r} has no size: only a create has an entry")
    item: dict[str, Any] = {
        schema.OBJECT_KEY: event.key,
        schema.BUCKET_NAME: placement.bucket_partition(event.bucket, event.key),
        schema.FILE_ID: event.file_id,
        schema.SIZE: event.size,
        schema.UPLOAD_DATE: event.upload_date,
    }
    user = event.upload_user
    # Absent, not empty: a key without a user must stay out of the user index.
    optional = {
        schema.ORDER_KEY: order_key,
        schema.UPLOAD_USER: None if user is None else placement.user_partition(user, event.key),
        # Absent on shard 0, so a stored value is only ever read as a hot user's shard when it is one.
        schema.USER_SHARD: (placement.user_shard(user, event.key) or None) if user is not None else None,
        schema.Z_ADDRESS: placement.z_address(event.upload_date, event.size),
        schema.SEQUENCER: event.sequencer,
        schema.E_TAG: event.e_tag,
        schema.VERSION_ID: event.version_id,
        schema.CONTENT_TYPE: event.content_type,
        schema.META: event.metadata,
        schema.TAGS: event.tags,
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
    assert not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & item.keys(), "a tombstone is in no index"
    return item
