"""The shard placement in the template: the table's indexes, every function's environment, the guard that
runs first, and the indexer's sizing, for cdk.json's defaults and for a large deployment."""

from __future__ import annotations

import json
from typing import Any

import pytest

from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from infra import configuration_guard
from tests.infra.conftest import PLACEMENT_OVERRIDES, Synth
from tests.infra.test_stack import (
    ALL_HANDLERS,
    BACKFILL_HANDLERS,
    GUARD_HANDLER,
    INDEXER_HANDLER,
    SEARCH_HANDLER,
    function,
    role_statements,
)

pytestmark = pytest.mark.xdist_group("infra")

PLACEMENT_HANDLERS = [INDEXER_HANDLER, SEARCH_HANDLER, *BACKFILL_HANDLERS]
LARGE_PLACEMENT = ShardPlacement(bucket_shards=32, hot_users={"ingest-bot": 8}, multi_attribute_index=True)


def table(synth: Synth) -> tuple[str, dict[str, Any]]:
    """The entries' table (the name index is the other table)."""
    ((logical_id, resource),) = [
        (logical_id, resource)
        for logical_id, resource in synth.resources("AWS::DynamoDB::Table").items()
        if resource["Properties"]["TableName"] != schema.NAME_TABLE_NAME
    ]
    return logical_id, resource


def guard(synth: Synth) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = synth.resources(configuration_guard.RESOURCE_TYPE).items()
    return logical_id, resource


def index_names(synth: Synth) -> list[str]:
    return [index["IndexName"] for index in table(synth)[1]["Properties"]["GlobalSecondaryIndexes"]]


def test_by_default_the_table_has_the_two_design_indexes_the_user_size_and_the_bucket_time_index(
    default_synth: Synth, dev_synth: Synth
) -> None:
    assert index_names(default_synth) == [
        "uploadUser-uploadDate-index",
        "bucketName-size-index",
        "uploadUser-size-index",
        "bucketName-uploadDate-index",
    ]
    assert (
        function(default_synth, SEARCH_HANDLER)[1]["Environment"]["Variables"]["BUCKET_TIME_INDEX"] == "true"
    )
    # bucketTimeIndex: false keeps 0.3.0's table and the user's size index, and the search knows it.
    assert index_names(dev_synth) == [
        "uploadUser-uploadDate-index",
        "bucketName-size-index",
        "uploadUser-size-index",
    ]
    assert function(dev_synth, SEARCH_HANDLER)[1]["Environment"]["Variables"]["BUCKET_TIME_INDEX"] == "false"


def test_the_multi_attribute_index_adds_the_z_order_index(placement_synth: Synth) -> None:
    """The table equals what the local stack and the tests build with `create_table_request(...=True)`."""
    request = schema.create_table_request(multi_attribute_index=True)
    props = table(placement_synth)[1]["Properties"]

    assert index_names(placement_synth) == [index["IndexName"] for index in request["GlobalSecondaryIndexes"]]
    assert props["GlobalSecondaryIndexes"] == request["GlobalSecondaryIndexes"]
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
        request["AttributeDefinitions"], key=lambda a: a["AttributeName"]
    )
    assert schema.Z_ORDER_INDEX.name in index_names(placement_synth)


@pytest.mark.parametrize("handler", PLACEMENT_HANDLERS)
def test_every_function_that_reads_or_writes_entries_gets_the_placement(
    default_synth: Synth, placement_synth: Synth, handler: str
) -> None:
    for synth, placement in (
        (default_synth, ShardPlacement(bucket_shards=16)),
        (placement_synth, LARGE_PLACEMENT),
    ):
        variables = function(synth, handler)[1]["Environment"]["Variables"]

        assert {name: variables[name] for name in placement.to_env()} == placement.to_env()
        assert ShardPlacement.from_env(variables) == placement


def test_the_guard_holds_the_placement_the_table_name_and_the_bucket(
    default_synth: Synth, placement_synth: Synth
) -> None:
    bucket_id = default_synth.logical_id(default_synth.stack.storage.bucket)
    guard_function_id, _ = function(default_synth, GUARD_HANDLER)

    assert guard(default_synth)[1]["Properties"] == {
        "ServiceToken": {"Fn::GetAtt": [guard_function_id, "Arn"]},
        # The name from the context, a plain string: the guard must not wait for the table.
        "TableName": schema.TABLE_NAME,
        "BucketName": {"Ref": bucket_id},
        "BucketIndexShards": "16",
        "HotUsers": "{}",
        "MultiAttributeIndex": "false",
    }
    large = guard(placement_synth)[1]["Properties"]
    assert (large["BucketIndexShards"], large["HotUsers"], large["MultiAttributeIndex"]) == (
        "32",
        json.dumps(PLACEMENT_OVERRIDES["hotUsers"], separators=(",", ":")),
        "true",
    )


def test_an_existing_buckets_guard_names_it(imported_synth: Synth) -> None:
    assert guard(imported_synth)[1]["Properties"]["BucketName"] == "legacy-uploads"


def test_the_guard_runs_before_the_table_the_functions_and_the_event_source(any_synth: Synth) -> None:
    """A refused placement fails the deployment before anything that uses the placement has changed."""
    guard_id, resource = guard(any_synth)
    dependents = [
        table(any_synth)[0],
        *(function(any_synth, handler)[0] for handler in PLACEMENT_HANDLERS),
        *any_synth.resources("AWS::Lambda::EventSourceMapping"),
    ]

    for logical_id in dependents:
        assert guard_id in any_synth.template_json["Resources"][logical_id].get("DependsOn", []), logical_id
    # ...and the guard itself waits for nothing of the table (no reference, no dependency).
    table_id = table(any_synth)[0]
    assert table_id not in json.dumps(resource)
    guard_function_id, _ = function(any_synth, GUARD_HANDLER)
    for statement in role_statements(any_synth, GUARD_HANDLER):
        assert table_id not in json.dumps(statement)
    assert guard_function_id not in json.dumps(table(any_synth)[1])


def test_the_guard_waits_for_its_own_permissions(default_synth: Synth) -> None:
    _, resource = guard(default_synth)
    policies = [
        logical_id
        for logical_id, policy in default_synth.resources("AWS::IAM::Policy").items()
        if "IndexLayoutGuard" in logical_id
    ]

    assert policies
    assert set(policies) <= set(resource["DependsOn"])


def test_the_guard_may_only_read_and_record_in_the_table_and_read_its_stack(default_synth: Synth) -> None:
    statements = [
        s for s in role_statements(default_synth, GUARD_HANDLER) if "xray:PutTraceSegments" not in s["Action"]
    ]
    by_action = {
        json.dumps(s["Action"]): s["Resource"] for s in statements if not str(s["Action"]).count("logs:")
    }

    def table_arn(name: str) -> dict[str, Any]:
        return {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":dynamodb:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    f":table/{name}",
                ],
            ]
        }

    assert by_action == {
        json.dumps(list(configuration_guard.GUARD_TABLE_ACTIONS)): table_arn(schema.TABLE_NAME),
        # Whether the name table is empty (a Scan of one item), and if so its "term items complete" mark.
        json.dumps(["dynamodb:PutItem", "dynamodb:Scan"]): table_arn(schema.NAME_TABLE_NAME),
        json.dumps("cloudformation:DescribeStacks"): {"Ref": "AWS::StackId"},
    }


def test_the_guard_is_a_python_function_of_the_asset(default_synth: Synth) -> None:
    _, props = function(default_synth, GUARD_HANDLER)

    assert props["Runtime"] == "python3.13"
    assert props["Timeout"] == configuration_guard.GUARD_TIMEOUT.to_seconds()
    assert GUARD_HANDLER in ALL_HANDLERS


def test_the_indexer_is_sized_from_the_context(default_synth: Synth, placement_synth: Synth) -> None:
    for synth, (memory, batch, window, concurrency) in (
        (default_synth, (1769, 100, 1, 10)),
        (placement_synth, (3008, 500, 5, 50)),
    ):
        _, indexer = function(synth, INDEXER_HANDLER)
        (mapping,) = synth.resources("AWS::Lambda::EventSourceMapping").values()
        (queue,) = [
            q["Properties"]
            for q in synth.resources("AWS::SQS::Queue").values()
            if "RedrivePolicy" in q["Properties"]
        ]

        assert indexer["MemorySize"] == memory
        assert mapping["Properties"]["BatchSize"] == batch
        assert mapping["Properties"]["MaximumBatchingWindowInSeconds"] == window
        assert mapping["Properties"]["ScalingConfig"] == {"MaximumConcurrency": concurrency}
        # Received messages count down their visibility through the window, then six timeouts.
        assert queue["VisibilityTimeout"] == 6 * indexer["Timeout"] + window


def test_writers_are_deployed_after_the_search_function(any_synth: Synth) -> None:
    """A raised shard count or a new hot user reaches the reader before any writer uses the new partitions."""
    search_id, _ = function(any_synth, "search.handler.lambda_handler")
    writers = [handler for handler in PLACEMENT_HANDLERS if handler != "search.handler.lambda_handler"]
    assert writers
    for handler in writers:
        writer_id, _ = function(any_synth, handler)
        assert search_id in any_synth.template_json["Resources"][writer_id].get("DependsOn", []), handler


def configuration_record(synth: Synth) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = synth.resources("Custom::DeployedConfiguration").items()
    return logical_id, resource


def test_the_deployment_records_its_configuration_in_the_table(
    default_synth: Synth, placement_synth: Synth
) -> None:
    guard_function_id, _ = function(default_synth, GUARD_HANDLER)
    properties = configuration_record(default_synth)[1]["Properties"]
    assert properties["ServiceToken"] == {"Fn::GetAtt": [guard_function_id, "Arn"]}
    assert properties["TableName"] == schema.TABLE_NAME
    assert json.loads(properties["Settings"]) == {
        "bucketIndexShards": 16,
        "hotUsers": {},
        "multiAttributeIndex": False,
        "keyLayout": "default",
        "bucketTimeIndex": True,
        "nameIndex": True,
        "nameTableName": schema.NAME_TABLE_NAME,
        "enrich": [],
    }
    large = json.loads(configuration_record(placement_synth)[1]["Properties"]["Settings"])
    assert (large["bucketIndexShards"], large["hotUsers"], large["multiAttributeIndex"]) == (
        32,
        {"ingest-bot": 8},
        True,
    )


def test_the_record_is_written_after_the_table_and_before_every_writer(any_synth: Synth) -> None:
    record_id, resource = configuration_record(any_synth)
    assert table(any_synth)[0] in resource["DependsOn"]
    writers = [function(any_synth, handler)[0] for handler in (INDEXER_HANDLER, *BACKFILL_HANDLERS)]
    for logical_id in [*writers, *any_synth.resources("AWS::Lambda::EventSourceMapping")]:
        assert record_id in any_synth.template_json["Resources"][logical_id].get("DependsOn", []), logical_id
