"""Configuration is read once and validated; a missing or bad variable fails with its name."""

from __future__ import annotations

import pytest

from file_index.key_layout import KeyLayout
from indexer import handler
from indexer.config import ConfigError, IndexerConfig


def test_defaults() -> None:
    config = IndexerConfig.from_env({"TABLE_NAME": "FileMetaData", "BUCKET_NAME": "fileupload.a"})
    assert config == IndexerConfig("FileMetaData", "fileupload.a", KeyLayout.parse("default"), 30, 5, 32)


def test_all_variables() -> None:
    config = IndexerConfig.from_env(
        {
            "TABLE_NAME": "T",
            "BUCKET_NAME": " B ",
            "KEY_LAYOUT": r"(?P<user>\w+)-(?P<file>.+)",
            "TOMBSTONE_TTL_DAYS": "20",
            "DYNAMODB_MAX_ATTEMPTS": "3",
            "WRITE_CONCURRENCY": "8",
        }
    )
    assert config.bucket_name == "B"
    assert (config.tombstone_ttl_days, config.dynamodb_max_attempts, config.write_concurrency) == (20, 3, 8)
    assert config.key_layout.split("bob-x.txt").upload_user == "bob"


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"BUCKET_NAME": "B"}, "TABLE_NAME"),
        ({"TABLE_NAME": " ", "BUCKET_NAME": "B"}, "TABLE_NAME"),
        ({"TABLE_NAME": "T"}, "BUCKET_NAME"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "  "}, "BUCKET_NAME"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "B", "KEY_LAYOUT": "(?P<user>x"}, "KEY_LAYOUT"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "B", "TOMBSTONE_TTL_DAYS": "soon"}, "TOMBSTONE_TTL_DAYS"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "B", "TOMBSTONE_TTL_DAYS": "0"}, "TOMBSTONE_TTL_DAYS"),
        ({"TABLE_NAME": "T", "BUCKET_NAME": "B", "WRITE_CONCURRENCY": "-1"}, "WRITE_CONCURRENCY"),
    ],
)
def test_bad_configuration_names_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        IndexerConfig.from_env(env)


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
    with pytest.raises(ConfigError, match="BUCKET_NAME is not set"):
        handler.lambda_handler({"Records": []}, lambda_context)
    handler.cold_start.cache_clear()
