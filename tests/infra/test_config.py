"""Context validation: every key of cdk.json parses, every bad value fails naming the key and the choices."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from typing import Any

import pytest

from file_index.rules import objects, schema
from file_index.rules.placement import ShardPlacement
from infra.config import ApiAuth, ConfigError, EventSource, LogLevel, RemovalChoice, StackConfig
from infra.sizing import IndexerSizing
from tests.infra.conftest import REPO_ROOT, cdk_json_context

pytestmark = pytest.mark.xdist_group("infra")

PINNED_POWERTOOLS = version("aws-lambda-powertools")


def test_cdk_json_context_gives_the_secure_defaults() -> None:
    config = StackConfig.from_mapping(cdk_json_context())

    assert config == StackConfig()
    assert config.table_name == schema.TABLE_NAME
    assert config.removal is RemovalChoice.RETAIN
    assert config.api_auth is ApiAuth.IAM
    assert config.alarm_email is None
    assert config.key_pattern == "default"
    # The stack creates its bucket, fed by S3 notifications, with no scheduled reconcile.
    assert config.existing_bucket_name is None
    assert config.event_source is EventSource.S3
    assert config.reconcile_schedule is None
    assert (config.backfill_concurrency, config.backfill_batch_size, config.reconcile_segments) == (
        10,
        500,
        8,
    )


def test_every_documented_key_is_in_cdk_json() -> None:
    context = cdk_json_context()

    for key in (
        "keyLayout",
        "tableName",
        "removalPolicy",
        "logLevel",
        "alarmEmail",
        "apiAuth",
        "tombstoneTtlDays",
        "existingBucketName",
        "eventSource",
        "backfillConcurrency",
        "backfillBatchSize",
        "reconcileSegments",
        "reconcileSchedule",
        "bucketIndexShards",
        "hotUsers",
        "multiAttributeIndex",
        "indexerMemorySize",
        "indexerBatchSize",
        "indexerMaxBatchingWindowSeconds",
        "indexerMaxConcurrency",
    ):
        assert key in context


def test_an_empty_context_gives_the_defaults() -> None:
    assert StackConfig.from_mapping({}) == StackConfig()


def test_good_values_parse_into_types() -> None:
    config = StackConfig.from_mapping(
        {
            "keyLayout": r"^uploads/(?P<user>[^/]+)/(?P<file>.+)$",
            "tableName": "FileMetaData-dev",
            "removalPolicy": "DESTROY",
            "logLevel": "debug",
            "alarmEmail": "ops@example.com",
            "apiAuth": "none",
            # `cdk -c tombstoneTtlDays=7` passes strings
            "tombstoneTtlDays": "7",
            # Only ever the pinned release; repeating it is harmless.
            "powertoolsVersion": PINNED_POWERTOOLS,
            "existingBucketName": "legacy.uploads-2019",
            "eventSource": "EventBridge",
            "backfillConcurrency": "100",
            "backfillBatchSize": 1000,
            "reconcileSegments": "16",
            "reconcileSchedule": "cron(0 3 ? * SUN *)",
        }
    )

    assert config == StackConfig(
        key_pattern=r"^uploads/(?P<user>[^/]+)/(?P<file>.+)$",
        table_name="FileMetaData-dev",
        removal=RemovalChoice.DESTROY,
        log_level=LogLevel.DEBUG,
        alarm_email="ops@example.com",
        api_auth=ApiAuth.NONE,
        tombstone_ttl_days=7,
        powertools_version=PINNED_POWERTOOLS,
        existing_bucket_name="legacy.uploads-2019",
        event_source=EventSource.EVENTBRIDGE,
        backfill_concurrency=100,
        backfill_batch_size=1000,
        reconcile_segments=16,
        reconcile_schedule="cron(0 3 ? * SUN *)",
    )


@pytest.mark.parametrize(
    "schedule", ["rate(7 days)", "rate(1 day)", "rate(1 hour)", "rate(30 minutes)", "cron(15 2 1 * ? *)"]
)
def test_eventbridge_schedules_are_accepted(schedule: str) -> None:
    assert StackConfig.from_mapping({"reconcileSchedule": schedule}).reconcile_schedule == schedule


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("removalPolicy", "keep", "retain, destroy"),
        ("apiAuth", "cognito", "iam, none"),
        ("logLevel", "verbose", "DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("tombstoneTtlDays", "0", "an integer from 1 to 3650"),
        ("tombstoneTtlDays", "thirty", "an integer from 1 to 3650"),
        ("tombstoneTtlDays", -5, "an integer from 1 to 3650"),
        ("tombstoneTtlDays", True, "an integer from 1 to 3650"),
        ("tombstoneTtlDays", 1.5, "an integer from 1 to 3650"),
        ("powertoolsVersion", "latest", "only, the release requirements.txt pins"),
        ("powertoolsVersion", 27, "only, the release requirements.txt pins"),
        ("powertoolsVersion", "3.40.1", "only, the release requirements.txt pins"),
        ("powertoolsVersion", "3.36.0", "only, the release requirements.txt pins"),
        ("tableName", "ab", "3-255 characters"),
        ("tableName", "File Meta Data", "3-255 characters"),
        ("alarmEmail", "ops-at-example.com", "an e-mail address, or unset"),
        ("keyLayout", "(?P<user>[^_]+", "'default' or a Python regex"),
        ("keyLayout", r"(?P<user>[^_]+)_(.+)", "'default' or a Python regex"),
        ("keyLayout", 42, "'default' or a Python regex"),
        ("existingBucketName", "Legacy_Uploads", "an S3 bucket name"),
        ("existingBucketName", "ab", "an S3 bucket name"),
        ("existingBucketName", "-legacy", "an S3 bucket name"),
        ("existingBucketName", "legacy..uploads", "an S3 bucket name"),
        ("existingBucketName", "192.168.10.12", "an S3 bucket name"),
        ("existingBucketName", "s3://legacy-uploads", "an S3 bucket name"),
        ("existingBucketName", 42, "an S3 bucket name"),
        ("eventSource", "sns", "s3, eventbridge"),
        ("backfillConcurrency", "0", "an integer from 1 to 1000"),
        ("backfillConcurrency", 1001, "an integer from 1 to 1000"),
        ("backfillConcurrency", "ten", "an integer from 1 to 1000"),
        ("backfillBatchSize", "0", "an integer from 1 to 10000"),
        ("backfillBatchSize", 10001, "an integer from 1 to 10000"),
        ("reconcileSegments", 41, "an integer from 1 to 40"),
        ("reconcileSchedule", "weekly", "an EventBridge schedule"),
        ("reconcileSchedule", "rate(7 Days)", "an EventBridge schedule"),
        ("reconcileSchedule", "rate(0 days)", "an EventBridge schedule"),
        ("reconcileSchedule", "rate(1 days)", "singular unit for 1"),
        ("reconcileSchedule", "rate(7 day)", "singular unit for 1"),
        ("reconcileSchedule", "cron(0 3 * * *)", "a cron expression has 6 fields"),
        ("reconcileSchedule", "cron(0 3 1 * MON *)", "day-of-month or day-of-week must be '?'"),
        ("reconcileSchedule", 7, "an EventBridge schedule"),
        ("bucketIndexShards", 0, "an integer from 1 to 256"),
        ("bucketIndexShards", "257", "an integer from 1 to 256"),
        ("bucketIndexShards", True, "an integer from 1 to 256"),
        ("bucketIndexShards", 8.5, "an integer from 1 to 256"),
        ("hotUsers", {"ingest-bot": 0}, "an object of user name -> shard count from 1 to 256"),
        ("hotUsers", {"ingest-bot": 257}, "an object of user name -> shard count from 1 to 256"),
        ("hotUsers", {"bot#1": 2}, "contains '#'"),
        ("hotUsers", {"": 2}, "a user name must be a non-empty string"),
        ("hotUsers", ["ingest-bot"], "an object of user name -> shard count"),
        ("hotUsers", "ingest-bot=8", "not JSON"),
        ("multiAttributeIndex", "yes", "true, false"),
        ("multiAttributeIndex", 1, "true, false"),
        ("indexerMemorySize", 127, "an integer from 128 to 10240"),
        ("indexerMemorySize", 10241, "an integer from 128 to 10240"),
        ("indexerBatchSize", 0, "an integer from 1 to 10000"),
        ("indexerBatchSize", 10001, "an integer from 1 to 10000"),
        ("indexerMaxBatchingWindowSeconds", 301, "an integer from 0 to 300"),
        ("indexerMaxBatchingWindowSeconds", -1, "an integer from 0 to 300"),
        ("indexerMaxConcurrency", 1, "an integer from 2 to 1000"),
        ("indexerMaxConcurrency", 1001, "an integer from 2 to 1000"),
    ],
)
def test_a_bad_value_names_its_key_and_the_allowed_values(key: str, value: Any, allowed: str) -> None:
    context = {**cdk_json_context(), key: value}

    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping(context)

    message = str(raised.value)
    assert f"context {key}=" in message
    assert repr(value) in message
    assert allowed in message


def test_a_key_layout_without_the_file_group_says_which_group_is_missing() -> None:
    with pytest.raises(ConfigError, match=re.escape("missing ['file']")):
        StackConfig.from_mapping({"keyLayout": r"(?P<user>[^_]+)_.+"})


def test_unset_values_fall_back_to_defaults() -> None:
    # `cdk -c alarmEmail=` and cdk.json's "" both mean "no e-mail".
    assert StackConfig.from_mapping({"alarmEmail": "", "logLevel": None}) == StackConfig()
    # ...and for these: the stack's own bucket, no schedule.
    assert StackConfig.from_mapping({"existingBucketName": "", "reconcileSchedule": ""}) == StackConfig()


def test_app_py_refuses_a_bad_value_before_building_anything() -> None:
    """The CDK CLI hands context to app.py in CDK_CONTEXT_JSON; a bad value must stop `cdk synth`."""
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "removalPolicy": "keep"}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }

    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    # One line, no traceback (`cdk --debug` shows it).
    assert result.stderr == "cdk.json: context removalPolicy='keep' is invalid; allowed: retain, destroy\n"


def test_app_py_refuses_a_bad_schedule_naming_the_key() -> None:
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "reconcileSchedule": "every sunday"}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }

    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    assert "cdk.json: context reconcileSchedule='every sunday' is invalid" in result.stderr


def test_powertools_is_always_the_pinned_release() -> None:
    """Lambda runs the Powertools the tests ran with: requirements.txt's pin, whatever the context says."""
    assert StackConfig().powertools_version == PINNED_POWERTOOLS
    assert StackConfig.from_mapping({"powertoolsVersion": PINNED_POWERTOOLS}).powertools_version == (
        PINNED_POWERTOOLS
    )
    with pytest.raises(ConfigError, match=re.escape(f"allowed: {PINNED_POWERTOOLS!r} only")):
        StackConfig.from_mapping({"powertoolsVersion": "3.99.0"})


def test_app_py_refuses_another_powertools_release() -> None:
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "powertoolsVersion": "3.99.0"}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }

    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    assert "cdk.json: context powertoolsVersion='3.99.0' is invalid" in result.stderr
    assert "requirements.txt" in result.stderr


def test_the_tombstone_expiry_default_is_the_writers() -> None:
    """One default for the stack, the indexer and the backfill: the writer's."""
    assert StackConfig().tombstone_ttl_days == objects.DEFAULT_TOMBSTONE_TTL_DAYS
    assert "DEFAULT_TOMBSTONE_TTL_DAYS =" not in (REPO_ROOT / "infra" / "config.py").read_text()


# --- the shard placement and the indexer's sizing -----------------------------------------------------------


def test_the_default_placement_shards_every_bucket_16_ways_with_two_indexes() -> None:
    config = StackConfig.from_mapping(cdk_json_context())

    assert config.placement == ShardPlacement(bucket_shards=16)
    assert StackConfig.from_mapping({}).placement == ShardPlacement(bucket_shards=16)
    assert not config.placement.multi_attribute_index
    assert dict(config.placement.hot_users) == {}


def test_placement_keys_parse_from_json_and_from_the_command_lines_strings() -> None:
    """`cdk -c bucketIndexShards=32` passes strings; cdk.json passes JSON types. Both give one placement."""
    expected = ShardPlacement(bucket_shards=32, hot_users={"ingest-bot": 8}, multi_attribute_index=True)

    from_json = StackConfig.from_mapping(
        {"bucketIndexShards": 32, "hotUsers": {"ingest-bot": 8}, "multiAttributeIndex": True}
    )
    from_cli = StackConfig.from_mapping(
        {"bucketIndexShards": "32", "hotUsers": '{"ingest-bot": 8}', "multiAttributeIndex": "true"}
    )

    assert from_json.placement == expected
    assert from_cli.placement == expected
    assert StackConfig.from_mapping({"multiAttributeIndex": "false"}).placement.multi_attribute_index is False


def test_the_default_sizing_indexes_at_least_10000_records_per_second() -> None:
    """The arithmetic of infra/sizing.py, with the measured 571 us of CPU per record."""
    sizing = StackConfig.from_mapping(cdk_json_context()).indexer_sizing

    assert sizing == IndexerSizing(
        memory_mb=1769, batch_size=100, max_batching_window_seconds=1, max_concurrency=10
    )
    assert sizing.vcpu_share == 1.0
    assert sizing.records_per_second() == pytest.approx(10 / 571e-6)
    assert sizing.records_per_second() >= 10_000
    # The 0.2.0 sizing: a seventh of a vCPU, ten pollers.
    before = IndexerSizing(memory_mb=256, batch_size=50, max_batching_window_seconds=2, max_concurrency=10)
    assert before.records_per_second() == pytest.approx(2534, abs=1)


def test_memory_above_one_vcpu_buys_no_more_records_and_slow_writes_bound_the_rate() -> None:
    big = IndexerSizing(memory_mb=10_240)

    assert big.vcpu_share == 1.0
    assert big.records_per_second() == IndexerSizing().records_per_second()
    # 32 writes in flight at 50 ms each: 640 records/s per instance, whatever the CPU.
    assert IndexerSizing().records_per_second(write_latency_seconds=0.05) == pytest.approx(6400)


def test_sizing_keys_parse_into_the_indexers_sizing() -> None:
    config = StackConfig.from_mapping(
        {
            "indexerMemorySize": "3008",
            "indexerBatchSize": 500,
            "indexerMaxBatchingWindowSeconds": "5",
            "indexerMaxConcurrency": 50,
        }
    )

    assert config.indexer_sizing == IndexerSizing(
        memory_mb=3008, batch_size=500, max_batching_window_seconds=5, max_concurrency=50
    )


def test_a_batch_above_10_without_a_batching_window_is_refused_naming_both_keys() -> None:
    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping({"indexerBatchSize": 11, "indexerMaxBatchingWindowSeconds": 0})

    message = str(raised.value)
    assert "context indexerBatchSize=11 needs indexerMaxBatchingWindowSeconds of at least 1" in message
    assert "got 0" in message
    # Ten records need no window.
    assert StackConfig.from_mapping(
        {"indexerBatchSize": 10, "indexerMaxBatchingWindowSeconds": 0}
    ).indexer_sizing == IndexerSizing(batch_size=10, max_batching_window_seconds=0)


def test_a_batch_that_cannot_finish_within_the_timeout_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping({"indexerBatchSize": 5000, "indexerMemorySize": 128})

    message = str(raised.value)
    assert "context indexerBatchSize=5000 with indexerMemorySize=128 needs ~39 s of CPU per batch" in message
    assert "30 s timeout" in message


def test_app_py_refuses_a_bad_placement_naming_the_key() -> None:
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "hotUsers": {"ingest-bot": 0}}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }

    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    assert "cdk.json: context hotUsers={'ingest-bot': 0} is invalid" in result.stderr


def test_cdk_json_is_read_by_one_reader(tmp_path: Any) -> None:
    """The local stack and the bench read cdk.json through `from_cdk_json`, with `-c`-like overrides."""
    cdk_json = tmp_path / "cdk.json"
    cdk_json.write_text(json.dumps({"app": "python3 app.py", "context": {"bucketIndexShards": 4}}))

    assert StackConfig.from_cdk_json(cdk_json).placement == ShardPlacement(bucket_shards=4)
    assert StackConfig.from_cdk_json(cdk_json, {"bucketIndexShards": 8}).placement == ShardPlacement(
        bucket_shards=8
    )
    assert StackConfig.from_cdk_json() == StackConfig.from_mapping(cdk_json_context())


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "cannot read"), ("{", "is not JSON"), ('{"context": []}', "'context' must be a JSON object")],
)
def test_a_broken_cdk_json_is_named(tmp_path: Any, content: str | None, message: str) -> None:
    cdk_json = tmp_path / "cdk.json"
    if content is not None:
        cdk_json.write_text(content)

    with pytest.raises(ConfigError, match=re.escape(message)):
        StackConfig.from_cdk_json(cdk_json)


def test_reading_the_configuration_does_not_start_the_cdk() -> None:
    """The local stack reads the configuration; importing aws_cdk would start a jsii node process."""
    probe = (
        "import sys, infra.config, local_stack.stack; print('aws_cdk' in sys.modules, 'jsii' in sys.modules)"
    )

    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )

    assert result.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("claim", ["sub", "cognito:username", "custom:uploadUser", "custom:employee_no"])
def test_a_claim_people_cannot_write_is_accepted(claim: str) -> None:
    assert StackConfig.from_mapping({"userClaim": claim}).user_claim == claim


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        # A person changes their own address with UpdateUserAttributes; Cognito then marks it unverified.
        ("email", "email_verified false"),
        ("phone_number", "phone_number_verified false"),
        # Standard attributes people write themselves.
        ("preferred_username", "people can write standard attributes"),
        ("name", "people can write standard attributes"),
        ("email_verified", "people can write standard attributes"),
        # Claims that do not name one person.
        ("cognito:groups", "other claims do not name one person"),
        ("aud", "other claims do not name one person"),
        ("custom:", "a custom attribute's name is 1-20 characters"),
        ("custom:a_name_over_twenty_chars", "a custom attribute's name is 1-20 characters"),
        ("custom:has space", "a custom attribute's name is 1-20 characters"),
        (42, "is invalid"),
    ],
)
def test_a_claim_people_could_write_is_refused_naming_the_safe_ones(claim: Any, why: str) -> None:
    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping({**cdk_json_context(), "userClaim": claim})

    message = str(raised.value)
    assert f"context userClaim={claim!r}" in message
    assert why in message
    assert "allowed: sub (the default), cognito:username, or custom:NAME" in message


def test_a_custom_claim_of_an_existing_pool_needs_the_deployers_word() -> None:
    existing = {"userPoolId": "eu-west-1_AbCdEf123", "userClaim": "custom:uploadUser"}

    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping(existing)

    message = str(raised.value)
    assert (
        "userClaim='custom:uploadUser' with userPoolId='eu-west-1_AbCdEf123' needs userClaimAdminOnly"
        in message
    )
    assert "allowed: sub or cognito:username" in message
    assert StackConfig.from_mapping({**existing, "userClaimAdminOnly": True}).user_claim_admin_only
    # Immutable claims need nothing; the stack's own pool declares the attribute admin-only itself.
    for claim in ("sub", "cognito:username"):
        assert StackConfig.from_mapping({**existing, "userClaim": claim}).user_claim == claim
    assert StackConfig.from_mapping({"userClaim": "custom:uploadUser"}).user_claim_admin_only is False
    with pytest.raises(ConfigError, match="userClaimAdminOnly='yes' is invalid; allowed: true, false"):
        StackConfig.from_mapping({**existing, "userClaimAdminOnly": "yes"})


def test_app_py_refuses_an_email_claim_naming_why() -> None:
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "userClaim": "email"}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }

    result = subprocess.run(
        [sys.executable, "app.py"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    assert result.stderr.startswith("cdk.json: context userClaim='email' is unsafe: a person can change")
