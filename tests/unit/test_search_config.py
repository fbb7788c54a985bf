"""The search function's configuration: every missing or bad variable is named."""

from __future__ import annotations

import pytest

from file_index.rules.placement import ShardPlacement
from file_index.store.state import State
from search.config import SearchConfig, load_config, queue_name
from search.errors import ConfigError

QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/file-events"
DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/file-events-dlq"
COMPLETE = {
    "TABLE_NAME": "FileMetaData",
    "BUCKET_NAME": "b",
    "CURSOR_SECRET_ARN": "arn:secret",
    "QUEUE_URL": QUEUE_URL,
    "DEAD_LETTER_QUEUE_URL": DLQ_URL,
}


def test_complete_environment() -> None:
    assert load_config(COMPLETE) == SearchConfig(
        "FileMetaData", "b", "arn:secret", 300, QUEUE_URL, DLQ_URL, State.READY
    )
    assert load_config({**COMPLETE, "DOWNLOAD_URL_EXPIRY_SECONDS": "60"}).download_url_expiry_seconds == 60


@pytest.mark.parametrize("name", sorted(COMPLETE))
@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_missing_variable_is_named(name: str, value: str | None) -> None:
    env = {k: v for k, v in COMPLETE.items() if k != name}
    if value is not None:
        env[name] = value
    with pytest.raises(ConfigError, match=f"environment variable {name} is required"):
        load_config(env)


@pytest.mark.parametrize("value", ["soon", "0", "-5", "604801", "60.0", "+60"])
def test_a_bad_expiry_is_named(value: str) -> None:
    with pytest.raises(ConfigError, match="DOWNLOAD_URL_EXPIRY_SECONDS"):
        load_config({**COMPLETE, "DOWNLOAD_URL_EXPIRY_SECONDS": value})


def test_the_expiry_bound_is_said_in_the_error() -> None:
    with pytest.raises(
        ConfigError, match="DOWNLOAD_URL_EXPIRY_SECONDS must be a positive integer up to 604800"
    ):
        load_config({**COMPLETE, "DOWNLOAD_URL_EXPIRY_SECONDS": "604801"})


@pytest.mark.parametrize("name", ["QUEUE_URL", "DEAD_LETTER_QUEUE_URL"])
@pytest.mark.parametrize(
    "value",
    [
        "file-events",
        "arn:aws:sqs:eu-west-1:123456789012:file-events",
        "https://sqs.amazonaws.com/",
        "ftp://h/q",
    ],
)
def test_a_queue_url_must_be_a_url_naming_the_queue(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{name} must be an SQS queue URL"):
        load_config({**COMPLETE, name: value})


def test_the_local_stacks_queue_urls_are_accepted() -> None:
    config = load_config({**COMPLETE, "QUEUE_URL": "http://127.0.0.1:5000/123456789012/file-events"})
    assert queue_name(config.queue_url) == "file-events"
    assert queue_name(QUEUE_URL) == "file-events"


@pytest.mark.parametrize(("value", "state"), [("READY", State.READY), ("BUILDING", State.BUILDING)])
def test_the_initial_state_is_ready_or_building(value: str, state: State) -> None:
    assert load_config({**COMPLETE, "INDEX_INITIAL_STATE": value}).initial_state is state


@pytest.mark.parametrize("value", ["building", "DONE", "0"])
def test_a_bad_initial_state_is_named(value: str) -> None:
    with pytest.raises(ConfigError, match=f"INDEX_INITIAL_STATE must be READY or BUILDING, not '{value}'"):
        load_config({**COMPLETE, "INDEX_INITIAL_STATE": value})


def test_the_placement_comes_from_the_environment_and_defaults_to_one_shard() -> None:
    assert load_config(COMPLETE).placement == ShardPlacement()
    env = {
        **COMPLETE,
        "BUCKET_INDEX_SHARDS": "16",
        "HOT_USERS": '{"bot": 8}',
        "MULTI_ATTRIBUTE_INDEX": "true",
    }
    assert load_config(env).placement == ShardPlacement(16, {"bot": 8}, multi_attribute_index=True)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BUCKET_INDEX_SHARDS", "0"),
        ("BUCKET_INDEX_SHARDS", "many"),
        ("HOT_USERS", "[1]"),
        ("MULTI_ATTRIBUTE_INDEX", "on"),
    ],
)
def test_a_bad_placement_fails_the_cold_start_naming_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_config({**COMPLETE, name: value})


def test_the_bucket_time_index_switch_defaults_on_and_refuses_other_words() -> None:
    assert load_config(COMPLETE).bucket_time_index is True
    assert load_config({**COMPLETE, "BUCKET_TIME_INDEX": "false"}).bucket_time_index is False
    with pytest.raises(ConfigError, match="BUCKET_TIME_INDEX must be true or false, not 'maybe'"):
        load_config({**COMPLETE, "BUCKET_TIME_INDEX": "maybe"})
