"""The backfill function's configuration, read from the environment once per cold start and validated.

| variable | meaning |
|---|---|
| `TABLE_NAME` (required) | the FileMetaData table |
| `BUCKET_NAME` (required) | the indexed bucket; a batch of any other bucket is refused |
| `KEY_LAYOUT` | `default` or a regex with groups `user` and `file`, as the indexer's |
| `TOMBSTONE_TTL_DAYS` | expiry of the tombstones a repair writes (default 30) |
| `SCAN_SEGMENTS` | parallel segments of the sweep for entries of deleted objects (default 8) |
| `WRITE_CONCURRENCY` | requests in flight within one invocation (default 16) |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from file_index.key_layout import InvalidKeyLayoutError, KeyLayout
from file_index.writer import DEFAULT_TOMBSTONE_TTL_DAYS


class ConfigError(RuntimeError):
    """A variable is missing or invalid; the message names it."""


@dataclass(frozen=True)
class BackfillConfig:
    table_name: str
    bucket: str
    key_layout: KeyLayout
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS
    scan_segments: int = 8
    write_concurrency: int = 16

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BackfillConfig:
        env = os.environ if env is None else env
        required = {}
        for name in ("TABLE_NAME", "BUCKET_NAME"):
            value = env.get(name, "").strip()
            if not value:
                raise ConfigError(f"{name} is not set: the backfill function needs it")
            required[name] = value
        try:
            layout = KeyLayout.parse(env.get("KEY_LAYOUT"))
        except InvalidKeyLayoutError as error:
            raise ConfigError(f"KEY_LAYOUT is invalid: {error}") from error
        return cls(
            table_name=required["TABLE_NAME"],
            bucket=required["BUCKET_NAME"],
            key_layout=layout,
            tombstone_ttl_days=_positive_int(env, "TOMBSTONE_TTL_DAYS", DEFAULT_TOMBSTONE_TTL_DAYS),
            scan_segments=_positive_int(env, "SCAN_SEGMENTS", 8),
            write_concurrency=_positive_int(env, "WRITE_CONCURRENCY", 16),
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
