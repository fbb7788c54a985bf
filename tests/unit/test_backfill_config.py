"""The backfill function's configuration: required names, and SDK timeouts that fit an invocation."""

from __future__ import annotations

import pytest

from backfill import handler
from backfill.config import BackfillConfig, ConfigError
from file_index.rules.placement import ShardPlacement

BASE = {"TABLE_NAME": "FileMetaData", "BUCKET_NAME": "fileupload.a"}


def test_the_clients_get_bounded_timeouts_by_default() -> None:
    config = BackfillConfig.from_env(BASE)
    botocore = config.sdk.botocore_config()
    assert botocore.connect_timeout == 2.0
    assert botocore.read_timeout == 5.0
    assert botocore.max_pool_connections == config.write_concurrency
    assert config.sdk.worst_call_seconds < 60  # botocore's default for one read alone


def test_timeouts_and_attempts_come_from_the_environment() -> None:
    env = {
        **BASE,
        "SDK_CONNECT_TIMEOUT_SECONDS": "1",
        "SDK_READ_TIMEOUT_SECONDS": "3.5",
        "DYNAMODB_MAX_ATTEMPTS": "4",
        "WRITE_CONCURRENCY": "8",
    }
    sdk = BackfillConfig.from_env(env).sdk
    assert (sdk.connect_timeout, sdk.read_timeout, sdk.max_attempts, sdk.max_connections) == (1.0, 3.5, 4, 8)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SDK_READ_TIMEOUT_SECONDS", "0"),
        ("SDK_CONNECT_TIMEOUT_SECONDS", "soon"),
        ("DYNAMODB_MAX_ATTEMPTS", "7.0"),
    ],
)
def test_a_bad_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        BackfillConfig.from_env({**BASE, name: value})


def test_a_missing_bucket_is_named() -> None:
    with pytest.raises(ConfigError, match="BUCKET_NAME"):
        BackfillConfig.from_env({"TABLE_NAME": "FileMetaData"})


def test_the_index_placement_comes_from_the_environment() -> None:
    assert BackfillConfig.from_env(BASE).placement == ShardPlacement()
    placement = ShardPlacement(bucket_shards=4, hot_users={"bot": 2}, multi_attribute_index=True)
    assert BackfillConfig.from_env({**BASE, **placement.to_env()}).placement == placement


@pytest.mark.parametrize(
    ("name", "value"),
    [("BUCKET_INDEX_SHARDS", "300"), ("HOT_USERS", "[1]"), ("MULTI_ATTRIBUTE_INDEX", "on")],
)
def test_a_bad_placement_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        BackfillConfig.from_env({**BASE, name: value})


def test_the_batch_lambdas_write_with_the_configured_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    placement = ShardPlacement(bucket_shards=4, multi_attribute_index=True)
    for name, value in {**BASE, **placement.to_env()}.items():
        monkeypatch.setenv(name, value)
    handler.cold_start.cache_clear()
    try:
        assert handler.cold_start().repairer.shard_placement == placement
    finally:
        handler.cold_start().executor.shutdown()
        handler.cold_start.cache_clear()
