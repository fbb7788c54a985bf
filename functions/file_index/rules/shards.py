"""Write sharding of a low-cardinality index partition key: the shard of an entry, the keys a read queries.

Every upload to a bucket writes the same partition key value of the bucket index, and one partition
takes at most 1,000 writes/s (docs/scaling.md). Spreading a value over `shard_count` shards multiplies
that: each entry goes to the shard its object key hashes to, and a read queries every shard and merges.

Keys
----
`shard_of(object_key, n)` is a stable hash (BLAKE2b of the UTF-8 key, 64 bits, mod n): the same on every
machine and every run, unlike Python's `hash()`. `sharded_key(value, shard)` is the partition key value:
shard 0 is the value itself, shard k > 0 is `value#k`. So:

- one shard is exactly the unsharded key (no suffix), and an entry written before sharding is in shard 0;
- raising the shard count on a live table loses nothing: an entry stays in the shard it was written to,
  and a reader that queries shards `0..n-1` of the largest count ever deployed finds every entry,
  whichever count wrote it. Lowering it would strand the entries of the shards it drops, which is why
  a deployment must refuse it.
- the suffix is unambiguous only if no value contains `#`: S3 bucket names never do; `sharded_key`
  refuses any value that does (`UnshardableValueError`), and the caller decides what to do with it.

The merge that reads a sharded index back in order is `file_index.rules.shard_merge`.
"""

from __future__ import annotations

import hashlib
import math

SHARD_SEPARATOR = "#"
MAX_SHARD_COUNT = 256


class InvalidShardCountError(ValueError):
    """A shard count outside 1..MAX_SHARD_COUNT, or a shard number outside 0..count-1."""


class UnshardableValueError(ValueError):
    """A partition key value that contains the shard separator, so its shards would be ambiguous."""


def check_count(shard_count: int) -> None:
    """Raise `InvalidShardCountError` unless 1 <= shard_count <= MAX_SHARD_COUNT."""
    if not 1 <= shard_count <= MAX_SHARD_COUNT:
        raise InvalidShardCountError(f"shard count must be 1-{MAX_SHARD_COUNT}, not {shard_count}")


def shard_of(object_key: str, shard_count: int) -> int:
    """The shard of an object key among `shard_count`: stable across machines, runs and versions."""
    check_count(shard_count)
    digest = hashlib.blake2b(object_key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shard_count


def sharded_key(value: str, shard: int) -> str:
    """The partition key value of `value`'s shard: the value itself for shard 0, else `value#shard`."""
    if SHARD_SEPARATOR in value:
        raise UnshardableValueError(f"{value!r} contains {SHARD_SEPARATOR!r}, so its shards are ambiguous")
    if not 0 <= shard < MAX_SHARD_COUNT:
        raise InvalidShardCountError(f"shard must be 0-{MAX_SHARD_COUNT - 1}, not {shard}")
    return value if shard == 0 else f"{value}{SHARD_SEPARATOR}{shard}"


def partition_key_for(value: str, object_key: str, shard_count: int) -> str:
    """Where a writer puts an entry: `value` unchanged for one shard, else the object key's shard."""
    check_count(shard_count)
    if shard_count == 1:
        return value
    return sharded_key(value, shard_of(object_key, shard_count))


def partition_keys(value: str, shard_count: int) -> list[str]:
    """Every partition key value a reader queries for `value`, shard 0 first."""
    check_count(shard_count)
    if shard_count == 1:
        return [value]
    return [sharded_key(value, shard) for shard in range(shard_count)]


def fair_share(limit: int, shard_count: int) -> int:
    """A batch size for `merge_page`: a shard's expected part of a page, plus two standard deviations.

    Object keys hash evenly, so a page of `limit` takes about `limit / shard_count` items from each
    shard; asking each for that plus a margin keeps the read-ahead near one page, and a shard that runs
    short is topped up (one more request) only when the page really needs its items.
    """
    check_count(shard_count)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    expected = limit / shard_count
    return min(limit, math.ceil(expected) + math.ceil(2 * math.sqrt(expected)) + 1)
