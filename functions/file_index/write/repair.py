"""Reconcile writes: the index repaired from the bucket itself, one conditional write a difference.

Both the command line (`file_search_admin`) and the state machine's Lambda (`backfill.handler`) write
through this module (and `file_index.write.listed_objects` for a backfill), so a backfill or a repair
means the same thing wherever it runs. What counts as a difference is `file_index.write.differences`.

A difference seen in a listing is confirmed by a HEAD of the object (`head_object`; a 404 or a delete
marker means gone) before anything is written, and the repair (`repair`) compares the item with what the
HEAD answered. Each repair is ONE conditional write that applies only if the item is still exactly what
the reconcile read: every attribute it read must be unchanged, and the watched attributes it did not see
must still be absent. A live event that lands in between therefore always wins (`Repair.CONFLICT`). The
repair keeps the item's `orderKey` (absent stays absent) and every bookkeeping attribute it does not
rewrite (`deletedVersions`, `nullPurgedAt`, `purgedUntil` and whatever else the writer keeps), so it
takes no position in the key's history: a later event still replaces it, an older or duplicate event
still changes nothing. A repaired entry carries no `sequencer` (no event wrote it); a repaired tombstone
has the writer's shape (`deleted`, `expiresAt`, none of the index key attributes).

An `UNPLACED` entry needs no HEAD (the address is a fact of the entry itself): `place_entry` sets its
`zAddress` with one UpdateItem conditioned on the entry being unchanged (`orderKey` present and equal, or
absent; the same size and upload date; still live), so a live event, whose own write carries its address,
always wins. `migrate` (the command line) and reconcile share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from file_index.rules import schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import put_if, update_if
from file_index.store.sdk import DynamoDBClient, S3Client
from file_index.write.differences import Difference, difference, head_object, is_live, placed_values
from file_index.write.entry_items import (
    DEFAULT_PLACEMENT,
    NULL_PURGED_AT,
    PLACEMENT_ATTRIBUTES,
    PURGED_UNTIL,
    entry_item,
)
from file_index.write.listed_objects import RECONCILE_EVENT, ListedObject
from file_index.write.names import NameIndex

# What an entry says about its object, and where the placement placed it: rewritten by a repair (a repaired
# tombstone keeps none of them, so it leaves every index).
# A repair writes what a listing or a HEAD shows: enrichment read by the indexer goes with the old entry.
ENTRY_ATTRIBUTES = frozenset(
    {schema.OBJECT_KEY, *schema.OBJECT_ATTRIBUTES, *PLACEMENT_ATTRIBUTES, *schema.ENRICHMENT_ATTRIBUTES}
)
TOMBSTONE_ATTRIBUTES = frozenset({schema.DELETED, schema.EXPIRES_AT})
# Attributes whose appearance since the read means a writer touched the item: a repair checks that each
# one it did not see is still absent (those it saw must still be equal).
WATCHED_ATTRIBUTES = (
    ENTRY_ATTRIBUTES
    | TOMBSTONE_ATTRIBUTES
    | {schema.ORDER_KEY, schema.DELETED_VERSIONS, NULL_PURGED_AT, PURGED_UNTIL}
)


class Repair(StrEnum):
    FIXED = "fixed"  # the one conditional write applied
    CONFLICT = "conflict"  # the item changed since it was read: a live event won, nothing written
    SETTLED = "settled"  # the HEAD showed no difference any more (S3 changed since the listing)
    DRY_RUN = "dry-run"  # a confirmed difference, not written on request


class Placement(StrEnum):
    UPDATED = "updated"  # the entry now has its zAddress
    ALREADY = "already"  # it had it: nothing written
    SKIPPED = "skipped"  # it changed since it was read (a live event, which writes its own address)


@dataclass(frozen=True)
class Finding:
    """A difference a listing showed, after the HEAD that confirms it and the repair (if any)."""

    key: str
    kind: Difference  # what the listing showed
    result: Repair


@dataclass(frozen=True)
class Repairer:
    """Confirms and repairs the differences of one bucket's index; safe to share between threads."""

    s3: S3Client
    dynamodb: DynamoDBClient
    table_name: str
    bucket: str
    key_pattern: KeyPattern
    dry_run: bool = False
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS
    shard_placement: ShardPlacement = DEFAULT_PLACEMENT
    names: NameIndex | None = None  # the name index, kept in step with every repair (None: none)
    judge_shards: bool = True  # False: `shard_placement`'s shard counts are a guess; shard values stay

    def differs(
        self, item: Mapping[str, Any] | None, current: ListedObject | None, *, compare_versions: bool = True
    ) -> Difference | None:
        """`difference` under this repairer's shard placement."""
        return difference(
            item,
            current,
            compare_versions=compare_versions,
            placement=self.shard_placement,
            judge_shards=self.judge_shards,
        )

    def check(
        self, key: str, item: Mapping[str, Any] | None, listed: ListedObject | None, *, compare_versions: bool
    ) -> Finding | None:
        """Compare `item` with the listing; on a difference, HEAD the object and repair from the HEAD.

        No request at all when the listing shows no difference. An entry that only lacks its placement
        (`UNPLACED`) is placed without a HEAD: its address is a fact of the entry alone.
        """
        seen = self.differs(item, listed, compare_versions=compare_versions)
        if seen is None:
            return None
        if seen is Difference.UNPLACED:
            assert item is not None
            return self._place(key, seen, item)
        current = head_object(self.s3, self.bucket, key)
        confirmed = self.differs(item, current)
        if confirmed is None:
            return Finding(key, seen, Repair.SETTLED)
        if confirmed is Difference.UNPLACED:
            assert item is not None
            return self._place(key, seen, item)
        if self.dry_run:
            return Finding(key, seen, Repair.DRY_RUN)
        applied = repair(
            self.dynamodb,
            self.table_name,
            self.bucket,
            key,
            item,
            current,
            self.key_pattern,
            tombstone_ttl_days=self.tombstone_ttl_days,
            shard_placement=self.shard_placement,
            name_index=self.names,
        )
        return Finding(key, seen, Repair.FIXED if applied else Repair.CONFLICT)

    def _place(self, key: str, seen: Difference, item: Mapping[str, Any]) -> Finding:
        if self.dry_run:
            return Finding(key, seen, Repair.DRY_RUN)
        placed = place_entry(
            self.dynamodb,
            self.table_name,
            item,
            self.shard_placement,
            judge_shards=self.judge_shards,
            name_index=self.names,
        )
        return Finding(key, seen, Repair.CONFLICT if placed is Placement.SKIPPED else Repair.FIXED)


def repair(
    dynamodb: DynamoDBClient,
    table_name: str,
    bucket: str,
    key: str,
    item: Mapping[str, Any] | None,
    current: ListedObject | None,
    key_pattern: KeyPattern,
    *,
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS,
    now: datetime | None = None,
    shard_placement: ShardPlacement = DEFAULT_PLACEMENT,
    name_index: NameIndex | None = None,
) -> bool:
    """Make the item describe `current` (None: a tombstone) if it is still exactly `item`; one PutItem.

    The new entry is placed by `shard_placement`. Returns False when the item changed since it was read (a
    live event wins) and nothing was written. `name_index`, when given, follows: a written entry gets its name
    items, a live entry made a tombstone loses the items it wrote (those of a later create stay).
    """
    kept = {
        name: value
        for name, value in (item or {}).items()
        if name not in ENTRY_ATTRIBUTES | TOMBSTONE_ATTRIBUTES
    }
    new: dict[str, Any]
    if current is None:
        expires_at = int(((now or datetime.now(UTC)) + timedelta(days=tombstone_ttl_days)).timestamp())
        new = {**kept, schema.OBJECT_KEY: key, schema.DELETED: True, schema.EXPIRES_AT: expires_at}
    else:
        if current.key != key:
            raise ValueError(f"object {current.key!r} cannot repair the entry of {key!r}")
        new = {
            **kept,
            **entry_item(current.event(bucket, key_pattern, RECONCILE_EVENT), None, shard_placement),
        }
    assert current is not None or not (schema.GSI_KEY_ATTRIBUTES | {schema.USER_SHARD}) & new.keys(), (
        "tombstones stay out of indexes"
    )
    condition, names, values = unchanged_condition(item)
    if not put_if(dynamodb, table_name, new, condition, names, values):
        return False
    if name_index is not None:
        if current is not None:
            name_index.put_entry(new, new.get(schema.ORDER_KEY))
            if item is not None and is_live(item):
                # Under the placement given the entry may have left the shard of `item`, and its items.
                name_index.delete_left_behind(item, new)
        elif item is not None and is_live(item):
            name_index.delete_entry(item)
    return True


def place_entry(
    dynamodb: DynamoDBClient,
    table_name: str,
    item: Mapping[str, Any],
    placement: ShardPlacement,
    *,
    judge_shards: bool = True,
    name_index: NameIndex | None = None,
) -> Placement:
    """Give a live entry the place `placement` wants for it (its shards, its `zAddress`), if it is still
    the entry that was read.

    One UpdateItem (none when the entry is already in place). The condition: still live, the same
    `orderKey` (or still none), the same size and upload date, and when it moves the entry between shards
    the same shard values. Any event that changed the
    entry since the read fails it (its own write placed the entry), so the update never undoes a newer
    write. `name_index`, when given, follows an entry moved between shards: its items move with it.
    """
    if not is_live(item):
        raise ValueError(f"{item.get(schema.OBJECT_KEY)!r} is a tombstone: it has no place in any index")
    placed = placed_values(item, placement, judge_shards)
    if not placed:
        return Placement.ALREADY
    names = {
        "#order": schema.ORDER_KEY,
        "#size": schema.SIZE,
        "#date": schema.UPLOAD_DATE,
        "#deleted": schema.DELETED,
    }
    values: dict[str, Any] = {":size": item[schema.SIZE], ":date": item[schema.UPLOAD_DATE]}
    sets, removes = [], []
    for position, (name, value) in enumerate(sorted(placed.items())):
        names[f"#p{position}"] = name
        if value is None:
            removes.append(f"#p{position}")
        else:
            values[f":p{position}"] = value
            sets.append(f"#p{position} = :p{position}")
    clauses = ["#size = :size", "#date = :date", "attribute_not_exists(#deleted)"]
    if schema.BUCKET_NAME in placed:
        # Moved between shards only from the shard values as read: a writer that moved it since placed it.
        shard_clauses, shard_names, shard_values = _as_read(
            item, (schema.BUCKET_NAME, schema.UPLOAD_USER, schema.USER_SHARD), "s"
        )
        clauses += shard_clauses
        names |= shard_names
        values |= shard_values
    update = " ".join(
        part
        for part in (
            f"SET {', '.join(sets)}" if sets else "",
            f"REMOVE {', '.join(removes)}" if removes else "",
        )
        if part
    )
    if schema.ORDER_KEY in item:
        values[":order"] = item[schema.ORDER_KEY]
        clauses.append("#order = :order")
    else:
        clauses.append("attribute_not_exists(#order)")
    if not update_if(
        dynamodb, table_name, item[schema.OBJECT_KEY], update, " AND ".join(clauses), names, values
    ):
        return Placement.SKIPPED
    if name_index is not None:
        placed_entry = {name: value for name, value in {**item, **placed}.items() if value is not None}
        name_index.move_entry(item, placed_entry, placed_entry.get(schema.ORDER_KEY))
    return Placement.UPDATED


def unchanged_condition(item: Mapping[str, Any] | None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """A condition true only while the item is exactly `item` (None: while there is no item)."""
    if item is None:
        return "attribute_not_exists(#key)", {"#key": schema.OBJECT_KEY}, {}
    clauses, names, values = _as_read(item, sorted(set(item) | WATCHED_ATTRIBUTES), "a")
    return " AND ".join(clauses), names, values


def _as_read(
    item: Mapping[str, Any], attributes: Iterable[str], prefix: str
) -> tuple[list[str], dict[str, str], dict[str, Any]]:
    """Condition clauses (with their names and values, placeholders `#{prefix}n`/`:{prefix}n`) true only
    while each of `attributes` holds the value it has in `item`, or is still absent where it is."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses: list[str] = []
    for position, name in enumerate(attributes):
        names[f"#{prefix}{position}"] = name
        if name in item:
            values[f":{prefix}{position}"] = item[name]
            clauses.append(f"#{prefix}{position} = :{prefix}{position}")
        else:
            clauses.append(f"attribute_not_exists(#{prefix}{position})")
    return clauses, names, values
