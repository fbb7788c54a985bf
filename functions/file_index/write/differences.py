"""What is wrong with an index item, given the object S3 holds and the placement the indexes have now.

`difference` compares an index item with the object S3 holds:

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
marker means gone) before `file_index.write.repair` writes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any

from file_index.rules import schema, shards
from file_index.rules.objects import NULL_VERSION
from file_index.rules.placement import ShardPlacement
from file_index.store.bucket import head_current
from file_index.store.sdk import S3Client
from file_index.write.entry_items import DEFAULT_PLACEMENT
from file_index.write.listed_objects import ListedObject


class Difference(StrEnum):
    MISSING = "missing"  # the object exists; the index has no entry (no item, or a tombstone)
    STALE = "stale"  # the entry describes another version (size, eTag or versionId differ)
    ORPHANED = "orphaned"  # a live entry for an object that no longer exists
    # The Z-order index is on and the entry lacks its own zAddress, or it sits in a shard no reader queries.
    UNPLACED = "unplaced"


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
    size, upload_date = number(item.get(schema.SIZE)), item.get(schema.UPLOAD_DATE)
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
    stored_user, user_shard = item.get(schema.UPLOAD_USER), number(item.get(schema.USER_SHARD)) or 0
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


def placed_values(item: Mapping[str, Any], placement: ShardPlacement, judge_shards: bool) -> dict[str, Any]:
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
            user = ShardPlacement.public_user(stored_user, number(item.get(schema.USER_SHARD)))
            placed[schema.UPLOAD_USER] = placement.user_partition(user, key)
            placed[schema.USER_SHARD] = placement.user_shard(user, key) or None
    expected = expected_z_address(item, placement)
    if expected is not None and item.get(schema.Z_ADDRESS) != expected:
        placed[schema.Z_ADDRESS] = expected
    return placed


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
    if number(item.get(schema.SIZE)) != current.size or item.get(schema.E_TAG) != (current.e_tag or None):
        return Difference.STALE
    if compare_versions and current.version_id is not None:
        held = item.get(schema.VERSION_ID) or NULL_VERSION
        if held != current.version_id:
            return Difference.STALE
    if is_unplaced(item, placement, judge_shards=judge_shards):
        return Difference.UNPLACED
    return None


def number(value: Any) -> int | None:
    """A stored number as an int; None for anything else (absent included)."""
    return int(value) if isinstance(value, Decimal | int) else None


def head_object(s3: S3Client, bucket: str, key: str) -> ListedObject | None:
    """The object's current version, or None if the key has none (404, or a delete marker is current)."""
    response = head_current(s3, bucket, key)
    if response is None or response.get("DeleteMarker"):
        return None
    return ListedObject.from_head(key, response)
