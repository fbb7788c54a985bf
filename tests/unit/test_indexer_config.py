"""Configuration is read once and validated; a missing or bad variable fails with its name."""

from __future__ import annotations

import pytest
from botocore.config import Config

import backfill.config
import search.errors
from file_index.rules import config as shared
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import PlacementError, ShardPlacement
from file_index.store.sdk import SdkSettings
from indexer import handler
from indexer.config import ConfigError, IndexerConfig

REQUIRED = {"TABLE_NAME": "FileMetaData", "BUCKET_NAME": "fileupload.a"}


def test_defaults() -> None:
    config = IndexerConfig.from_env(REQUIRED)
    assert config == IndexerConfig("FileMetaData", "fileupload.a", KeyPattern.parse("default"))
    assert config.tombstone_ttl_days == DEFAULT_TOMBSTONE_TTL_DAYS == 30
    assert config.write_concurrency == 32
    # A connection for each entry write and each name write in flight.
    assert config.sdk == SdkSettings(
        max_attempts=3, max_connections=64, connect_timeout=2.0, read_timeout=5.0
    )


def test_all_variables() -> None:
    config = IndexerConfig.from_env(
        {
            "TABLE_NAME": "T",
            "BUCKET_NAME": " B ",
            "KEY_LAYOUT": r"(?P<user>\w+)-(?P<file>.+)",
            "TOMBSTONE_TTL_DAYS": "20",
            "DYNAMODB_MAX_ATTEMPTS": "4",
            "SDK_CONNECT_TIMEOUT_SECONDS": "0.5",
            "SDK_READ_TIMEOUT_SECONDS": " 3 ",
            "WRITE_CONCURRENCY": "8",
        }
    )
    assert config.bucket_name == "B"
    assert (config.tombstone_ttl_days, config.write_concurrency) == (20, 8)
    assert config.sdk == SdkSettings(
        max_attempts=4, max_connections=16, connect_timeout=0.5, read_timeout=3.0
    )
    assert config.key_pattern.split("bob-x.txt").upload_user == "bob"


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"BUCKET_NAME": "B"}, "TABLE_NAME"),
        ({"TABLE_NAME": " ", "BUCKET_NAME": "B"}, "TABLE_NAME"),
        ({"TABLE_NAME": "T"}, "BUCKET_NAME"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "  "}, "BUCKET_NAME"),
        ({**REQUIRED, "KEY_LAYOUT": "(?P<user>x"}, "KEY_LAYOUT"),
        ({**REQUIRED, "TOMBSTONE_TTL_DAYS": "soon"}, "TOMBSTONE_TTL_DAYS"),
        ({**REQUIRED, "TOMBSTONE_TTL_DAYS": "0"}, "TOMBSTONE_TTL_DAYS"),
        ({**REQUIRED, "TOMBSTONE_TTL_DAYS": "7.0"}, "TOMBSTONE_TTL_DAYS"),
        ({**REQUIRED, "WRITE_CONCURRENCY": "-1"}, "WRITE_CONCURRENCY"),
        ({**REQUIRED, "DYNAMODB_MAX_ATTEMPTS": "0"}, "DYNAMODB_MAX_ATTEMPTS"),
        ({**REQUIRED, "DYNAMODB_MAX_ATTEMPTS": "11"}, "DYNAMODB_MAX_ATTEMPTS"),
        ({**REQUIRED, "SDK_CONNECT_TIMEOUT_SECONDS": "0"}, "SDK_CONNECT_TIMEOUT_SECONDS"),
        ({**REQUIRED, "SDK_CONNECT_TIMEOUT_SECONDS": "-2"}, "SDK_CONNECT_TIMEOUT_SECONDS"),
        ({**REQUIRED, "SDK_CONNECT_TIMEOUT_SECONDS": "2s"}, "SDK_CONNECT_TIMEOUT_SECONDS"),
        ({**REQUIRED, "SDK_READ_TIMEOUT_SECONDS": "nan"}, "SDK_READ_TIMEOUT_SECONDS"),
        ({**REQUIRED, "SDK_READ_TIMEOUT_SECONDS": "inf"}, "SDK_READ_TIMEOUT_SECONDS"),
        ({**REQUIRED, "SDK_READ_TIMEOUT_SECONDS": "61"}, "SDK_READ_TIMEOUT_SECONDS"),
    ],
)
def test_bad_configuration_names_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        IndexerConfig.from_env(env)


def test_a_bound_is_said_in_the_error() -> None:
    with pytest.raises(
        ConfigError, match=r"DYNAMODB_MAX_ATTEMPTS must be a positive integer up to 10, got '11'"
    ):
        IndexerConfig.from_env({**REQUIRED, "DYNAMODB_MAX_ATTEMPTS": "11"})
    with pytest.raises(ConfigError, match=r"SDK_READ_TIMEOUT_SECONDS .* above 0 and at most 60, got '61'"):
        IndexerConfig.from_env({**REQUIRED, "SDK_READ_TIMEOUT_SECONDS": "61"})


def test_the_sdk_settings_reach_botocore() -> None:
    settings = SdkSettings(max_attempts=4, max_connections=8, connect_timeout=1.5, read_timeout=3.0)
    config = settings.botocore_config()
    assert isinstance(config, Config)
    assert (config.connect_timeout, config.read_timeout, config.max_pool_connections) == (1.5, 3.0, 8)
    assert config.retries == {"mode": "standard", "total_max_attempts": 4}


@pytest.mark.parametrize(
    ("attempts", "worst"),
    [
        (1, 7.0),  # one attempt: connect + read
        (3, 3 * 7.0 + 1 + 2),  # the defaults: back-offs of at most 1 s and 2 s between three attempts
        (7, 7 * 7.0 + 1 + 2 + 4 + 8 + 16 + 20),  # back-off capped at 20 s
    ],
)
def test_the_worst_case_of_one_call(attempts: int, worst: float) -> None:
    assert SdkSettings(max_attempts=attempts).worst_call_seconds == worst


def test_the_defaults_leave_time_in_the_indexers_invocation() -> None:
    # The deployed indexer has 30 s; one call's worst case must leave room to start writes at all.
    assert SdkSettings().worst_call_seconds == 24.0
    assert handler.ANSWER_RESERVE_MS + SdkSettings().worst_call_seconds * 1000 < 30_000


def test_one_configuration_error_for_every_function() -> None:
    assert ConfigError is shared.ConfigError
    assert backfill.config.ConfigError is shared.ConfigError
    assert search.errors.ConfigError is shared.ConfigError


def test_the_handler_reads_configuration_at_its_first_invocation(
    monkeypatch: pytest.MonkeyPatch, lambda_context: object
) -> None:
    # Importing the handler needed no environment; invoking it without TABLE_NAME fails with the name.
    monkeypatch.delenv("TABLE_NAME", raising=False)
    handler.cold_start.cache_clear()
    with pytest.raises(ConfigError, match="TABLE_NAME"):
        handler.lambda_handler({"Records": []}, lambda_context)
    handler.cold_start.cache_clear()


def test_the_cold_start_fails_naming_a_missing_bucket(
    monkeypatch: pytest.MonkeyPatch, lambda_context: object
) -> None:
    monkeypatch.setenv("TABLE_NAME", "FileMetaData")
    monkeypatch.delenv("BUCKET_NAME", raising=False)
    handler.cold_start.cache_clear()
    with pytest.raises(ConfigError, match="environment variable BUCKET_NAME is required"):
        handler.lambda_handler({"Records": []}, lambda_context)
    handler.cold_start.cache_clear()


def test_the_index_placement_comes_from_the_environment() -> None:
    assert IndexerConfig.from_env(REQUIRED).placement == ShardPlacement()  # unset: unsharded
    placement = ShardPlacement(bucket_shards=16, hot_users={"ingest-bot": 8}, multi_attribute_index=True)
    assert IndexerConfig.from_env({**REQUIRED, **placement.to_env()}).placement == placement


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BUCKET_INDEX_SHARDS", "0"),
        ("BUCKET_INDEX_SHARDS", "sixteen"),
        ("HOT_USERS", "ingest-bot"),
        ("HOT_USERS", '{"ingest-bot": 0}'),
        ("MULTI_ATTRIBUTE_INDEX", "maybe"),
    ],
)
def test_a_bad_placement_fails_the_cold_start_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch, lambda_context: object, name: str, value: str
) -> None:
    with pytest.raises(PlacementError, match=name):
        IndexerConfig.from_env({**REQUIRED, name: value})
    for variable, setting in {**REQUIRED, name: value}.items():
        monkeypatch.setenv(variable, setting)
    handler.cold_start.cache_clear()
    with pytest.raises(ConfigError, match=name):
        handler.lambda_handler({"Records": []}, lambda_context)
    handler.cold_start.cache_clear()
