"""The indexer's configuration, read from the environment once per cold start and validated.

| variable | meaning |
|---|---|
| `TABLE_NAME` (required) | the FileMetaData table |
| `BUCKET_NAME` (required) | the indexed bucket: events of any other bucket are refused, never written |
| `KEY_LAYOUT` | `default` (user before the first `_` or `/`) or a regex with groups `user` and `file` |
| `TOMBSTONE_TTL_DAYS` | how long a delete's tombstone outlives the object (default 30) |
| `DYNAMODB_MAX_ATTEMPTS` | SDK attempts per call, first included (default 5, standard retries; S3 HEAD too) |
| `WRITE_CONCURRENCY` | writes in flight at once within a batch (default 32) |

The tombstone must outlive any redelivery of an older create: SQS keeps a message at most 14 days, so the
default leaves a margin. A bad value fails the cold start with the variable's name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from file_index.key_layout import InvalidKeyLayoutError, KeyLayout


class ConfigError(RuntimeError):
    """A variable is missing or invalid; the message names it."""


@dataclass(frozen=True)
class IndexerConfig:
    table_name: str
    bucket_name: str
    key_layout: KeyLayout
    tombstone_ttl_days: int = 30
    dynamodb_max_attempts: int = 5
    write_concurrency: int = 32

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IndexerConfig:
        env = os.environ if env is None else env
        table_name = env.get("TABLE_NAME", "").strip()
        if not table_name:
            raise ConfigError("TABLE_NAME is not set: the indexer needs the FileMetaData table's name")
        bucket_name = env.get("BUCKET_NAME", "").strip()
        if not bucket_name:
            raise ConfigError("BUCKET_NAME is not set: the indexer needs the name of the bucket it indexes")
        try:
            layout = KeyLayout.parse(env.get("KEY_LAYOUT"))
        except InvalidKeyLayoutError as error:
            raise ConfigError(f"KEY_LAYOUT is invalid: {error}") from error
        return cls(
            table_name=table_name,
            bucket_name=bucket_name,
            key_layout=layout,
            tombstone_ttl_days=_positive_int(env, "TOMBSTONE_TTL_DAYS", 30),
            dynamodb_max_attempts=_positive_int(env, "DYNAMODB_MAX_ATTEMPTS", 5),
            write_concurrency=_positive_int(env, "WRITE_CONCURRENCY", 32),
        )


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value
