"""Backfill and reconcile writes: the index built from, and checked against, the bucket itself.

Both the command line (`file_search_admin`) and the state machine's Lambda (`backfill.handler`) write
through this module, so a backfill or a repair means the same thing wherever it runs.

**Backfill.** A listed object (`ListedObject`) becomes the entry a create event would write
(`writer.entry_item`), without a sequencer and without `orderKey`: it holds no position in the key's
history, so any live event replaces it. It is written only where the index has no item for the key
(`attribute_not_exists(objectKey)`): an entry or a tombstone a live event wrote always wins over a
listing, so a backfill may run while uploads and deletes go on. A failed condition is `SKIPPED`.

**Reconcile.** `difference` compares an index item with the object S3 holds:

- `MISSING`: the object exists, the index has no item or a tombstone;
- `STALE`: the entry's size, eTag or versionId differ from the object's current version;
- `ORPHANED`: a live entry for an object that no longer exists;
- `UNPLACED`: a live entry of the current version that the placement's indexes cannot find as they are now:
  the Z-order index is on and the entry lacks `zAddress` or holds another address than its own upload
  time and size give; or the entry sits in a shard the placement's readers never query (`outside_placement`: a
  bucket shard at or above `bucketIndexShards`, a user shard at or above the user's count), as entries
  written with a placement that was never deployed do.

Placement (`file_index.rules.placement`). Entries are compared with the bucket by the public bucket
(`ShardPlacement.public_bucket` of the stored `bucketName`), never by the stored shard value. An entry that
sits in shard 0 because a smaller shard count (or a user not yet hot) wrote it is where readers look
(they query every shard of the current count, shard 0 included): it is not a difference and is never
rewritten. An entry in a shard beyond the current count is: no reader queries it, so `place_entry` moves
it to the shard the placement gives its key. Every write here places the entry by the placement it is given
(`entry_item`).

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

Version ids: an item without `versionId` and the `null` version are the same version (objects written
while versioning was off). A listing that cannot see versions (the state machine's S3 reader) compares
size and eTag only; the HEAD that confirms a difference brings the version id.

Folder placeholders (keys ending in `/`) are objects like any other: listed, indexed and repaired.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from file_index.rules import schema, shards
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS, NULL_VERSION, ObjectEvent, is_record_key
from file_index.rules.placement import ShardPlacement
from file_index.store import unprocessed
from file_index.store.sdk import DynamoDBClient, serialize
from file_index.write.names import NameIndex
from file_index.write.writer import (
    DEFAULT_PLACEMENT,
    NULL_PURGED_AT,
    PLACEMENT_ATTRIBUTES,
    PURGED_UNTIL,
    entry_item,
)

# boto3 ships no type information for its generated clients.
S3Client = Any

BACKFILL_EVENT = "ObjectCreated:Backfill"
RECONCILE_EVENT = "ObjectCreated:Reconcile"

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
# BatchGetItem's limit per request.
MAX_BATCH_GET = 100

_deserializer = TypeDeserializer()
_NOT_FOUND = frozenset({"404", "NoSuchKey", "NotFound"})


class BackfillOutcome(StrEnum):
    WRITTEN = "written"  # the index had no item for the key: the listed object is now indexed
    SKIPPED = "skipped"  # the index already had an entry or a tombstone (a live event wins)


class Difference(StrEnum):
    MISSING = "missing"  # the object exists; the index has no entry (no item, or a tombstone)
    STALE = "stale"  # the entry describes another version (size, eTag or versionId differ)
    ORPHANED = "orphaned"  # a live entry for an object that no longer exists
    # The Z-order index is on and the entry lacks its own zAddress, or it sits in a shard no reader queries.
    UNPLACED = "unplaced"


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


# -- backfill ----------------------------------------------------------------------------------------------


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

    `key_pattern` names the uploader from the key; `shard_placement` places the entry (`writer.entry_item`);
    `names`, when given, gets the new entry's name items (`file_index.write.names`).
    """
    item = entry_item(obj.event(bucket, key_pattern), None, shard_placement)
    try:
        dynamodb.put_item(
            TableName=table_name,
            Item=serialize(item),
            ConditionExpression="attribute_not_exists(#key)",
            ExpressionAttributeNames={"#key": schema.OBJECT_KEY},
        )
    except ClientError as error:
        if _code(error) == "ConditionalCheckFailedException":
            return BackfillOutcome.SKIPPED
        raise
    if names is not None:
        names.put_entry(item, None)
    return BackfillOutcome.WRITTEN


# -- reading the index -------------------------------------------------------------------------------------


def plain_item(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item (attribute values) as plain values."""
    return {name: _deserializer.deserialize(value) for name, value in raw.items()}


def is_live(item: Mapping[str, Any] | None) -> bool:
    """An entry that describes an object (not a tombstone, not absent)."""
    return item is not None and not item.get(schema.DELETED)


def entry_bucket(item: Mapping[str, Any]) -> str | None:
    """The bucket an item describes an object of (its stored `bucketName` may be a shard value); None
    for a tombstone, which names no bucket."""
    stored = item.get(schema.BUCKET_NAME)
    return ShardPlacement.public_bucket(stored) if isinstance(stored, str) else None


def expected_z_address(item: Mapping[str, Any], placement: ShardPlacement) -> str | None:
    """The `zAddress` a live entry must hold under `placement` (None: the Z-order index is off)."""
    size, upload_date = _number(item.get(schema.SIZE)), item.get(schema.UPLOAD_DATE)
    if size is None or not isinstance(upload_date, str):
        raise ValueError(f"entry {item.get(schema.OBJECT_KEY)!r} has no size or upload date")
    return placement.z_address(upload_date, size)


def outside_placement(item: Mapping[str, Any], placement: ShardPlacement) -> bool:
    """An entry in a shard that `placement`'s readers never query: a bucket shard at or above
    `bucketIndexShards`, or a user shard at or above the user's count (a user not hot in `placement`).

    An entry in a lower shard than its key would get now (shard 0 of a count since raised) is where
    readers look: it is not outside (module docstring).
    """
    stored_bucket = item.get(schema.BUCKET_NAME)
    if isinstance(stored_bucket, str):
        _, separator, shard = stored_bucket.partition(shards.SHARD_SEPARATOR)
        if separator and (not shard.isdigit() or int(shard) >= placement.bucket_shards):
            return True
    stored_user, user_shard = item.get(schema.UPLOAD_USER), _number(item.get(schema.USER_SHARD)) or 0
    if isinstance(stored_user, str) and user_shard:
        return user_shard >= placement.user_shards(ShardPlacement.public_user(stored_user, user_shard))
    return False


def is_unplaced(item: Mapping[str, Any], placement: ShardPlacement, *, judge_shards: bool = True) -> bool:
    """A live entry the placement's indexes cannot find as they should: outside its shards, or the Z-order
    index is on and the entry has no (or another) zAddress. `judge_shards` False: the shard count is a
    guess (no cdk.json, no deployed stack), so shard values are left as they are."""
    if not is_live(item):
        return False
    if judge_shards and outside_placement(item, placement):
        return True
    return placement.multi_attribute_index and item.get(schema.Z_ADDRESS) != expected_z_address(
        item, placement
    )


def _placed_values(item: Mapping[str, Any], placement: ShardPlacement, judge_shards: bool) -> dict[str, Any]:
    """The attributes `place_entry` sets: the shard values of `placement` (when outside) and the zAddress.

    A value of None means the attribute is removed (a user shard of 0 is written as no `userShard`).
    """
    placed: dict[str, Any] = {}
    if judge_shards and outside_placement(item, placement):
        key = item[schema.OBJECT_KEY]
        bucket = ShardPlacement.public_bucket(item[schema.BUCKET_NAME])
        placed[schema.BUCKET_NAME] = placement.bucket_partition(bucket, key)
        stored_user = item.get(schema.UPLOAD_USER)
        if isinstance(stored_user, str):
            user = ShardPlacement.public_user(stored_user, _number(item.get(schema.USER_SHARD)))
            placed[schema.UPLOAD_USER] = placement.user_partition(user, key)
            placed[schema.USER_SHARD] = placement.user_shard(user, key) or None
    expected = expected_z_address(item, placement)
    if expected is not None and item.get(schema.Z_ADDRESS) != expected:
        placed[schema.Z_ADDRESS] = expected
    return placed


def scan_index(dynamodb: DynamoDBClient, table_name: str) -> Iterator[dict[str, Any]]:
    """Every object item of the table (entries and tombstones), state records left out; one Scan."""
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=table_name, ConsistentRead=True):
        for raw in page.get("Items", []):
            if not is_record_key(raw[schema.OBJECT_KEY]["S"]):
                yield plain_item(raw)


def get_items(dynamodb: DynamoDBClient, table_name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The items of `keys` (absent keys are absent), with BatchGetItem, consistent, unprocessed retried."""
    found: dict[str, dict[str, Any]] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), MAX_BATCH_GET):
        request: dict[str, Any] = {
            table_name: {
                "Keys": [{schema.OBJECT_KEY: {"S": key}} for key in unique[start : start + MAX_BATCH_GET]],
                "ConsistentRead": True,
            }
        }
        for raw in unprocessed.batch_get(dynamodb, request).raise_if_left().of(table_name):
            item = plain_item(raw)
            found[item[schema.OBJECT_KEY]] = item
    return found


# -- comparing ---------------------------------------------------------------------------------------------


def difference(
    item: Mapping[str, Any] | None,
    current: ListedObject | None,
    *,
    compare_versions: bool = True,
    placement: ShardPlacement = DEFAULT_PLACEMENT,
    judge_shards: bool = True,
) -> Difference | None:
    """What is wrong with `item` given the object S3 holds (`current`, None if there is none) and the
    placement the indexes have now."""
    if current is None:
        return Difference.ORPHANED if is_live(item) else None
    if item is None or not is_live(item):
        return Difference.MISSING
    if _number(item.get(schema.SIZE)) != current.size or item.get(schema.E_TAG) != (current.e_tag or None):
        return Difference.STALE
    if compare_versions and current.version_id is not None:
        held = item.get(schema.VERSION_ID) or NULL_VERSION
        if held != current.version_id:
            return Difference.STALE
    if is_unplaced(item, placement, judge_shards=judge_shards):
        return Difference.UNPLACED
    return None


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, Decimal | int) else None


def head_object(s3: S3Client, bucket: str, key: str) -> ListedObject | None:
    """The object's current version, or None if the key has none (404, or a delete marker is current)."""
    try:
        response = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if _code(error) in _NOT_FOUND:
            return None
        raise
    if response.get("DeleteMarker"):
        return None
    return ListedObject.from_head(key, response)


# -- repairing ---------------------------------------------------------------------------------------------


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
    try:
        dynamodb.put_item(
            TableName=table_name,
            Item=serialize(new),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            **({"ExpressionAttributeValues": serialize(values)} if values else {}),
        )
    except ClientError as error:
        if _code(error) == "ConditionalCheckFailedException":
            return False
        raise
    if name_index is not None:
        if current is not None:
            name_index.put_entry(new, new.get(schema.ORDER_KEY))
            if item is not None and is_live(item):
                # Under the placement given the entry may have left the shard of `item`, and its items.
                name_index.delete_left_behind(item, new)
        elif item is not None and is_live(item):
            # Items up to the replaced entry's own position: "" < "\0" covers those without one.
            name_index.delete_entry(item, str(item.get(schema.ORDER_KEY) or "") + "\0")
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
    placed = _placed_values(item, placement, judge_shards)
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
    try:
        dynamodb.update_item(
            TableName=table_name,
            Key=serialize({schema.OBJECT_KEY: item[schema.OBJECT_KEY]}),
            UpdateExpression=update,
            ConditionExpression=" AND ".join(clauses),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
    except ClientError as error:
        if _code(error) == "ConditionalCheckFailedException":
            return Placement.SKIPPED
        raise
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


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
