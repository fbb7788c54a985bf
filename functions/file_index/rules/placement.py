"""Where an entry lives in the indexes: shard counts, hot users and the optional Z-order index.

One `ShardPlacement` describes the deployment (docs/scaling.md); the writers (indexer, backfill, repair) use
it to place an entry, the search function to know which partition key values to read. It travels as
environment variables, set by the CDK app and the local stack from the same `cdk.json` context:

| variable | context key | meaning |
|---|---|---|
| `BUCKET_INDEX_SHARDS` | `bucketIndexShards` | shards of a bucket on `bucketName-size-index` (1-256) |
| `HOT_USERS` | `hotUsers` | JSON object: user -> shard count on `uploadUser-uploadDate-index` (1-256) |
| `MULTI_ATTRIBUTE_INDEX` | `multiAttributeIndex` | `true`: entries carry `zAddress` for the third index |

Unset means the unsharded placement (one shard, no hot user, no third index), so a function deployed without
these variables writes exactly what it always wrote. Shard 0 of a value is the value itself, so every
entry written under a smaller count is found by a reader of a larger one (`file_index.rules.shards`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from file_index.rules import shards, zorder
from file_index.rules.config import ConfigError

BUCKET_INDEX_SHARDS = "BUCKET_INDEX_SHARDS"
HOT_USERS = "HOT_USERS"
MULTI_ATTRIBUTE_INDEX = "MULTI_ATTRIBUTE_INDEX"

# The CDK app's default (docs/scaling.md: the smallest power of two that carries 10,000 new uploads/s per
# bucket with the busiest shard at 70% of its partition). A function without the variables keeps 1.
DEFAULT_BUCKET_INDEX_SHARDS = 16

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no", "")


class PlacementError(ConfigError):
    """A shard count, hot-user map or switch the index cannot use; the message names the setting."""


def check_shard_count(name: str, value: Any) -> int:
    """`value` if it is a whole number of shards (1..MAX_SHARD_COUNT), else PlacementError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= shards.MAX_SHARD_COUNT:
        raise PlacementError(
            f"{name} must be a whole number from 1 to {shards.MAX_SHARD_COUNT}, got {value!r}"
        )
    return value


def check_hot_users(name: str, value: Any) -> dict[str, int]:
    """A map of user -> shard count, each user non-empty and without the shard separator."""
    if not isinstance(value, Mapping):
        raise PlacementError(f'{name} must be an object of user -> shard count, e.g. {{"ingest-bot": 8}}')
    result: dict[str, int] = {}
    for user, count in value.items():
        if not isinstance(user, str) or not user.strip():
            raise PlacementError(f"{name}: a user name must be a non-empty string, got {user!r}")
        if shards.SHARD_SEPARATOR in user:
            raise PlacementError(
                f"{name}: user {user!r} contains {shards.SHARD_SEPARATOR!r}, so its shards would be ambiguous"
            )
        result[user] = check_shard_count(f"{name}[{user!r}]", count)
    return result


@dataclass(frozen=True)
class ShardPlacement:
    bucket_shards: int = 1
    hot_users: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    multi_attribute_index: bool = False

    def __post_init__(self) -> None:
        check_shard_count("bucketIndexShards", self.bucket_shards)
        object.__setattr__(self, "hot_users", MappingProxyType(check_hot_users("hotUsers", self.hot_users)))

    # Writers.
    def bucket_partition(self, bucket: str, object_key: str) -> str:
        """The `bucketName` value an entry of `object_key` is written with."""
        return shards.partition_key_for(bucket, object_key, self.bucket_shards)

    def user_partition(self, user: str, object_key: str) -> str:
        """The `uploadUser` value: the user itself unless the user is hot."""
        return shards.partition_key_for(user, object_key, self.user_shards(user))

    def user_shard(self, user: str, object_key: str) -> int:
        """The shard of the entry on the user index: 0 unless the user is hot. Written as `userShard`
        when above 0, so a reader tells a hot user's shard `bot#3` from a user literally named `bot#3`."""
        count = self.user_shards(user)
        return 0 if count == 1 else shards.shard_of(object_key, count)

    def z_address(self, upload_date: str, size: int) -> str | None:
        """The entry's `zAddress` when the third index is on, else None (the attribute stays absent)."""
        if not self.multi_attribute_index:
            return None
        return zorder.encode(zorder.epoch_millis(upload_date), size)

    # Readers.
    def user_shards(self, user: str) -> int:
        return self.hot_users.get(user, 1)

    def bucket_partitions(self, bucket: str) -> list[str]:
        """Every `bucketName` value a read of `bucket` queries, shard 0 (the bucket itself) first."""
        return shards.partition_keys(bucket, self.bucket_shards)

    def user_partitions(self, user: str) -> list[str]:
        return shards.partition_keys(user, self.user_shards(user))

    @staticmethod
    def public_bucket(stored: str) -> str:
        """The bucket of a stored `bucketName` value (S3 bucket names never contain `#`)."""
        return stored.partition(shards.SHARD_SEPARATOR)[0]

    @staticmethod
    def public_user(stored: str, user_shard: int | None) -> str:
        """The user of a stored `uploadUser` and `userShard` (None or 0 when absent): a hot user's shard
        value gives the user back; without `userShard` the value is the user's own name, `#` or not."""
        if not user_shard:
            return stored
        return stored.removesuffix(f"{shards.SHARD_SEPARATOR}{user_shard}")

    # Context (cdk.json): the CDK app, the local stack and the admin commands read the same keys.
    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> ShardPlacement:
        """The placement from `cdk.json` context values (`bucketIndexShards`, `hotUsers`,
        `multiAttributeIndex`); a missing key takes the CDK app's default (16 shards, no hot users, off).
        PlacementError names a bad key."""
        switch = context.get("multiAttributeIndex", False)
        if not isinstance(switch, bool):
            raise PlacementError(f"multiAttributeIndex must be true or false, got {switch!r}")
        return cls(
            bucket_shards=check_shard_count(
                "bucketIndexShards", context.get("bucketIndexShards", DEFAULT_BUCKET_INDEX_SHARDS)
            ),
            hot_users=check_hot_users("hotUsers", context.get("hotUsers", {})),
            multi_attribute_index=switch,
        )

    # Environment.
    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ShardPlacement:
        """The placement from a function's environment; PlacementError names a bad variable."""
        raw_shards = env.get(BUCKET_INDEX_SHARDS, "").strip()
        bucket_shards = 1
        if raw_shards:
            if not (raw_shards.isascii() and raw_shards.isdecimal()):
                raise PlacementError(f"{BUCKET_INDEX_SHARDS} must be a whole number, got {raw_shards!r}")
            bucket_shards = check_shard_count(BUCKET_INDEX_SHARDS, int(raw_shards))
        raw_users = env.get(HOT_USERS, "").strip()
        hot_users: dict[str, int] = {}
        if raw_users:
            try:
                parsed = json.loads(raw_users)
            except ValueError:
                raise PlacementError(f"{HOT_USERS} must be a JSON object, got {raw_users!r}") from None
            hot_users = check_hot_users(HOT_USERS, parsed)
        raw_switch = env.get(MULTI_ATTRIBUTE_INDEX, "").strip().lower()
        if raw_switch not in _TRUE + _FALSE:
            raise PlacementError(f"{MULTI_ATTRIBUTE_INDEX} must be true or false, got {raw_switch!r}")
        return cls(
            bucket_shards=bucket_shards, hot_users=hot_users, multi_attribute_index=raw_switch in _TRUE
        )

    def to_env(self) -> dict[str, str]:
        """The variables that give this placement to a function (`from_env` reads them back)."""
        return {
            BUCKET_INDEX_SHARDS: str(self.bucket_shards),
            HOT_USERS: json.dumps(dict(self.hot_users), sort_keys=True, separators=(",", ":")),
            MULTI_ATTRIBUTE_INDEX: "true" if self.multi_attribute_index else "false",
        }
