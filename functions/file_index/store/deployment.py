"""The deployed configuration: one record in the table that says how the deployment writes the index.

Every writer of the index (the indexer, the backfill and reconcile functions, the admin tools) places
entries by settings that must be the deployment's: the shard counts and hot users, the key pattern that
names a key's user, the Z-order and time indexes, the name index and enrichment. Written anywhere else
(a function's environment, a `cdk.json` on someone's machine), a setting can drift from what the search
reads: entries land in shards no search queries, or a file goes to the wrong owner. So the deployment
writes its settings into the table itself, where every writer finds them whatever the stack is called:
at deploy time a custom resource after the table (`configuration_guard`), the local stack at its start. Each
writer compares the settings it writes with (those it has an opinion on) with the record and refuses a
difference, naming both values (`ConfigurationMismatchError`). A table without a record (a stack deployed
before it existed) refuses nothing.

The record is an item of `FileMetaData` like the index state (`file_index.store.state`): its `objectKey` is
longer than any S3 key, so no event can write it and a scan skips it (`objects.is_record_key`); it carries
no index key attribute, so no search returns it. There is one per indexed bucket (`configurationOf`), so
a table that indexes several buckets keeps one each. The settings are stored as one JSON object in the
`cdk.json` context's own terms (`bucketIndexShards`, `hotUsers`, ...), which is also how messages show them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from file_index.rules import schema
from file_index.rules.config import ConfigError
from file_index.rules.objects import record_key
from file_index.rules.placement import ShardPlacement

# boto3 ships no type information for its generated clients.
DynamoDBClient = Any

CONFIGURATION_OF = "configurationOf"  # the bucket the record describes
SETTINGS = "settings"  # the settings, one JSON object in cdk.json's terms
WRITTEN_BY = "writtenBy"  # who wrote the record: "deployment" (the stack) or "local stack"
WRITTEN_AT = "writtenAt"

# The settings, by their cdk.json context key, in the order messages name them.
BUCKET_INDEX_SHARDS = "bucketIndexShards"
HOT_USERS = "hotUsers"
MULTI_ATTRIBUTE_INDEX = "multiAttributeIndex"
KEY_LAYOUT = "keyLayout"
BUCKET_TIME_INDEX = "bucketTimeIndex"
NAME_INDEX = "nameIndex"
NAME_TABLE_NAME = "nameTableName"
ENRICH = "enrich"
SETTING_ORDER = (
    BUCKET_INDEX_SHARDS,
    HOT_USERS,
    MULTI_ATTRIBUTE_INDEX,
    KEY_LAYOUT,
    BUCKET_TIME_INDEX,
    NAME_INDEX,
    NAME_TABLE_NAME,
    ENRICH,
)

# A writer that found the record matching reads it again after this long: a deployment that changed it
# is noticed within a minute, at one GetItem a minute per warm function.
RECHECK_SECONDS = 60.0


class ConfigurationMismatchError(ConfigError):
    """A writer's settings differ from the deployed configuration; the message names both values."""


def configuration_key(bucket: str) -> str:
    """The `objectKey` of `bucket`'s deployed configuration: longer than the longest S3 key."""
    return record_key("deployed-configuration", bucket)


class Unset:
    """The type of `UNSET`: no opinion on a setting whose absence means something (the name index)."""


UNSET = Unset()


@dataclass(frozen=True)
class DeployedConfiguration:
    """Settings by cdk.json key, each in its JSON form. A writer's own view holds only the keys it uses."""

    settings: Mapping[str, Any]

    def __post_init__(self) -> None:
        unknown = set(self.settings) - set(SETTING_ORDER)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}")
        # One canonical form (hot users and enrich sorted): equal settings compare equal.
        canonical = {
            key: _canonical(key, self.settings[key]) for key in SETTING_ORDER if key in self.settings
        }
        object.__setattr__(self, "settings", MappingProxyType(canonical))

    @classmethod
    def of(
        cls,
        *,
        placement: ShardPlacement | None = None,
        key_pattern: str | None = None,
        bucket_time_index: bool | None = None,
        name_table: str | Unset | None = UNSET,
        enrich: Iterable[str] | None = None,
    ) -> DeployedConfiguration:
        """The settings given (None: this writer has no opinion). `name_table`: the name index's table,
        None for no name index, `UNSET` (the default) for no opinion."""
        settings: dict[str, Any] = {}
        if placement is not None:
            settings[BUCKET_INDEX_SHARDS] = placement.bucket_shards
            settings[HOT_USERS] = dict(placement.hot_users)
            settings[MULTI_ATTRIBUTE_INDEX] = placement.multi_attribute_index
        if key_pattern is not None:
            settings[KEY_LAYOUT] = key_pattern
        if bucket_time_index is not None:
            settings[BUCKET_TIME_INDEX] = bucket_time_index
        if not isinstance(name_table, Unset):
            settings[NAME_INDEX] = name_table is not None
            if name_table is not None:
                settings[NAME_TABLE_NAME] = name_table
        if enrich is not None:
            settings[ENRICH] = list(enrich)
        return cls(settings)

    @property
    def placement(self) -> ShardPlacement | None:
        """The shard placement the settings name, or None when they name no shard count."""
        if BUCKET_INDEX_SHARDS not in self.settings:
            return None
        return ShardPlacement(
            bucket_shards=self.settings[BUCKET_INDEX_SHARDS],
            hot_users=self.settings.get(HOT_USERS, {}),
            multi_attribute_index=self.settings.get(MULTI_ATTRIBUTE_INDEX, False),
        )

    @property
    def key_pattern(self) -> str | None:
        return self.settings.get(KEY_LAYOUT)

    @property
    def name_table(self) -> str | None:
        """The name index's table when the settings keep one."""
        return self.settings.get(NAME_TABLE_NAME) if self.settings.get(NAME_INDEX) else None

    def differences(self, own: DeployedConfiguration) -> list[tuple[str, Any, Any]]:
        """(key, recorded value, own value) for every key both name with different values."""
        return [
            (key, self.settings[key], own.settings[key])
            for key in SETTING_ORDER
            if key in self.settings and key in own.settings and self.settings[key] != own.settings[key]
        ]

    def describe(self, keys: Iterable[str] | None = None) -> str:
        """`key=value, ...` in cdk.json's JSON terms (all keys, or those of `keys` it has)."""
        wanted = set(SETTING_ORDER if keys is None else keys)
        return ", ".join(f"{key}={_json(value)}" for key, value in self.settings.items() if key in wanted)

    def to_json(self) -> dict[str, Any]:
        return {key: _thaw(value) for key, value in self.settings.items()}


def _canonical(key: str, value: Any) -> Any:
    if key == HOT_USERS:
        return MappingProxyType(dict(sorted(dict(value).items())))
    if key == ENRICH:
        return tuple(sorted(set(value)))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _json(value: Any) -> str:
    return json.dumps(_thaw(value), sort_keys=True, ensure_ascii=False)


def mismatch_message(
    recorded: DeployedConfiguration, own: DeployedConfiguration, *, table: str, bucket: str, writer: str
) -> str | None:
    """The refusal for `writer` (e.g. "the indexer"), naming both values; None when they agree."""
    differences = recorded.differences(own)
    if not differences:
        return None
    each = "; ".join(
        f"{key} is {_json(deployed)} in the deployed configuration but {_json(mine)} for {writer}"
        for key, deployed, mine in differences
    )
    return (
        f"the deployed configuration of s3://{bucket} (recorded in table {table}) differs from the one "
        f"{writer} writes with: {each}"
    )


class DeployedConfigurationStore:
    """Reads and writes the deployed configuration records of one table."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._dynamodb = dynamodb
        self.table_name = table_name

    def read(self, bucket: str) -> DeployedConfiguration | None:
        """The record of `bucket`, or None when the deployment wrote none."""
        item = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={schema.OBJECT_KEY: {"S": configuration_key(bucket)}},
            ConsistentRead=True,
        ).get("Item")
        if item is None:
            return None
        try:
            settings = json.loads(item[SETTINGS]["S"])
            return DeployedConfiguration(settings)
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(
                f"the deployed configuration record of s3://{bucket} in table {self.table_name} is damaged "
                f"({error}); deploy again to rewrite it"
            ) from None

    def write(self, bucket: str, configuration: DeployedConfiguration, *, written_by: str, now: str) -> None:
        """Replace the record of `bucket` (a deployment is the only author, so last writer wins)."""
        self._dynamodb.put_item(
            TableName=self.table_name,
            Item={
                schema.OBJECT_KEY: {"S": configuration_key(bucket)},
                CONFIGURATION_OF: {"S": bucket},
                SETTINGS: {"S": json.dumps(configuration.to_json(), sort_keys=True, ensure_ascii=False)},
                WRITTEN_BY: {"S": written_by},
                WRITTEN_AT: {"S": now},
            },
        )


class ConfigurationCheck:
    """A function's standing check of its own settings against the record, read at most once a minute.

    `check()` raises ConfigurationMismatchError while they differ (read again on every call then, so a
    deployment that finishes is noticed at the next batch); a match is trusted for `RECHECK_SECONDS`. A
    record that cannot be read (a timeout, a throttle) is not a mismatch: the writer goes on as it would
    without the record, `unread` says why, and the record is read again after `RECHECK_SECONDS`, so an
    unavailable table costs one stalled read a minute rather than one per batch.
    """

    def __init__(
        self,
        store: DeployedConfigurationStore,
        bucket: str,
        own: DeployedConfiguration,
        *,
        writer: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._bucket = bucket
        self._own = own
        self._writer = writer
        self._clock = clock
        self._checked_at: float | None = None
        self._lock = threading.Lock()
        self.unread: Exception | None = None  # why the last read of the record failed, if it did

    def check(self) -> None:
        with self._lock:
            now = self._clock()
            if self._checked_at is not None and now - self._checked_at < RECHECK_SECONDS:
                return
            try:
                recorded = self._store.read(self._bucket)
            except (ClientError, BotoCoreError) as error:
                self.unread = error
                self._checked_at = now
                return
            self.unread = None
            if recorded is not None:
                message = mismatch_message(
                    recorded,
                    self._own,
                    table=self._store.table_name,
                    bucket=self._bucket,
                    writer=self._writer,
                )
                if message is not None:
                    self._checked_at = None
                    raise ConfigurationMismatchError(message)
            self._checked_at = now
