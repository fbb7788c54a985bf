"""The search function's configuration, read and validated once per cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from file_index.rules.config import ConfigError, key_pattern, positive_int, required
from file_index.rules.key_pattern import DEFAULT_KEY_PATTERN, KeyPattern
from file_index.rules.placement import ShardPlacement
from file_index.store import enrich
from file_index.store.state import State
from search.directory import DEFAULT_NAME_ATTRIBUTE, NAME_ATTRIBUTES
from search.people import (
    DEFAULT_ADMIN_GROUP,
    DEFAULT_MAX_UPLOAD_BYTES,
    DEFAULT_SHARE_LINK_MAX_SECONDS,
    DEFAULT_UPLOAD_URL_EXPIRY_SECONDS,
    DEFAULT_USER_CLAIM,
    MAX_SHARE_LINK_SECONDS,
    UserAccess,
)

DEFAULT_DOWNLOAD_URL_EXPIRY_SECONDS = 300
# SigV4 presigned URLs are valid for at most 7 days.
MAX_DOWNLOAD_URL_EXPIRY_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class SearchConfig:
    table_name: str
    bucket_name: str  # the only bucket downloads may presign, and the one whose index state is told
    cursor_secret_arn: str  # Secrets Manager secret holding the HMAC key of paging cursors
    download_url_expiry_seconds: int
    queue_url: str  # the indexer's queue: its backlog is part of GET /status
    dead_letter_queue_url: str
    # The state of an index with no state record: READY for a bucket the stack created (indexed from its
    # first object), BUILDING for an existing bucket whose backfill has not started yet.
    initial_state: State = State.READY
    # Where entries live in the indexes (shards, hot users, the Z-order index): what a list must read.
    placement: ShardPlacement = field(default_factory=ShardPlacement)
    # The table has the bucket's time index (`bucketTimeIndex`): a bucket's files by upload time.
    bucket_time_index: bool = True
    # The name index table (`q`, `prefix`, `delimiter`, `ext`); None: the deployment keeps none.
    name_table_name: str | None = None
    # What the indexer reads from S3 for each entry (`file_index.store.enrich`): which filters a list may use.
    enrich: frozenset[str] = frozenset()
    # The `/me/...` routes of signed-in people; None: the deployment has no user pool (userAccess off).
    user_access: UserAccess | None = None
    # How keys name their uploader: where a person's uploads go.
    key_pattern: KeyPattern = field(default_factory=lambda: KeyPattern.parse(DEFAULT_KEY_PATTERN))


def _user_access(env: Mapping[str, str]) -> UserAccess | None:
    client_id = env.get("USER_POOL_CLIENT_ID", "").strip()
    if not client_id:
        return None
    origin = env.get("WEB_ORIGIN", "").strip() or None
    if origin is not None and urlsplit(origin).scheme not in ("http", "https"):
        raise ConfigError(f"WEB_ORIGIN must be an http(s) origin such as https://example.com, not {origin!r}")
    return UserAccess(
        client_id=client_id,
        user_claim=env.get("USER_CLAIM", "").strip() or DEFAULT_USER_CLAIM,
        admin_group=env.get("ADMIN_GROUP", "").strip() or DEFAULT_ADMIN_GROUP,
        max_upload_bytes=positive_int(env, "MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES),
        upload_url_expiry_seconds=positive_int(
            env,
            "UPLOAD_URL_EXPIRY_SECONDS",
            DEFAULT_UPLOAD_URL_EXPIRY_SECONDS,
            maximum=MAX_DOWNLOAD_URL_EXPIRY_SECONDS,
        ),
        share_link_max_seconds=positive_int(
            env, "SHARE_LINK_MAX_SECONDS", DEFAULT_SHARE_LINK_MAX_SECONDS, maximum=MAX_SHARE_LINK_SECONDS
        ),
        user_pool_id=env.get("USER_POOL_ID", "").strip() or None,
        owner_name_attribute=_owner_name_attribute(env),
        web_origin=origin,
    )


def _owner_name_attribute(env: Mapping[str, str]) -> str:
    value = env.get("OWNER_NAME_ATTRIBUTE", "").strip() or DEFAULT_NAME_ATTRIBUTE
    if value not in NAME_ATTRIBUTES:
        raise ConfigError(f"OWNER_NAME_ATTRIBUTE must be one of {', '.join(NAME_ATTRIBUTES)}, not {value!r}")
    return value


def _queue_url(environ: Mapping[str, str], name: str) -> str:
    """A queue URL: http(s), a host, and the queue's name as the last path segment."""
    value = required(environ, name)
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or not parts.path.rstrip("/").rsplit("/")[-1]
    ):
        raise ConfigError(f"{name} must be an SQS queue URL (https://host/account/name), not {value!r}")
    return value


def queue_name(queue_url: str) -> str:
    """The queue's name (the last segment of its URL), as CloudWatch's QueueName dimension names it."""
    return urlsplit(queue_url).path.rstrip("/").rsplit("/")[-1]


def _initial_state(environ: Mapping[str, str]) -> State:
    raw = environ.get("INDEX_INITIAL_STATE", "").strip()
    if not raw:
        return State.READY
    try:
        return State(raw)
    except ValueError:
        raise ConfigError(f"INDEX_INITIAL_STATE must be READY or BUILDING, not {raw!r}") from None


def _switch(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw not in ("true", "false"):
        raise ConfigError(f"{name} must be true or false, not {raw!r}")
    return raw == "true"


def load_config(environ: Mapping[str, str] | None = None) -> SearchConfig:
    """The configuration from `environ` (default: the process environment); ConfigError names a fault."""
    env = os.environ if environ is None else environ
    return SearchConfig(
        table_name=required(env, "TABLE_NAME"),
        bucket_name=required(env, "BUCKET_NAME"),
        cursor_secret_arn=required(env, "CURSOR_SECRET_ARN"),
        download_url_expiry_seconds=positive_int(
            env,
            "DOWNLOAD_URL_EXPIRY_SECONDS",
            DEFAULT_DOWNLOAD_URL_EXPIRY_SECONDS,
            maximum=MAX_DOWNLOAD_URL_EXPIRY_SECONDS,
        ),
        queue_url=_queue_url(env, "QUEUE_URL"),
        dead_letter_queue_url=_queue_url(env, "DEAD_LETTER_QUEUE_URL"),
        initial_state=_initial_state(env),
        placement=ShardPlacement.from_env(env),
        bucket_time_index=_switch(env, "BUCKET_TIME_INDEX", default=True),
        name_table_name=env.get("NAME_TABLE_NAME", "").strip() or None,
        enrich=enrich.from_env(env),
        user_access=_user_access(env),
        key_pattern=key_pattern(env),
    )
