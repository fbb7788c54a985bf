"""The deployed configuration record: written by the deployment's custom resource, read by every writer,
and a difference refused with both values named (the indexer, the backfill function; the admin tools in
tests/integration/local_stack/test_deployed_configuration.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.config import ConfigError
from file_index.rules.objects import MAX_KEY_BYTES, is_record_key
from file_index.rules.placement import ShardPlacement
from file_index.store.deployment import (
    RECHECK_SECONDS,
    ConfigurationCheck,
    ConfigurationMismatchError,
    DeployedConfiguration,
    DeployedConfigurationStore,
    configuration_key,
)
from file_index.store.state import state_key
from tests.integration.indexer.notifications import notification, s3_record

TABLE = "FileMetaData"
BUCKET = "fileupload.a"
DEPLOYED = DeployedConfiguration.of(
    placement=ShardPlacement(bucket_shards=16, hot_users={"bot": 4}),
    key_pattern="default",
    bucket_time_index=True,
    name_table="FileNameIndex",
    enrich=["tags", "contentType"],
)


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**schema.create_table_request(TABLE))
        yield client


def test_the_record_key_is_no_object_key_and_scans_skip_it() -> None:
    key = configuration_key(BUCKET)
    assert len(key.encode("utf-8")) == MAX_KEY_BYTES + 1
    assert is_record_key(key)
    assert is_record_key(state_key(BUCKET))
    assert key != state_key(BUCKET)
    assert configuration_key("a") != configuration_key("a.b")
    assert not is_record_key("~deployed-configuration~" + BUCKET)  # an S3 key may look like it


def test_the_record_round_trips_in_cdk_json_terms(dynamodb: Any) -> None:
    store = DeployedConfigurationStore(dynamodb, TABLE)
    assert store.read(BUCKET) is None
    store.write(BUCKET, DEPLOYED, written_by="deployment", now="2026-11-25T10:00:00.000Z")
    recorded = store.read(BUCKET)
    assert recorded == DEPLOYED
    assert recorded is not None
    assert recorded.to_json() == {
        "bucketIndexShards": 16,
        "hotUsers": {"bot": 4},
        "multiAttributeIndex": False,
        "keyLayout": "default",
        "bucketTimeIndex": True,
        "nameIndex": True,
        "nameTableName": "FileNameIndex",
        "enrich": ["contentType", "tags"],
    }
    assert recorded.placement == ShardPlacement(bucket_shards=16, hot_users={"bot": 4})
    assert recorded.name_table == "FileNameIndex"
    # No index key attribute: no search can return it.
    item = dynamodb.get_item(TableName=TABLE, Key={"objectKey": {"S": configuration_key(BUCKET)}})["Item"]
    assert set(item) == {"objectKey", "configurationOf", "settings", "writtenBy", "writtenAt"}


def test_a_damaged_record_is_an_error_that_says_how_to_mend_it(dynamodb: Any) -> None:
    dynamodb.put_item(
        TableName=TABLE,
        Item={"objectKey": {"S": configuration_key(BUCKET)}, "settings": {"S": "{not json"}},
    )
    with pytest.raises(ConfigError, match=r"damaged .*deploy again"):
        DeployedConfigurationStore(dynamodb, TABLE).read(BUCKET)


def test_differences_name_only_the_settings_both_sides_have() -> None:
    own = DeployedConfiguration.of(placement=ShardPlacement(bucket_shards=32, hot_users={"bot": 4}))
    assert DEPLOYED.differences(own) == [("bucketIndexShards", 16, 32)]
    assert DEPLOYED.differences(DeployedConfiguration.of(key_pattern="default")) == []
    no_names = DeployedConfiguration.of(name_table=None)
    assert DEPLOYED.differences(no_names) == [("nameIndex", True, False)]
    # Order and repetition do not make a difference.
    assert DeployedConfiguration.of(enrich=["tags", "contentType", "tags"]) == DeployedConfiguration.of(
        enrich=["contentType", "tags"]
    )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_check_names_both_values_and_trusts_a_match_for_a_minute(dynamodb: Any) -> None:
    store = DeployedConfigurationStore(dynamodb, TABLE)
    clock = Clock()
    own = DeployedConfiguration.of(
        placement=ShardPlacement(bucket_shards=16, hot_users={"bot": 4}), key_pattern="default"
    )
    check = ConfigurationCheck(store, BUCKET, own, writer="the indexer", clock=clock)
    check.check()  # no record: nothing to differ from
    store.write(BUCKET, DEPLOYED, written_by="deployment", now="t")
    check.check()  # the earlier answer is trusted for a while...
    clock.now += RECHECK_SECONDS
    check.check()  # ...then read again: it matches
    store.write(
        BUCKET,
        DeployedConfiguration({**DEPLOYED.to_json(), "keyLayout": r"uploads/(?P<user>[^/]+)/(?P<file>.+)"}),
        written_by="deployment",
        now="t",
    )
    clock.now += RECHECK_SECONDS
    with pytest.raises(ConfigurationMismatchError) as refused:
        check.check()
    message = str(refused.value)
    assert 'keyLayout is "uploads/(?P<user>[^/]+)/(?P<file>.+)" in the deployed configuration' in message
    assert 'but "default" for the indexer' in message
    assert f"s3://{BUCKET}" in message
    assert TABLE in message
    with pytest.raises(ConfigurationMismatchError):
        check.check()  # a mismatch is never trusted: read again at once, refused again
    store.write(BUCKET, DEPLOYED, written_by="deployment", now="t")
    check.check()  # the deployment caught up


# -- the indexer ------------------------------------------------------------------------------------------


@pytest.fixture
def indexer_env(monkeypatch: pytest.MonkeyPatch, dynamodb: Any) -> Iterator[Any]:
    from indexer import handler

    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("BUCKET_INDEX_SHARDS", "16")
    monkeypatch.setenv("HOT_USERS", '{"bot": 4}')
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "file-indexer")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    handler.cold_start.cache_clear()
    yield handler
    handler.cold_start().executor.shutdown()
    handler.cold_start.cache_clear()


def _batch(*keys: str) -> dict[str, Any]:
    return {
        "Records": [
            {"messageId": f"m{n}", "body": notification(s3_record("ObjectCreated:Put", key, sequencer="0A"))}
            for n, key in enumerate(keys)
        ]
    }


def _entry(dynamodb: Any, key: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = dynamodb.get_item(TableName=TABLE, Key={"objectKey": {"S": key}}).get(
        "Item"
    )
    return item


def test_the_indexer_refuses_a_batch_while_its_settings_differ_from_the_record(
    indexer_env: Any, dynamodb: Any, lambda_context: Any, caplog: pytest.LogCaptureFixture
) -> None:
    handler = indexer_env
    # The deployment recorded 32 shards; this indexer's environment says 16 (a deployment half-way).
    recorded = DeployedConfiguration(
        {**DEPLOYED.to_json(), "bucketIndexShards": 32, "nameIndex": False, "enrich": []}
    )
    DeployedConfigurationStore(dynamodb, TABLE).write(BUCKET, recorded, written_by="deployment", now="t")
    answer = handler.lambda_handler(_batch("alice/a.txt", "bob/b.txt"), lambda_context)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m1"}]}
    assert _entry(dynamodb, "alice/a.txt") is None
    assert _entry(dynamodb, "bob/b.txt") is None
    assert "bucketIndexShards is 32 in the deployed configuration but 16 for the indexer" in caplog.text
    # The deployment updates the record to what the function runs with: the redelivered batch is written.
    DeployedConfigurationStore(dynamodb, TABLE).write(
        BUCKET,
        DeployedConfiguration({**recorded.to_json(), "bucketIndexShards": 16}),
        written_by="d",
        now="t",
    )
    assert handler.lambda_handler(_batch("alice/a.txt", "bob/b.txt"), lambda_context) == {
        "batchItemFailures": []
    }
    assert _entry(dynamodb, "alice/a.txt") is not None


def test_the_indexer_refuses_another_key_pattern_so_no_file_gets_the_wrong_owner(
    indexer_env: Any, dynamodb: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = indexer_env
    pattern = r"uploads/(?P<user>[^/]+)/(?P<file>.+)"
    recorded = DeployedConfiguration(
        {**DEPLOYED.to_json(), "keyLayout": pattern, "nameIndex": False, "enrich": []}
    )
    DeployedConfigurationStore(dynamodb, TABLE).write(BUCKET, recorded, written_by="deployment", now="t")
    answer = handler.lambda_handler(_batch("uploads/alice/a.txt"), lambda_context)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m0"}]}
    monkeypatch.setenv("KEY_LAYOUT", pattern)
    handler.cold_start().executor.shutdown()
    handler.cold_start.cache_clear()
    assert handler.lambda_handler(_batch("uploads/alice/a.txt"), lambda_context) == {"batchItemFailures": []}
    entry = _entry(dynamodb, "uploads/alice/a.txt")
    assert entry is not None
    assert entry["uploadUser"]["S"] == "alice"


def test_an_indexer_of_a_table_without_a_record_writes_as_before(
    indexer_env: Any, dynamodb: Any, lambda_context: Any
) -> None:
    assert indexer_env.lambda_handler(_batch("alice/a.txt"), lambda_context) == {"batchItemFailures": []}
    assert _entry(dynamodb, "alice/a.txt") is not None


# -- the backfill and reconcile function ------------------------------------------------------------------


def test_the_backfill_function_refuses_to_start_a_run_with_other_settings(
    monkeypatch: pytest.MonkeyPatch, dynamodb: Any, lambda_context: Any
) -> None:
    from backfill import handler

    monkeypatch.setenv("TABLE_NAME", TABLE)
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("BUCKET_INDEX_SHARDS", "16")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "file-backfill")
    DeployedConfigurationStore(dynamodb, TABLE).write(BUCKET, DEPLOYED, written_by="deployment", now="t")
    handler.cold_start.cache_clear()
    try:
        with pytest.raises(
            ConfigurationMismatchError, match=r'hotUsers is \{"bot": 4\} in the deployed'
        ) as refused:
            handler.start_run({"operation": "backfill"}, lambda_context)
        assert "but {} for the backfill function" in str(refused.value)
        batch = {"BatchInput": {"bucket": BUCKET, "operation": "backfill", "runId": "r"}, "Items": []}
        with pytest.raises(ConfigurationMismatchError):
            handler.write_batch(batch, lambda_context)
        assert _entry(dynamodb, "x") is None
        assert dynamodb.scan(TableName=TABLE)["Count"] == 1  # the record alone: no run was started
        monkeypatch.setenv("HOT_USERS", '{"bot": 4}')
        monkeypatch.setenv("NAME_TABLE_NAME", "FileNameIndex")
        handler.cold_start.cache_clear()
        assert handler.start_run({"operation": "backfill"}, lambda_context)["bucket"] == BUCKET
    finally:
        handler.cold_start.cache_clear()


# -- the deployment's custom resource ---------------------------------------------------------------------


def record(
    dynamodb: Any, request: str, settings: DeployedConfiguration = DEPLOYED, *, name_table: bool = False
) -> dict[str, str]:
    """The deployed configuration's custom resource as CloudFormation sends it (`name_table`: naming the
    name table too)."""
    from configuration_guard import handler

    properties = {
        "TableName": TABLE,
        "BucketName": BUCKET,
        handler.SETTINGS_PROPERTY: json.dumps(settings.to_json()),
    }
    if name_table:
        properties[handler.NAME_TABLE_PROPERTY] = schema.NAME_TABLE_NAME
    event = {
        "RequestType": request,
        "ResourceType": handler.CONFIGURATION_RESOURCE_TYPE,
        "ResourceProperties": properties,
    }
    return handler.record_configuration(event, dynamodb=dynamodb)


def test_the_deployments_custom_resource_writes_the_record_and_leaves_it_on_delete(
    dynamodb: Any, lambda_context: Any
) -> None:
    def call(request: str, settings: DeployedConfiguration) -> None:
        assert record(dynamodb, request, settings) == {}

    store = DeployedConfigurationStore(dynamodb, TABLE)
    call("Create", DEPLOYED)
    assert store.read(BUCKET) == DEPLOYED
    raised = DeployedConfiguration({**DEPLOYED.to_json(), "bucketIndexShards": 64})
    call("Update", raised)
    assert store.read(BUCKET) == raised
    call("Delete", DEPLOYED)
    assert store.read(BUCKET) == raised


def test_the_custom_resource_refuses_settings_it_does_not_know(dynamodb: Any) -> None:
    from configuration_guard import handler
    from configuration_guard.guard import InvalidPropertiesError

    event = {
        "RequestType": "Create",
        "ResourceProperties": {"TableName": TABLE, "BucketName": BUCKET, "Settings": '{"shards": 3}'},
    }
    with pytest.raises(InvalidPropertiesError, match="not a configuration"):
        handler.record_configuration(event, dynamodb=dynamodb)


def test_the_custom_resource_marks_an_empty_name_table_complete_and_leaves_a_filled_one(
    dynamodb: Any,
) -> None:
    from file_index.store import name_index_flag

    dynamodb.create_table(**schema.create_name_table_request())

    def deploy() -> None:
        record(dynamodb, "Create", name_table=True)

    deploy()
    # A new deployment's name table: searches read term items from the first upload.
    assert name_index_flag.NameIndexFlag(dynamodb, schema.NAME_TABLE_NAME).complete(BUCKET)

    # A name table that already holds items (a deployment from before term items) is left for index-names.
    dynamodb.delete_table(TableName=schema.NAME_TABLE_NAME)
    dynamodb.create_table(**schema.create_name_table_request())
    dynamodb.put_item(
        TableName=schema.NAME_TABLE_NAME,
        Item={schema.NAME_SCOPE: {"S": f"{BUCKET}|r"}, schema.NAME_SORT: {"S": "report 0123"}},
    )
    deploy()
    assert not name_index_flag.NameIndexFlag(dynamodb, schema.NAME_TABLE_NAME).complete(BUCKET)


def test_the_custom_resource_leaves_an_empty_name_table_beside_entries_for_index_names(dynamodb: Any) -> None:
    """A name table added to a table that holds entries (an upgrade from 0.3.0, which had no name index):
    those entries have no name items, so it is not complete until `index-names` has run."""
    from file_index.store import name_index_flag

    dynamodb.create_table(**schema.create_name_table_request())
    dynamodb.put_item(
        TableName=TABLE,
        Item={
            schema.OBJECT_KEY: {"S": "USER001_old.txt"},
            schema.BUCKET_NAME: {"S": BUCKET},
            schema.UPLOAD_USER: {"S": "USER001"},
            schema.UPLOAD_DATE: {"S": "2026-11-01T00:00:00.000Z"},
            schema.SIZE: {"N": "1"},
        },
    )
    record(dynamodb, "Update", name_table=True)
    assert not name_index_flag.NameIndexFlag(dynamodb, schema.NAME_TABLE_NAME).complete(BUCKET)
    assert dynamodb.scan(TableName=schema.NAME_TABLE_NAME)["Items"] == []
