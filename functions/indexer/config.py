"""The indexer's configuration, read from the environment once per cold start and validated.

| variable | meaning |
|---|---|
| `TABLE_NAME` (required) | the FileMetaData table |
| `BUCKET_NAME` (required) | the indexed bucket: events of any other bucket are refused, never written |
| `KEY_LAYOUT` | `default` (user before the first `_` or `/`) or a regex with groups `user` and `file` |
| `TOMBSTONE_TTL_DAYS` | how long a delete's tombstone outlives the object (default 30) |
| `DYNAMODB_MAX_ATTEMPTS` | SDK attempts per call, first included (default 3, at most 10; S3 HEAD too) |
| `SDK_CONNECT_TIMEOUT_SECONDS` | how long one attempt may wait for a connection (default 2, at most 60) |
| `SDK_READ_TIMEOUT_SECONDS` | how long one attempt may wait for an answer (default 5, at most 60) |
| `WRITE_CONCURRENCY` | writes in flight at once within a batch (default 32) |
| `BUCKET_INDEX_SHARDS` | shards of the bucket on `bucketName-size-index` (default 1, at most 256) |
| `HOT_USERS` | JSON object of user -> shard count on `uploadUser-uploadDate-index` (default none) |
| `MULTI_ATTRIBUTE_INDEX` | `true`: entries carry `zAddress` for the Z-order index (default false) |
| `NAME_TABLE_NAME` | the name index table (`file_index.write.names`); unset: no name index is kept |
| `ENRICH` | comma-separated `contentType`, `metadata`, `tags`, read per create (`file_index.store.enrich`) |

The last three are the shard placement (`file_index.rules.placement`), set by the stack from the same
`cdk.json` context as the search function's; unset, entries are unsharded.

The tombstone must outlive any redelivery of an older create: SQS keeps a message at most 14 days, so the
default leaves a margin. The SDK settings bound one call (`SdkSettings.worst_call_seconds`, 24 s with the
defaults); the indexer starts no write later than that before its invocation's end (see `indexer.batch`).
A bad value fails the cold start with the variable's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from file_index.rules.config import ConfigError, key_pattern, positive_int, required
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import ShardPlacement
from file_index.store import enrich
from file_index.store.enrich import NONE, Enrich
from file_index.store.sdk import SdkSettings

__all__ = ["ConfigError", "IndexerConfig"]

DEFAULT_WRITE_CONCURRENCY = 32


@dataclass(frozen=True)
class IndexerConfig:
    table_name: str
    bucket_name: str
    key_pattern: KeyPattern
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS
    write_concurrency: int = DEFAULT_WRITE_CONCURRENCY
    # A connection for each entry write and each name write in flight (`handler.name_index`).
    sdk: SdkSettings = field(
        default_factory=lambda: SdkSettings(max_connections=2 * DEFAULT_WRITE_CONCURRENCY)
    )
    placement: ShardPlacement = field(default_factory=ShardPlacement)
    name_table_name: str | None = None
    enrich: Enrich = NONE

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IndexerConfig:
        env = os.environ if env is None else env
        write_concurrency = positive_int(env, "WRITE_CONCURRENCY", DEFAULT_WRITE_CONCURRENCY)
        return cls(
            table_name=required(env, "TABLE_NAME", "the indexer needs the FileMetaData table's name"),
            bucket_name=required(env, "BUCKET_NAME", "the indexer needs the name of the bucket it indexes"),
            key_pattern=key_pattern(env),
            tombstone_ttl_days=positive_int(env, "TOMBSTONE_TTL_DAYS", DEFAULT_TOMBSTONE_TTL_DAYS),
            write_concurrency=write_concurrency,
            # One connection per concurrent writer.
            sdk=SdkSettings.from_env(env, max_connections=2 * write_concurrency),
            placement=ShardPlacement.from_env(env),
            name_table_name=env.get("NAME_TABLE_NAME", "").strip() or None,
            enrich=enrich.from_env(env),
        )
