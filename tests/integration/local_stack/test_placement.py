"""The local stack follows the CDK app's configuration: cdk.json's context, or overrides of it, decide the
table's indexes and the shard placement the handlers get, exactly as they decide the deployed stack's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from infra.config import StackConfig
from local_stack.stack import InvalidConfigurationError, LocalFileSearch

PLACEMENT_VARIABLES = ("BUCKET_INDEX_SHARDS", "HOT_USERS", "MULTI_ATTRIBUTE_INDEX")


def index_names(stack: LocalFileSearch) -> list[str]:
    table = stack.client("dynamodb").describe_table(TableName=stack.table_name)["Table"]
    return [index["IndexName"] for index in table["GlobalSecondaryIndexes"]]


def handler_placement() -> dict[str, str]:
    return {name: os.environ[name] for name in PLACEMENT_VARIABLES}


def test_by_default_the_stack_is_cdk_jsons():
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack:
        assert stack.config == StackConfig.from_cdk_json()
        assert index_names(stack) == [index.name for index in schema.global_indexes(False)]
        assert handler_placement() == stack.config.placement.to_env()
        assert stack.describe()["indexLayout"] == {
            "bucketIndexShards": 16,
            "hotUsers": {},
            "multiAttributeIndex": False,
        }
    # The handlers' environment is the stack's only while it runs.
    assert not set(PLACEMENT_VARIABLES) & set(os.environ)


def test_an_override_switches_the_z_order_index_and_the_placement_on():
    context = {"multiAttributeIndex": True, "bucketIndexShards": 4, "hotUsers": {"ingest-bot": 8}}

    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context=context) as stack:
        assert index_names(stack) == [index.name for index in schema.global_indexes(True)]
        assert ShardPlacement.from_env(handler_placement()) == ShardPlacement(
            bucket_shards=4, hot_users={"ingest-bot": 8}, multi_attribute_index=True
        )
        assert stack.describe()["indexLayout"] == {
            "bucketIndexShards": 4,
            "hotUsers": {"ingest-bot": 8},
            "multiAttributeIndex": True,
        }


def write_cdk_json(directory: Path, context: dict[str, Any]) -> Path:
    path = directory / "cdk.json"
    path.write_text(json.dumps({"app": "python3 app.py", "context": context}))
    return path


def test_a_key_switched_in_cdk_json_is_switched_for_the_stack(tmp_path: Path):
    cdk_json = write_cdk_json(
        tmp_path,
        {"multiAttributeIndex": True, "bucketIndexShards": 2, "keyLayout": r"^(?P<user>[^-]+)-(?P<file>.+)$"},
    )

    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", cdk_json=cdk_json) as stack:
        assert schema.Z_ORDER_INDEX.name in index_names(stack)
        assert os.environ["BUCKET_INDEX_SHARDS"] == "2"
        assert os.environ["KEY_LAYOUT"] == r"^(?P<user>[^-]+)-(?P<file>.+)$"


def test_the_handlers_write_entries_where_the_placement_puts_them():
    placement = ShardPlacement(bucket_shards=4, hot_users={"ingest-bot": 4}, multi_attribute_index=True)
    context = {"bucketIndexShards": 4, "hotUsers": {"ingest-bot": 4}, "multiAttributeIndex": True}
    keys = [f"ingest-bot/batch-{n}.csv" for n in range(8)]

    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context=context) as stack:
        stack.wait_until_indexed()
        s3 = stack.client("s3")
        for key in keys:
            s3.put_object(Bucket=stack.bucket, Key=key, Body=b"rows")
        stack.wait_until_indexed()
        dynamodb = stack.client("dynamodb")
        items = [
            dynamodb.get_item(TableName=stack.table_name, Key={"objectKey": {"S": key}})["Item"]
            for key in keys
        ]

    for key, item in zip(keys, items, strict=True):
        assert item["bucketName"]["S"] == placement.bucket_partition(stack.bucket, key)
        assert item["uploadUser"]["S"] == placement.user_partition("ingest-bot", key)
        assert "zAddress" in item
    # Eight keys over four shards land in more than one of them.
    assert len({item["bucketName"]["S"] for item in items}) > 1


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"bucketIndexShards": 0},
            "context bucketIndexShards=0 is invalid; allowed: an integer from 1 to 256",
        ),
        (
            {"multiAttributeIndex": "maybe"},
            "context multiAttributeIndex='maybe' is invalid; allowed: true, false",
        ),
    ],
)
def test_a_value_the_cdk_app_refuses_stops_the_stack_before_it_starts(context: dict[str, Any], message: str):
    with pytest.raises(InvalidConfigurationError) as raised:
        LocalFileSearch(aws_port=0, api_port=0, context=context)

    assert str(raised.value) == message


def test_serve_names_the_placement_it_runs(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0")
    ready = serve.wait_ready()

    placement = StackConfig.from_cdk_json().placement
    assert ready["indexLayout"] == {
        "bucketIndexShards": placement.bucket_shards,
        "hotUsers": dict(placement.hot_users),
        "multiAttributeIndex": placement.multi_attribute_index,
    }
    serve.stop()
    assert f"shard placement: bucketIndexShards={placement.bucket_shards}" in serve.stderr()
