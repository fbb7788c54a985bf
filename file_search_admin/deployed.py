"""The deployed stack: its state machine (`--deployed` runs the same backfill or reconcile at scale), and,
for a table that records no deployed configuration (deployed before the record existed), the settings its
indexer runs with, which every command that writes must match (`deployed_settings`)."""

from __future__ import annotations

import json

from botocore.exceptions import ClientError

from file_index.rules.config import ConfigError, key_pattern
from file_index.rules.placement import PlacementError, ShardPlacement
from file_index.store.deployment import DeployedConfiguration
from file_search_admin.aws import Client
from file_search_admin.errors import ACCESS_DENIED, DeploymentError, denied, error_code

STATE_MACHINE_OUTPUT = "BackfillStateMachineArn"
# The indexer's function name: its environment is the placement the deployment writes and reads with.
INDEXER_OUTPUT = "IndexerFunctionName"
# The CDK app's stack (app.py), the default of --stack-name.
DEFAULT_STACK_NAME = "S3FileSearch"


def deployed_settings(
    cloudformation: Client, lambda_client: Client, stack_name: str
) -> tuple[DeployedConfiguration | None, str]:
    """The shard placement and key pattern stack `stack_name`'s indexer runs with, and where they came from.

    (None, why) when it cannot be known: no such stack (the local stack has none), a stack deployed
    before it named its indexer, or no right to read it. A function environment that is not a placement
    (edited by hand) is a DeploymentError.
    """
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        if error_code(error) == "ValidationError":
            return None, f"there is no stack {stack_name!r} here (--stack-name names the deployment)"
        if error_code(error) in ACCESS_DENIED:
            return None, f"no right to read stack {stack_name!r} ({error_code(error)})"
        raise
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    function = outputs.get(INDEXER_OUTPUT)
    if function is None:
        return None, f"stack {stack_name!r} has no output {INDEXER_OUTPUT} (deployed by an older release)"
    try:
        configuration = lambda_client.get_function_configuration(FunctionName=function)
    except ClientError as error:
        if error_code(error) in ACCESS_DENIED:
            return None, f"no right to read the indexer {function!r} ({error_code(error)})"
        raise
    environment = configuration.get("Environment", {}).get("Variables", {})
    try:
        settings = DeployedConfiguration.of(
            placement=ShardPlacement.from_env(environment), key_pattern=key_pattern(environment).source
        )
        return settings, f"stack {stack_name!r} (its indexer's environment)"
    except (PlacementError, ConfigError) as error:
        raise DeploymentError(
            f"the indexer {function!r} of stack {stack_name!r} has no usable placement: {error}"
        ) from None


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
