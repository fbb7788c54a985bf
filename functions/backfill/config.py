"""The backfill function's configuration, read from the environment once per cold start and validated.

| variable | meaning |
|---|---|
| `TABLE_NAME` (required) | the FileMetaData table |
| `BUCKET_NAME` (required) | the indexed bucket; a batch of any other bucket is refused |
| `KEY_LAYOUT` | `default` or a regex with groups `user` and `file`, as the indexer's |
| `TOMBSTONE_TTL_DAYS` | expiry of the tombstones a repair writes (default 30) |
| `SCAN_SEGMENTS` | parallel segments of the sweep for entries of deleted objects (default 8) |
| `WRITE_CONCURRENCY` | requests in flight within one invocation (default 16) |
| `BUCKET_INDEX_SHARDS`, `HOT_USERS`, `MULTI_ATTRIBUTE_INDEX` | the shard placement, as the indexer's |
| `NAME_TABLE_NAME` | the name index, kept in step by every backfill write and repair (unset: none) |
| `DYNAMODB_MAX_ATTEMPTS` | SDK attempts per call, as the indexer's (`file_index.store.sdk.SdkSettings`) |
| `SDK_CONNECT_TIMEOUT_SECONDS`, `SDK_READ_TIMEOUT_SECONDS` | as the indexer's: seconds, not botocore's 60 |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from file_index.rules.config import ConfigError, key_pattern, positive_int, required
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import ShardPlacement
from file_index.store.sdk import SdkSettings

__all__ = ["BackfillConfig", "ConfigError"]


@dataclass(frozen=True)
class BackfillConfig:
    table_name: str
    bucket_name: str
    key_pattern: KeyPattern
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS
    scan_segments: int = 8
    write_concurrency: int = 16
    sdk: SdkSettings = field(default_factory=SdkSettings)
    placement: ShardPlacement = field(default_factory=ShardPlacement)
    name_table_name: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BackfillConfig:
        env = os.environ if env is None else env
        purpose = "the backfill function needs it"
        write_concurrency = positive_int(env, "WRITE_CONCURRENCY", 16)
        return cls(
            table_name=required(env, "TABLE_NAME", purpose),
            bucket_name=required(env, "BUCKET_NAME", purpose),
            key_pattern=key_pattern(env),
            tombstone_ttl_days=positive_int(env, "TOMBSTONE_TTL_DAYS", DEFAULT_TOMBSTONE_TTL_DAYS),
            scan_segments=positive_int(env, "SCAN_SEGMENTS", 8),
            write_concurrency=write_concurrency,
            sdk=SdkSettings.from_env(env, max_connections=write_concurrency),
            placement=ShardPlacement.from_env(env),
            name_table_name=env.get("NAME_TABLE_NAME", "").strip() or None,
        )
