"""`--deployed`: start the stack's state machine, which runs the same backfill or reconcile at scale."""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from file_search_admin.aws import Client
from file_search_admin.errors import ACCESS_DENIED, DeploymentError, denied, error_code

STATE_MACHINE_OUTPUT = "BackfillStateMachineArn"


def state_machine_arn(cloudformation: Client, stack_name: str) -> str:
    """The ARN the stack publishes as its `BackfillStateMachineArn` output."""
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        if error_code(error) in ACCESS_DENIED:
            raise denied(error, f"stack {stack_name!r}") from None
        if error_code(error) == "ValidationError":
            raise DeploymentError(f"stack {stack_name!r} does not exist") from None
        raise
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    if STATE_MACHINE_OUTPUT not in outputs:
        raise DeploymentError(f"stack {stack_name!r} has no output {STATE_MACHINE_OUTPUT}")
    return str(outputs[STATE_MACHINE_OUTPUT])


def start_execution(stepfunctions: Client, arn: str, operation: str) -> str:
    """Start the state machine with `{"operation": ...}`; returns the execution's ARN."""
    try:
        response = stepfunctions.start_execution(
            stateMachineArn=arn, input=json.dumps({"operation": operation})
        )
    except ClientError as error:
        if error_code(error) in ACCESS_DENIED:
            raise denied(error, f"state machine {arn!r}") from None
        if error_code(error) in ("StateMachineDoesNotExist", "InvalidArn"):
            raise DeploymentError(f"state machine {arn!r} does not exist") from None
        raise
    return str(response["executionArn"])
