"""The items the writer puts: a create's entry (`entry_item`, placed by a `ShardPlacement`), a removal's
tombstone (`tombstone`, in no index), and the SET and REMOVE clauses that write either over an existing
item while keeping its bookkeeping of permanent version deletes (`set_and_remove`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from file_index.rules import schema
from file_index.rules.objects import NULL_VERSION, ObjectEvent
from file_index.rules.placement import ShardPlacement

# Bookkeeping of permanent version deletes (`file_index.write.version_delete` and `schema`).
NULL_PURGED_AT = schema.NULL_PURGED_AT
PURGED_UNTIL = schema.PURGED_UNTIL

# Where the placement places an entry, besides its bucket and user values: written by `entry_item` only.
PLACEMENT_ATTRIBUTES = (schema.USER_SHARD, schema.Z_ADDRESS)
# Attributes an entry or a tombstone may carry, besides the key and the bookkeeping above. A write that
# keeps the bookkeeping sets some and removes the rest, so it leaves what a PutItem would (a tombstone
# written that way loses `zAddress` and `userShard` as well, so it leaves every index).
ENTRY_ATTRIBUTES = (
    *schema.OBJECT_ATTRIBUTES,
    *schema.ENRICHMENT_ATTRIBUTES,
    *PLACEMENT_ATTRIBUTES,
    schema.ORDER_KEY,
    schema.DELETED,
    schema.EXPIRES_AT,
)
# The placement of a writer that is given none: unsharded entries (one shard, no hot user, no Z-order).
DEFAULT_PLACEMENT = ShardPlacement()


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


def tombstone(event: ObjectEvent, order_key: str, expires_at: int) -> dict[str, Any]:
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


def set_and_remove(
    item: Mapping[str, Any], names: dict[str, str], values: dict[str, Any], *, prefix: str = "a"
) -> tuple[str, str]:
    """SET and REMOVE clauses that leave an existing item's entry attributes exactly as `item` has them,
    and its bookkeeping as it was."""
    sets, removes = [], []
    for position, name in enumerate(ENTRY_ATTRIBUTES):
        alias = f"#{prefix}{position}"
        names[alias] = name
        if name in item:
            values[f":{prefix}{position}"] = item[name]
            sets.append(f"{alias} = :{prefix}{position}")
        else:
            removes.append(alias)
    extra = set(item) - set(ENTRY_ATTRIBUTES) - {schema.OBJECT_KEY}
    assert not extra, f"not an entry attribute: {sorted(extra)}"
    return ("SET " + ", ".join(sets)) if sets else "", ("REMOVE " + ", ".join(removes)) if removes else ""


def version_of(event: ObjectEvent) -> str:
    return event.version_id if event.version_id is not None else NULL_VERSION
