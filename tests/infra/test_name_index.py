"""The name index table in the synthesized template: its keys are the schema's, every function that keeps
or reads it has exactly its calls, and `nameIndex: false` gives the stack without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from file_index import schema
from tests.infra.conftest import Synth, synthesize


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


def test_the_layout_guard_runs_before_the_name_table(default_synth: Synth) -> None:
    (guard_id,) = default_synth.resources("Custom::IndexLayoutGuard")
    assert guard_id in name_table(default_synth).get("DependsOn", [])


@pytest.fixture(scope="module")
def without_names(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(Path(tmp_path_factory.mktemp("cdk-no-names")), {"nameIndex": False})


def test_name_index_off_gives_the_stack_without_it(without_names: Synth, default_synth: Synth) -> None:
    tables = without_names.resources("AWS::DynamoDB::Table")
    assert [table["Properties"]["TableName"] for table in tables.values()] == [schema.TABLE_NAME]
    for function in without_names.resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        assert "NAME_TABLE_NAME" not in variables
    assert without_names.synth_error is None
    with_names = default_synth.resources("AWS::DynamoDB::Table")
    assert len(with_names) == 2
