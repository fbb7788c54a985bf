"""`--deployed`: the state machine named by the stack's output is started with the operation."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.integration.admin.conftest import Account

DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


@pytest.fixture
def state_machine(account: Account) -> str:
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    arn = stepfunctions.create_state_machine(
        name="backfill", definition=DEFINITION, roleArn="arn:aws:iam::123456789012:role/backfill"
    )["stateMachineArn"]
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"BackfillStateMachineArn": {"Value": arn}, "ApiUrl": {"Value": "https://example"}},
    }
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="S3FileSearch", TemplateBody=json.dumps(template)
    )
    return str(arn)


@pytest.mark.parametrize("command", ["backfill", "reconcile"])
def test_deployed_starts_the_stacks_state_machine(account: Account, state_machine: str, command: str) -> None:
    result = account.admin(command, "--deployed", "--stack-name", "S3FileSearch", "--json")
    assert result.status == 0, result.stderr
    summary = result.json()
    assert summary["stateMachineArn"] == state_machine
    stepfunctions = boto3.client("stepfunctions", region_name="us-east-1")
    execution = stepfunctions.describe_execution(executionArn=summary["executionArn"])
    assert json.loads(execution["input"]) == {"operation": command}


def test_deployed_takes_the_arn_directly_and_prints_the_execution(
    account: Account, state_machine: str
) -> None:
    result = account.admin("backfill", "--deployed", "--state-machine-arn", state_machine)
    assert result.status == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first == f"started backfill on {state_machine}"
    assert second.startswith("execution arn:aws:states:")


def test_a_stack_without_the_output_is_one_line(account: Account) -> None:
    template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="Other", TemplateBody=json.dumps(template)
    )
    result = account.admin("reconcile", "--deployed", "--stack-name", "Other")
    assert result.status == 1
    assert result.stderr == "file_search_admin: error: stack 'Other' has no output BackfillStateMachineArn\n"
