"""Deployment settings from the CDK context (`cdk.json` or `cdk -c key=value`), validated once at synth.

A bad value fails the synth with an error that names the context key and what it accepts, before any
resource is built: a typo must not deploy a stack that silently uses a default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from file_index.rules import schema, shards
from file_index.rules.config import ConfigError as FunctionConfigError
from file_index.rules.key_pattern import DEFAULT_KEY_PATTERN, InvalidKeyPatternError, KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import (
    DEFAULT_BUCKET_INDEX_SHARDS,
    PlacementError,
    ShardPlacement,
    check_hot_users,
)
from file_index.store.deployment import DeployedConfiguration
from file_index.store.enrich import check_enrich
from infra import federation, sizing
from infra.federation import FederationError, IdentityProvider
from infra.sizing import IndexerSizing
from sign_up_guard.guard import InvalidDomainError, parse_domains

if TYPE_CHECKING:
    # Imported where it is used: the local stack reads this module, and importing the CDK starts jsii.
    from aws_cdk import RemovalPolicy

REPO_ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = REPO_ROOT / "requirements.txt"
# The context `cdk synth` starts from (before `-c` overrides); the local stack reads the same file.
CDK_JSON = REPO_ROOT / "cdk.json"


def pinned_powertools_version(requirements: Path = REQUIREMENTS) -> str:
    """The Powertools release the tests run with (requirements.txt), so Lambda runs the same one."""
    pin = re.search(r"^aws-lambda-powertools(?:\[[^\]]*\])?==(\S+)$", requirements.read_text(), re.MULTILINE)
    if pin is None:
        raise ConfigError(f"{requirements.name} does not pin aws-lambda-powertools with ==")
    return pin.group(1)


# Ten batch writers at a time leave the table's capacity (and the account's Lambda concurrency) to live
# indexing, whose own pollers are capped at ten as well.
DEFAULT_BACKFILL_CONCURRENCY = 10
MAX_BACKFILL_CONCURRENCY = 1000
# 500 listed objects per batch Lambda: a few seconds of conditional writes; a batch is also cut at
# Step Functions' 256 KiB input limit whatever this says, so long keys cannot overflow it.
DEFAULT_BACKFILL_BATCH_SIZE = 500
MAX_BACKFILL_BATCH_SIZE = 10_000
# Parallel scan segments of a reconcile's sweep for entries whose objects are gone; the inline Map
# that runs them executes at most 40 at once.
DEFAULT_RECONCILE_SEGMENTS = 8
MAX_RECONCILE_SEGMENTS = 40
# The indexer's timeout: a full batch must fit in part of it (`sizing.BATCH_TIMEOUT_SHARE`).
INDEXER_TIMEOUT_SECONDS = 30

# Loose on purpose: SNS confirms the address by mail, this only catches obvious typos at synth.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# DynamoDB's own rule for table names.
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_USER_POOL_ID = re.compile(r"^[\w-]+_[0-9a-zA-Z]+$")
# Claims of an ID token that nobody can change: Cognito's id of the user and the user name.
IMMUTABLE_USER_CLAIMS = ("sub", "cognito:username")
# A custom attribute of the pool (Cognito: a name of 1-20 characters after `custom:`).
_CUSTOM_CLAIM = re.compile(r"^custom:[A-Za-z0-9_.-]{1,20}$")
# Standard attributes that stand for a verified address until the person changes them.
_VERIFIED_ADDRESSES = ("email", "phone_number")
_GROUP_NAME = re.compile(r"^\S{1,128}$")
# The user names Cognito gives people who sign in through an identity provider: `<provider>_<id at the
# provider>`, e.g. an Okta user id, an Entra object id, an email-format or opaque SAML NameID. A key pattern
# must read each of them back from the keys the API gives their uploads (`search.people.upload_key`).
FEDERATED_IDS = ("00u1abcd2EFGH3ijk4x7", "8f14e45f-ceea-467f-a7b5-4a0e2c8b3c9d", "jane_doe@example.com")
# A key pattern that does: the user is everything before the first '/'.
FEDERATED_USERNAME_KEY_PATTERN = r"(?P<user>[^/]+)/(?P<file>.+)"
# S3 takes at most 5 GiB in one PUT or POST.
# S3's own limit on an object (a multipart upload's); the page uploads large files in parts.
MAX_UPLOAD_BYTES = 5 * 1024**4
# A share link is signed with the search function's role credentials, which are temporary: S3 refuses the
# link once they expire, whatever its own expiry (hours; AWS does not say how many for Lambda). An hour by
# default; at most 12 hours, the longest any role session lasts (SigV4's own 7 days cannot be reached).
DEFAULT_SHARE_LINK_MAX_SECONDS = 3600
MAX_SHARE_LINK_SECONDS = 12 * 3600
MIN_SHARE_LINK_SECONDS = 60
# S3's naming rules for general purpose buckets: 3-63 characters of a-z 0-9 . -, starting and ending with
# a letter or digit, no two adjacent periods, not formatted as an IP address.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
# EventBridge schedule expressions: `rate(<n> <unit>)` (singular unit exactly when n is 1) or
# `cron(<6 fields>)`, whose day-of-month or day-of-week must be `?`.
_RATE = re.compile(r"^rate\((?P<value>[1-9]\d*) (?P<unit>minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\((?P<fields>[^()]+)\)$")


class ConfigError(ValueError):
    """A context value is missing its required form; the message names the key and the allowed values."""


class RemovalChoice(StrEnum):
    """What happens to the bucket and the table when the stack is deleted."""

    RETAIN = "retain"
    DESTROY = "destroy"  # throwaway dev stacks: also empties the bucket on deletion

    @property
    def policy(self) -> RemovalPolicy:
        from aws_cdk import RemovalPolicy

        return RemovalPolicy.DESTROY if self is RemovalChoice.DESTROY else RemovalPolicy.RETAIN


class ApiAuth(StrEnum):
    """Authorization of every API method."""

    IAM = "iam"  # SigV4-signed requests only: the default
    NONE = "none"  # open API, for short-lived dev stacks only


class EventSource(StrEnum):
    """How the bucket's object events reach the queue."""

    S3 = "s3"  # S3 event notifications to the queue
    # The bucket sends its events to EventBridge and a rule forwards them to the queue: coexists with any
    # notification configuration a bucket in use already has (S3 refuses overlapping notification rules).
    EVENTBRIDGE = "eventbridge"


class LogLevel(StrEnum):
    """Values Powertools' Logger accepts in POWERTOOLS_LOG_LEVEL."""

    DEBUG = "DEBUG"
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    CRITICAL = "CRITICAL"


@dataclass(frozen=True, kw_only=True)
class StackConfig:
    """Everything a deployer may choose, typed. Build it with `StackConfig.from_context`."""

    key_pattern: str = DEFAULT_KEY_PATTERN
    table_name: str = schema.TABLE_NAME
    removal: RemovalChoice = RemovalChoice.RETAIN
    log_level: LogLevel = LogLevel.INFO
    alarm_email: str | None = None
    api_auth: ApiAuth = ApiAuth.IAM
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS
    # The layer is found at deploy time from AWS's public SSM parameter for this exact release: always the
    # one requirements.txt pins, which the tests ran with (`powertoolsVersion` may only repeat it).
    powertools_version: str = field(default_factory=pinned_powertools_version)
    # None: the stack creates its bucket. A name: the stack indexes that existing bucket and changes
    # nothing of it but its event notifications.
    existing_bucket_name: str | None = None
    event_source: EventSource = EventSource.S3
    backfill_concurrency: int = DEFAULT_BACKFILL_CONCURRENCY
    backfill_batch_size: int = DEFAULT_BACKFILL_BATCH_SIZE
    reconcile_segments: int = DEFAULT_RECONCILE_SEGMENTS
    # None: no scheduled reconcile. Else an EventBridge schedule expression.
    reconcile_schedule: str | None = None
    # Where entries live in the indexes (shards of the bucket index, hot users, the Z-order index): every
    # function that writes or reads the index gets it as environment (`ShardPlacement.to_env`).
    placement: ShardPlacement = field(
        default_factory=lambda: ShardPlacement(bucket_shards=DEFAULT_BUCKET_INDEX_SHARDS)
    )
    indexer_sizing: IndexerSizing = field(default_factory=IndexerSizing)
    # The bucket's time index (`bucketName-uploadDate-index`): a bucket's newest files and a time range of
    # a bucket as key ranges. False keeps the 0.3.0 table (one write unit less per new entry).
    bucket_time_index: bool = True
    # The name index (`q`, `prefix`, `delimiter`, `ext`): a table of its own beside the entries. False
    # gives the 0.3.0 stack: no name table, and lists narrowed by name are refused.
    name_index: bool = True
    name_table_name: str = schema.NAME_TABLE_NAME
    # What the indexer reads from S3 for each create (`file_index.store.enrich`): none by default.
    enrich: frozenset[str] = frozenset()
    # Sign-in for people (a Cognito user pool, the `/me/...` routes, the page). False gives the stack
    # without them, exactly as before.
    user_access: bool = True
    # None: the stack creates its user pool. An id: the stack uses that existing pool.
    user_pool_id: str | None = None
    # The ID token claim whose value is a person's uploadUser (`sub`: Cognito never reuses it). Only a
    # claim people cannot write themselves: `sub`, `cognito:username`, or a custom attribute that the app
    # client may not write (`_check_user_claim`).
    user_claim: str = "sub"
    # With `user_pool_id` and a custom `user_claim`: the deployer's word that no app client of that pool
    # lets people write the attribute (the stack cannot see the pool's other clients).
    user_claim_admin_only: bool = False
    admin_group: str = "admins"
    # The largest file a person may upload (S3's own object limit by default).
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    # The longest a share link (`GET /me/links/{objectKey}`) may be asked for, in seconds.
    share_link_max_seconds: int = DEFAULT_SHARE_LINK_MAX_SECONDS
    # The attribute of the user pool shown as a person's name in admins' lists: name, email or username.
    owner_name_attribute: str = "name"
    # Sign-in with an organisation (infra/federation.py): the pool's external identity providers, reached
    # through its managed login at the prefix domain `sign_in_domain_prefix`. None: passwords only.
    identity_providers: tuple[IdentityProvider, ...] = ()
    sign_in_domain_prefix: str | None = None
    # With identity providers: who gets an account at their first sign-in through one, by the domain of
    # the email address the provider gives (the pool's pre sign-up trigger, functions/sign_up_guard).
    # Empty: everyone the providers let sign in to the application.
    allowed_email_domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_indexer_sizing(self.indexer_sizing)
        _check_user_claim(self)
        _check_federation(self)

    def deployed_configuration(self) -> DeployedConfiguration:
        """What the deployment records in its table for every writer to check
        (`file_index.store.deployment`)."""
        return DeployedConfiguration.of(
            placement=self.placement,
            key_pattern=self.key_pattern,
            bucket_time_index=self.bucket_time_index,
            name_table=self.name_table_name if self.name_index else None,
            enrich=self.enrich,
        )

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> StackConfig:
        """Read and validate every key with `get` (e.g. `app.node.try_get_context`); None means unset."""
        return cls(
            key_pattern=_optional(get, "keyLayout", _key_pattern, DEFAULT_KEY_PATTERN),
            table_name=_optional(get, "tableName", _table_name, schema.TABLE_NAME),
            removal=_optional(get, "removalPolicy", _choice(RemovalChoice), RemovalChoice.RETAIN),
            log_level=_optional(get, "logLevel", _log_level, LogLevel.INFO),
            alarm_email=_optional(get, "alarmEmail", _alarm_email, None),
            api_auth=_optional(get, "apiAuth", _choice(ApiAuth), ApiAuth.IAM),
            tombstone_ttl_days=_optional(
                get, "tombstoneTtlDays", _positive_int(maximum=3650), DEFAULT_TOMBSTONE_TTL_DAYS
            ),
            powertools_version=_optional(
                get, "powertoolsVersion", _powertools_version, pinned_powertools_version()
            ),
            existing_bucket_name=_optional(get, "existingBucketName", _bucket_name, None),
            event_source=_optional(get, "eventSource", _choice(EventSource), EventSource.S3),
            backfill_concurrency=_optional(
                get,
                "backfillConcurrency",
                _positive_int(maximum=MAX_BACKFILL_CONCURRENCY),
                DEFAULT_BACKFILL_CONCURRENCY,
            ),
            backfill_batch_size=_optional(
                get,
                "backfillBatchSize",
                _positive_int(maximum=MAX_BACKFILL_BATCH_SIZE),
                DEFAULT_BACKFILL_BATCH_SIZE,
            ),
            reconcile_segments=_optional(
                get,
                "reconcileSegments",
                _positive_int(maximum=MAX_RECONCILE_SEGMENTS),
                DEFAULT_RECONCILE_SEGMENTS,
            ),
            reconcile_schedule=_optional(get, "reconcileSchedule", _schedule, None),
            placement=_placement(get),
            bucket_time_index=_optional(get, "bucketTimeIndex", _switch, True),
            name_index=_optional(get, "nameIndex", _switch, True),
            name_table_name=_optional(get, "nameTableName", _table_name, schema.NAME_TABLE_NAME),
            enrich=_optional(get, "enrich", _enrich, frozenset()),
            user_access=_optional(get, "userAccess", _switch, True),
            user_pool_id=_optional(get, "userPoolId", _user_pool_id, None),
            user_claim=_optional(get, "userClaim", _user_claim, "sub"),
            user_claim_admin_only=_optional(get, "userClaimAdminOnly", _switch, False),
            admin_group=_optional(get, "adminGroup", _group_name, "admins"),
            max_upload_bytes=_optional(
                get, "maxUploadBytes", _positive_int(maximum=MAX_UPLOAD_BYTES), MAX_UPLOAD_BYTES
            ),
            share_link_max_seconds=_optional(
                get,
                "shareLinkMaxSeconds",
                _int_between(MIN_SHARE_LINK_SECONDS, MAX_SHARE_LINK_SECONDS),
                DEFAULT_SHARE_LINK_MAX_SECONDS,
            ),
            owner_name_attribute=_optional(get, "ownerNameAttribute", _owner_name_attribute, "name"),
            identity_providers=_optional(get, "identityProviders", _identity_providers, ()),
            sign_in_domain_prefix=_optional(get, "signInDomainPrefix", _domain_prefix, None),
            allowed_email_domains=_optional(get, "allowedEmailDomains", _allowed_email_domains, ()),
            indexer_sizing=IndexerSizing(
                memory_mb=_optional(
                    get,
                    "indexerMemorySize",
                    _int_between(sizing.MIN_MEMORY_MB, sizing.MAX_MEMORY_MB),
                    sizing.DEFAULT_MEMORY_MB,
                ),
                batch_size=_optional(
                    get, "indexerBatchSize", _int_between(1, sizing.MAX_BATCH_SIZE), sizing.DEFAULT_BATCH_SIZE
                ),
                max_batching_window_seconds=_optional(
                    get,
                    "indexerMaxBatchingWindowSeconds",
                    _int_between(0, sizing.MAX_BATCHING_WINDOW_SECONDS),
                    sizing.DEFAULT_MAX_BATCHING_WINDOW_SECONDS,
                ),
                max_concurrency=_optional(
                    get,
                    "indexerMaxConcurrency",
                    _int_between(sizing.MIN_MAX_CONCURRENCY, sizing.MAX_MAX_CONCURRENCY),
                    sizing.DEFAULT_MAX_CONCURRENCY,
                ),
            ),
        )

    @classmethod
    def from_mapping(cls, context: Mapping[str, Any]) -> StackConfig:
        """Validate a plain mapping of context keys (tests, scripts)."""
        return cls.from_context(context.get)

    @classmethod
    def from_cdk_json(cls, path: Path = CDK_JSON, overrides: Mapping[str, Any] | None = None) -> StackConfig:
        """The configuration `cdk synth` would build from `path`'s context, with `overrides` as `-c` gives."""
        return cls.from_mapping({**cdk_json_context(path), **(overrides or {})})


def cdk_json_context(path: Path = CDK_JSON) -> dict[str, Any]:
    """The `context` object of a cdk.json (feature flags included); ConfigError names a broken file."""
    try:
        document = json.loads(path.read_text())
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise ConfigError(f"{path} is not JSON: {error}") from None
    context = document.get("context", {}) if isinstance(document, dict) else None
    if not isinstance(context, dict):
        raise ConfigError(f"{path}: 'context' must be a JSON object")
    return context


def _placement(get: Callable[[str], Any]) -> ShardPlacement:
    """The shard placement, through `ShardPlacement.from_context` once each key is in its JSON type.

    `cdk -c key=value` passes strings, so a shard count, a hot-user map or the switch may arrive as text.
    """
    return ShardPlacement.from_context(
        {
            "bucketIndexShards": _optional(
                get,
                "bucketIndexShards",
                _int_between(1, shards.MAX_SHARD_COUNT),
                DEFAULT_BUCKET_INDEX_SHARDS,
            ),
            "hotUsers": _optional(get, "hotUsers", _hot_users, dict[str, int]()),
            "multiAttributeIndex": _optional(get, "multiAttributeIndex", _switch, False),
        }
    )


def _check_indexer_sizing(indexer: IndexerSizing) -> None:
    """The rules between the sizing keys that AWS (or the indexer's timeout) imposes."""
    if indexer.batch_size > sizing.MAX_UNWINDOWED_BATCH_SIZE and indexer.max_batching_window_seconds < 1:
        raise ConfigError(
            f"context indexerBatchSize={indexer.batch_size} needs indexerMaxBatchingWindowSeconds of at "
            f"least 1 (Lambda accepts SQS batches above {sizing.MAX_UNWINDOWED_BATCH_SIZE} only with a "
            f"batching window), got {indexer.max_batching_window_seconds}; raise the window or lower the "
            f"batch size to {sizing.MAX_UNWINDOWED_BATCH_SIZE}"
        )
    budget = INDEXER_TIMEOUT_SECONDS * sizing.BATCH_TIMEOUT_SHARE
    if indexer.batch_cpu_seconds() > budget:
        raise ConfigError(
            f"context indexerBatchSize={indexer.batch_size} with indexerMemorySize={indexer.memory_mb} needs "
            f"~{indexer.batch_cpu_seconds():.0f} s of CPU per batch, more than {budget:.0f} s of the "
            f"indexer's {INDEXER_TIMEOUT_SECONDS} s timeout; lower the batch size or raise the memory"
        )


def _optional[T](get: Callable[[str], Any], key: str, parse: Callable[[str, Any], T], default: T) -> T:
    value = get(key)
    # `cdk -c key=` and an empty string in cdk.json both mean "not set", like an absent key.
    if value is None or value == "":
        return default
    return parse(key, value)


def _choice(enum: type[StrEnum]) -> Callable[[str, Any], Any]:
    allowed = ", ".join(member.value for member in enum)

    def parse(key: str, value: Any) -> Any:
        try:
            return enum(str(value).lower())
        except ValueError:
            raise ConfigError(f"context {key}={value!r} is invalid; allowed: {allowed}") from None

    return parse


def _log_level(key: str, value: Any) -> LogLevel:
    try:
        return LogLevel(str(value).upper())
    except ValueError:
        allowed = ", ".join(level.value for level in LogLevel)
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: {allowed}") from None


def _positive_int(*, maximum: int) -> Callable[[str, Any], int]:
    def parse(key: str, value: Any) -> int:
        # bool is an int subclass; `true` in cdk.json is not a number of days.
        text = str(value).strip() if not isinstance(value, bool) else ""
        if not text.isdigit() or not 1 <= int(text) <= maximum:
            raise ConfigError(f"context {key}={value!r} is invalid; allowed: an integer from 1 to {maximum}")
        return int(text)

    return parse


def _int_between(minimum: int, maximum: int) -> Callable[[str, Any], int]:
    def parse(key: str, value: Any) -> int:
        text = str(value).strip() if not isinstance(value, bool) else ""
        if not (text.isascii() and text.isdigit()) or not minimum <= int(text) <= maximum:
            raise ConfigError(
                f"context {key}={value!r} is invalid; allowed: an integer from {minimum} to {maximum}"
            )
        return int(text)

    return parse


def _hot_users(key: str, value: Any) -> dict[str, int]:
    allowed = 'an object of user name -> shard count from 1 to 256, e.g. {"ingest-bot": 8}'
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError(f"context {key}={value!r} is invalid (not JSON); allowed: {allowed}") from None
    try:
        return check_hot_users(key, value)
    except PlacementError as error:
        raise ConfigError(f"context {key}={value!r} is invalid ({error}); allowed: {allowed}") from None


def _enrich(key: str, value: Any) -> frozenset[str]:
    try:
        return check_enrich(key, value)
    except FunctionConfigError as error:
        raise ConfigError(str(error)) from None


def _switch(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"context {key}={value!r} is invalid; allowed: true, false")


def _user_pool_id(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _USER_POOL_ID.fullmatch(value):
        raise ConfigError(
            f"context {key}={value!r} is invalid; allowed: a Cognito user pool id (REGION_ID, e.g. "
            "us-east-1_AbCdEfGhI), or unset to create a pool"
        )
    return value


_SAFE_CLAIMS = (
    "sub (the default), cognito:username, or custom:NAME, a custom attribute only administrators set "
    "(AdminCreateUser, AdminUpdateUserAttributes)"
)


def _user_claim(key: str, value: Any) -> str:
    """A claim people cannot write with their own access token (Cognito's UpdateUserAttributes)."""
    if not isinstance(value, str):
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: {_SAFE_CLAIMS}")
    if value in IMMUTABLE_USER_CLAIMS or _CUSTOM_CLAIM.fullmatch(value):
        return value
    if value in _VERIFIED_ADDRESSES:
        raise ConfigError(
            f"context {key}={value!r} is unsafe: a person can change their own {value} with "
            f"UpdateUserAttributes, after which it is unverified ({value}_verified false), so they could "
            f"take another person's {value} and their files; allowed: {_SAFE_CLAIMS}"
        )
    if value.startswith("custom:"):
        raise ConfigError(
            f"context {key}={value!r} is invalid: a custom attribute's name is 1-20 characters of "
            f"A-Z a-z 0-9 _ . -; allowed: {_SAFE_CLAIMS}"
        )
    raise ConfigError(
        f"context {key}={value!r} is unsafe: people can write standard attributes (such as "
        "preferred_username or name) themselves, and other claims do not name one person; "
        f"allowed: {_SAFE_CLAIMS}"
    )


def _check_user_claim(config: StackConfig) -> None:
    """A custom claim in a pool the stack does not create needs the deployer's word that it is admin-only.

    The stack's own pool declares the attribute and its app client may not write it; an existing pool's
    other app clients are out of the stack's sight, and any of them could let people write it.
    """
    if (
        config.user_access
        and config.user_pool_id is not None
        and config.user_claim not in IMMUTABLE_USER_CLAIMS
        and not config.user_claim_admin_only
    ):
        raise ConfigError(
            f"context userClaim={config.user_claim!r} with userPoolId={config.user_pool_id!r} needs "
            "userClaimAdminOnly=true: the stack cannot see whether another app client of that pool lets "
            f"people write {config.user_claim}; allowed: sub or cognito:username, or "
            "userClaimAdminOnly=true once no app client of the pool has the attribute in its write "
            "attributes (only administrators set it, with AdminUpdateUserAttributes)"
        )


def _identity_providers(key: str, value: Any) -> tuple[IdentityProvider, ...]:
    if isinstance(value, str):  # `cdk -c identityProviders='[...]'`
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError(f"context {key}={value!r} is invalid (not JSON)") from None
    try:
        return federation.identity_providers(key, value)
    except FederationError as error:
        raise ConfigError(str(error)) from None


def _domain_prefix(key: str, value: Any) -> str:
    try:
        return federation.domain_prefix(key, value)
    except FederationError as error:
        raise ConfigError(str(error)) from None


def _allowed_email_domains(key: str, value: Any) -> tuple[str, ...]:
    """A list of domains; from the command line, a JSON list or the domains separated by commas."""
    allowed = 'a list of email domains, e.g. ["example.com", "example.org"] (exact: a sub-domain is another)'
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ConfigError(
                    f"context {key}={value!r} is invalid (not JSON); allowed: {allowed}"
                ) from None
        else:
            value = [part for part in text.split(",") if part.strip()]
    if not isinstance(value, list):
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: {allowed}")
    if not value:
        return ()
    try:
        return parse_domains(value)
    except InvalidDomainError as error:
        raise ConfigError(f"context {key}: {error}; allowed: {allowed}") from None


def _check_federation(config: StackConfig) -> None:
    """The identity providers need the stack's own pool, a domain, and no hold on the files' claim."""
    if not config.identity_providers:
        if config.allowed_email_domains:
            raise ConfigError(
                "context allowedEmailDomains is set without identityProviders: it decides who gets an "
                "account by signing in through an identity provider, and people who sign in with a "
                "password are added by an operator; allowed: unset, or identityProviders as well"
            )
        if config.sign_in_domain_prefix is not None:
            raise ConfigError(
                f"context signInDomainPrefix={config.sign_in_domain_prefix!r} is set without "
                "identityProviders: the domain serves only the providers' sign-in; allowed: unset, or "
                "identityProviders with at least one provider"
            )
        return
    if not config.user_access:
        raise ConfigError("context identityProviders needs userAccess=true: people sign in on the page")
    if config.user_pool_id is not None:
        raise ConfigError(
            f"context identityProviders with userPoolId={config.user_pool_id!r}: the stack adds identity "
            "providers and a domain only to a pool it creates; allowed: unset userPoolId, or add the "
            "providers, the domain and the app client's OAuth settings to that pool yourself"
        )
    if config.sign_in_domain_prefix is None:
        raise ConfigError(
            "context identityProviders needs signInDomainPrefix: the managed login's address "
            "https://<prefix>.auth.<region>.amazoncognito.com, unique in the region"
        )
    _check_federated_user_names(config)
    for index, provider in enumerate(config.identity_providers):
        if config.allowed_email_domains and "email" not in provider.attribute_mapping:
            raise ConfigError(
                f"context identityProviders[{index}].attributeMapping needs 'email' with "
                "allowedEmailDomains: the pool's pre sign-up trigger reads the address the provider gives, "
                f"so without it every sign-in through {provider.name} would be refused; allowed: a mapping "
                'such as {"email": "email"} (SAML: {"email": '
                '"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"})'
            )
        if config.user_claim in provider.attribute_mapping:
            raise ConfigError(
                f"context identityProviders[{index}].attributeMapping maps onto {config.user_claim}, the "
                "userClaim that names a person's files: whoever can change that attribute at the identity "
                f"provider would take another person's files; allowed: a mapping without {config.user_claim}"
            )


def _check_federated_user_names(config: StackConfig) -> None:
    """`userClaim: cognito:username` names a federated person's files `<provider>_<id>/...`: refused when the
    key pattern would read another user from those keys (the default one stops at the first `_`), since
    the API then refuses every upload of theirs (400). A pattern that reads the names back is accepted."""
    if config.user_claim != "cognito:username":
        return
    key_pattern = KeyPattern.parse(config.key_pattern)
    for provider in config.identity_providers:
        for federated_id in FEDERATED_IDS:
            user = f"{provider.name}_{federated_id}"
            for key in (f"{user}/report.pdf", f"{user}/reports/2026/report.pdf"):
                read = key_pattern.split(key).upload_user
                if read == user:
                    continue
                raise ConfigError(
                    "context userClaim='cognito:username' with identityProviders cannot work with "
                    f"keyLayout={config.key_pattern!r}: Cognito names a person who signs in through a "
                    f"provider <provider>_<id at the provider> (e.g. {user!r}), and the key pattern credits "
                    f"their upload {key!r} to {repr(read) if read else 'no user'}, not to them, so the API "
                    "would refuse every upload of a person who signs in through a provider (400); allowed: "
                    "userClaim=sub (the default: Cognito's id of the person, which it never reuses, and "
                    "which the default key pattern reads back), or a keyLayout whose user is everything "
                    f"before the first '/', such as {FEDERATED_USERNAME_KEY_PATTERN!r}"
                )


def _owner_name_attribute(key: str, value: Any) -> str:
    if value not in ("name", "email", "username"):
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: name, email, username")
    return str(value)


def _group_name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _GROUP_NAME.fullmatch(value):
        raise ConfigError(
            f"context {key}={value!r} is invalid; allowed: a Cognito group name (1-128 characters)"
        )
    return value


def _table_name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _TABLE_NAME.fullmatch(value):
        raise ConfigError(
            f"context {key}={value!r} is invalid; allowed: 3-255 characters of A-Z a-z 0-9 _ . -"
        )
    return value


def _alarm_email(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _EMAIL.fullmatch(value):
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: an e-mail address, or unset")
    return value


def _key_pattern(key: str, value: Any) -> str:
    """Accept exactly what the indexer accepts at cold start, so a placement it would reject never deploys."""
    allowed = "'default' or a Python regex with named groups (?P<user>...) and (?P<file>...)"
    if not isinstance(value, str):
        raise ConfigError(f"context {key}={value!r} is invalid; allowed: {allowed}")
    try:
        KeyPattern.parse(value)
    except InvalidKeyPatternError as error:
        raise ConfigError(f"context {key}={value!r} is invalid ({error}); allowed: {allowed}") from None
    return value


def _powertools_version(key: str, value: Any) -> str:
    """Only the pinned release: Lambda must run the Powertools the tests ran with, never another one."""
    pinned = pinned_powertools_version()
    if value != pinned:
        raise ConfigError(
            f"context {key}={value!r} is invalid; allowed: {pinned!r} only, the release requirements.txt "
            "pins and the tests run with (to move the functions to another release, change the pin in "
            "requirements.txt and run the tests; or leave the key unset)"
        )
    return value


def _bucket_name(key: str, value: Any) -> str:
    if (
        not isinstance(value, str)
        or not _BUCKET_NAME.fullmatch(value)
        or ".." in value
        or _IP_ADDRESS.fullmatch(value)
    ):
        raise ConfigError(
            f"context {key}={value!r} is invalid; allowed: an S3 bucket name (3-63 characters of "
            "a-z 0-9 . -, starting and ending with a letter or digit), or unset to create a bucket"
        )
    return value


def _schedule(key: str, value: Any) -> str:
    """Accept what EventBridge accepts, so a typo fails the synth instead of the deployment."""
    allowed = (
        "an EventBridge schedule such as 'rate(7 days)', 'rate(1 day)' or 'cron(0 3 ? * SUN *)', or unset"
    )
    text = value.strip() if isinstance(value, str) else ""
    rate = _RATE.fullmatch(text)
    if rate is not None:
        # EventBridge refuses `rate(1 days)` and `rate(2 day)`.
        if (rate.group("value") == "1") == rate.group("unit").endswith("s"):
            raise ConfigError(
                f"context {key}={value!r} is invalid (use a singular unit for 1, plural otherwise); "
                f"allowed: {allowed}"
            )
        return text
    cron = _CRON.fullmatch(text)
    if cron is not None:
        fields = cron.group("fields").split()
        if len(fields) != 6:
            raise ConfigError(
                f"context {key}={value!r} is invalid (a cron expression has 6 fields: minutes hours "
                f"day-of-month month day-of-week year); allowed: {allowed}"
            )
        if "?" not in (fields[2], fields[4]):
            raise ConfigError(
                f"context {key}={value!r} is invalid (day-of-month or day-of-week must be '?'); "
                f"allowed: {allowed}"
            )
        return text
    raise ConfigError(f"context {key}={value!r} is invalid; allowed: {allowed}")
