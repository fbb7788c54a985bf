"""The shard placement: where writers put an entry and which values readers query, from env or context."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from file_index.rules import shards, zorder
from file_index.rules.config import ConfigError
from file_index.rules.placement import DEFAULT_BUCKET_INDEX_SHARDS, PlacementError, ShardPlacement

object_keys = st.text(min_size=1, max_size=40)


def test_unset_environment_is_the_previous_placement() -> None:
    placement = ShardPlacement.from_env({})
    assert placement == ShardPlacement()
    assert placement.bucket_partition("photos", "USER001/a.jpg") == "photos"
    assert placement.user_partition("USER001", "USER001/a.jpg") == "USER001"
    assert placement.user_shard("USER001", "USER001/a.jpg") == 0
    assert placement.z_address("2017-08-20T09:15:02.113Z", 10) is None
    assert placement.bucket_partitions("photos") == ["photos"]


def test_environment_round_trip() -> None:
    placement = ShardPlacement(bucket_shards=16, hot_users={"ingest-bot": 8}, multi_attribute_index=True)
    assert ShardPlacement.from_env(placement.to_env()) == placement


def test_context_gives_the_same_placement_as_the_environment() -> None:
    context = {"bucketIndexShards": 16, "hotUsers": {"ingest-bot": 8}, "multiAttributeIndex": True}
    assert ShardPlacement.from_context(context) == ShardPlacement(16, {"ingest-bot": 8}, True)
    assert ShardPlacement.from_context({}) == ShardPlacement(bucket_shards=DEFAULT_BUCKET_INDEX_SHARDS)
    assert DEFAULT_BUCKET_INDEX_SHARDS == 16


@given(key=object_keys, count=st.integers(1, 64))
def test_an_entry_goes_to_one_of_the_values_a_reader_queries(key: str, count: int) -> None:
    placement = ShardPlacement(bucket_shards=count, hot_users={"bot": count})
    assert placement.bucket_partition("photos", key) in placement.bucket_partitions("photos")
    assert placement.user_partition("bot", key) in placement.user_partitions("bot")
    assert placement.public_bucket(placement.bucket_partition("photos", key)) == "photos"
    stored = placement.user_partition("bot", key)
    assert placement.public_user(stored, placement.user_shard("bot", key)) == "bot"


@given(key=object_keys, before=st.integers(1, 32), extra=st.integers(0, 32))
def test_raising_a_count_keeps_every_entry_readable(key: str, before: int, extra: int) -> None:
    written = ShardPlacement(bucket_shards=before).bucket_partition("photos", key)
    assert written in ShardPlacement(bucket_shards=before + extra).bucket_partitions("photos")


def test_a_user_named_like_a_shard_is_not_taken_for_one() -> None:
    placement = ShardPlacement(hot_users={"bot": 8})
    # A user literally named "bot#3" is not hot: written under its own name, without userShard.
    assert placement.user_partition("bot#3", "bot#3/x") == "bot#3"
    assert placement.user_shard("bot#3", "bot#3/x") == 0
    assert placement.public_user("bot#3", None) == "bot#3"
    assert placement.public_user("bot#3", 3) == "bot"


def test_z_address_when_the_third_index_is_on() -> None:
    placement = ShardPlacement(multi_attribute_index=True)
    address = placement.z_address("2017-08-20T09:15:02.113Z", 1234)
    assert address == zorder.encode(zorder.epoch_millis("2017-08-20T09:15:02.113Z"), 1234)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BUCKET_INDEX_SHARDS": "0"}, "BUCKET_INDEX_SHARDS must be a whole number from 1 to 256, got 0"),
        ({"BUCKET_INDEX_SHARDS": "257"}, "from 1 to 256, got 257"),
        ({"BUCKET_INDEX_SHARDS": "1.5"}, "BUCKET_INDEX_SHARDS must be a whole number, got '1.5'"),
        ({"HOT_USERS": "[1]"}, "HOT_USERS must be an object of user -> shard count"),
        ({"HOT_USERS": "{nope"}, "HOT_USERS must be a JSON object"),
        ({"HOT_USERS": '{"a#b": 2}'}, "contains '#'"),
        ({"HOT_USERS": '{"bot": 0}'}, "HOT_USERS['bot'] must be a whole number from 1 to 256"),
        ({"HOT_USERS": '{"bot": true}'}, "HOT_USERS['bot'] must be a whole number"),
        ({"HOT_USERS": '{"": 2}'}, "a user name must be a non-empty string"),
        ({"MULTI_ATTRIBUTE_INDEX": "maybe"}, "MULTI_ATTRIBUTE_INDEX must be true or false"),
    ],
)
def test_bad_environment_names_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(PlacementError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ShardPlacement.from_env(env)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"bucketIndexShards": "16"}, "bucketIndexShards must be a whole number from 1 to 256, got '16'"),
        ({"bucketIndexShards": True}, "bucketIndexShards must be a whole number"),
        ({"multiAttributeIndex": "true"}, "multiAttributeIndex must be true or false, got 'true'"),
        ({"hotUsers": {"bot": 300}}, "from 1 to 256, got 300"),
    ],
)
def test_bad_context_names_the_key(context: dict[str, object], message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        ShardPlacement.from_context(context)


def test_a_placement_error_is_a_configuration_error() -> None:
    assert issubclass(PlacementError, ConfigError)
    assert shards.MAX_SHARD_COUNT == 256
