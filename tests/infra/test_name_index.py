"""The name index table in the synthesized template: its keys are the schema's, every function that keeps
or reads it has exactly its calls, and `nameIndex: false` gives the stack without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from file_index.rules import schema
from infra.config import ConfigError, StackConfig
from tests.infra.conftest import Synth, synthesize
from tests.infra.test_stack import INDEXER_HANDLER, SEARCH_HANDLER, actions_of, function, role_statements

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("infra")


def name_table(synth: Synth) -> dict[str, Any]:
    (table,) = [
        resource
        for resource in synth.resources("AWS::DynamoDB::Table").values()
        if resource["Properties"]["TableName"] == schema.NAME_TABLE_NAME
    ]
    return table


def test_the_name_table_is_the_schema_one(default_synth: Synth) -> None:
    """The deployed name index equals what the local stack and the tests build with boto3."""
    request = schema.create_name_table_request()
    props = name_table(default_synth)["Properties"]
    assert isinstance(props, dict)

    assert props["KeySchema"] == request["KeySchema"]
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
        request["AttributeDefinitions"], key=lambda a: a["AttributeName"]
    )
    assert props["GlobalSecondaryIndexes"] == request["GlobalSecondaryIndexes"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"] == {"SSEEnabled": True}
    assert props["DeletionProtectionEnabled"] is True


def test_the_configuration_guard_runs_before_the_name_table(default_synth: Synth) -> None:
    (guard_id,) = default_synth.resources("Custom::IndexLayoutGuard")
    assert guard_id in name_table(default_synth).get("DependsOn", [])


@pytest.fixture(scope="module")
def without_names(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(Path(tmp_path_factory.mktemp("cdk-no-names")), {"nameIndex": False})


def test_name_index_off_gives_the_stack_without_it(without_names: Synth, default_synth: Synth) -> None:
    tables = without_names.resources("AWS::DynamoDB::Table")
    assert [table["Properties"]["TableName"] for table in tables.values()] == [schema.TABLE_NAME]
    for resource in without_names.resources("AWS::Lambda::Function").values():
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        assert "NAME_TABLE_NAME" not in variables
    assert without_names.synth_error is None
    with_names = default_synth.resources("AWS::DynamoDB::Table")
    assert len(with_names) == 2


@pytest.fixture(scope="module")
def enriched(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        Path(tmp_path_factory.mktemp("cdk-enrich")), {"enrich": ["contentType", "metadata", "tags"]}
    )


def test_enrich_reaches_the_functions_and_subscribes_to_tag_changes(enriched: Synth) -> None:
    for handler in (INDEXER_HANDLER, SEARCH_HANDLER):
        _, props = function(enriched, handler)
        assert props["Environment"]["Variables"]["ENRICH"] == "contentType,metadata,tags"
    (notifications,) = enriched.resources("Custom::S3BucketNotifications").values()
    events = {
        event
        for config in notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
        for event in config["Events"]
    }
    assert {"s3:ObjectTagging:Put", "s3:ObjectTagging:Delete"} <= events
    # The extra reads: a version's HEAD and its tags, on the bucket's objects only.
    statements = role_statements(enriched, INDEXER_HANDLER)
    assert actions_of(statements, "s3") == {
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:GetObjectTagging",
        "s3:GetObjectVersionTagging",
        "s3:ListBucket",
    }
    assert enriched.synth_error is None


def test_without_enrich_no_function_reads_more_and_no_tag_change_is_sent(default_synth: Synth) -> None:
    for handler in (INDEXER_HANDLER, SEARCH_HANDLER):
        _, props = function(default_synth, handler)
        assert "ENRICH" not in props["Environment"]["Variables"]
    (notifications,) = default_synth.resources("Custom::S3BucketNotifications").values()
    events = {
        event
        for config in notifications["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
        for event in config["Events"]
    }
    assert not any(event.startswith("s3:ObjectTagging") for event in events)
    assert "s3:GetObjectTagging" not in actions_of(role_statements(default_synth, INDEXER_HANDLER), "s3")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tags", "enrich must be a list of any of contentType, metadata, tags"),
        (["contentType", "size"], "enrich: 'size' is not one of contentType, metadata, tags"),
    ],
)
def test_a_bad_enrich_is_refused_naming_it(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StackConfig.from_mapping({"enrich": value})
