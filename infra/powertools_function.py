"""The settings both Lambda functions share: runtime, architecture, code asset, Powertools layer, logs.

The code asset is `functions/` as it is in the repository: handlers import `file_index`, `indexer` and
`search` from the asset root, the same import path the tests use. Powertools (with pydantic and the X-Ray
SDK) comes from AWS's public layer and boto3 from the runtime, so synth needs no Docker and no bundling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnParameter, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import LogLevel, RemovalChoice
from infra.nag import acknowledge_lambda_basics

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
# The Python the project is developed, type-checked and tested with (pyproject.toml), so local runs and
# Lambda execute the same interpreter. python3.13 runs on Amazon Linux 2023; it moves to a newer Python
# together with the toolchain (pyproject.toml, the venv, CI), never alone.
RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
# AWS publishes the ARN of each Powertools release's layer as a public SSM parameter; resolving it at
# deploy time pins the layer to the release the tests ran with, with no account lookup at synth. The
# path names the Python version and the architecture, so it is built from RUNTIME and ARCHITECTURE.
POWERTOOLS_LAYER_PARAMETER = "/aws/service/powertools/python/{architecture}/{python}/{version}"
# Function logs are operational, not audit records: a month covers incident follow-up.
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# Nothing in the asset that Lambda does not import.
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/tests", "**/.pytest_cache", "**/.mypy_cache"]


def powertools_layer_parameter_name(version: str) -> str:
    """The public SSM parameter that holds the ARN of Powertools `version`'s layer for RUNTIME."""
    return POWERTOOLS_LAYER_PARAMETER.format(
        architecture=ARCHITECTURE.name, python=RUNTIME.name, version=version
    )


def powertools_layer_parameter_id(version: str) -> str:
    """The template parameter's logical id: readable, and new for every release and runtime.

    It must change with the release: on a stack update the CDK CLI passes `UsePreviousValue` for every
    parameter the deployed template already has, and for an SSM-typed parameter the previous value is the
    previous *key*, so a fixed id would keep the old release's layer after the pin moved.
    """
    python = RUNTIME.name.removeprefix("python").replace(".", "")
    return f"PowertoolsLayerPython{python}Release{version.replace('.', 'x')}"


def powertools_layer(scope: Stack, *, version: str) -> lambda_.ILayerVersion:
    """The public layer of Powertools `version` in the stack's region; create it once per stack.

    A region may lack the parameter of a release (AWS publishes them by a separate job, and has missed
    some: powertools-lambda-python#7689). The ARN is therefore read through a template parameter of type
    `AWS::SSM::Parameter::Value<String>` whose default is the parameter's name: CloudFormation resolves
    it when the change set is created, before any resource changes, and refuses a missing one with a
    validation error that names it. An SSM dynamic reference
    inside a resource fails only while that resource is created, half-way through the deployment. The
    only allowed value is the pinned parameter, so `--parameters` cannot switch the release either.
    """
    name = powertools_layer_parameter_name(version)
    parameter = CfnParameter(
        scope,
        powertools_layer_parameter_id(version),
        type="AWS::SSM::Parameter::Value<String>",
        default=name,
        allowed_values=[name],
        constraint_description=(
            "the Powertools release is the one pinned in requirements.txt; change the pin, not this parameter"
        ),
        description=(
            f"AWS's public SSM parameter with the ARN of the Powertools {version} layer for {RUNTIME.name} "
            f"on {ARCHITECTURE.name}. If the deployment fails because it does not exist, this region has no "
            "such layer yet: deploy another region, or pin a release that has one in requirements.txt."
        ),
    )
    return lambda_.LayerVersion.from_layer_version_arn(scope, "PowertoolsLayer", parameter.value_as_string)


@dataclass(frozen=True)
class FunctionBasics:
    """What every function of the stack is built with: the Powertools layer, its log level, and what a
    `cdk destroy` does with its logs (and the construct's other stateful parts)."""

    layer: lambda_.ILayerVersion
    log_level: LogLevel
    removal: RemovalChoice


class PowertoolsFunction(Construct):
    """A Python function from `functions/` with Powertools, X-Ray tracing and a retained-or-not log group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: str,
        description: str,
        service_name: str,
        environment: dict[str, str],
        timeout: Duration,
        memory_size: int,
        basics: FunctionBasics,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=LOG_RETENTION,
            removal_policy=basics.removal.policy,
        )
        # An own role instead of CDK's default one, which carries AWSLambdaBasicExecutionRole: that policy
        # allows creating and writing every log group of the account. This role may write log events to
        # the function's own log group only (which exists before the function, so no CreateLogGroup);
        # X-Ray and the callers' grants are added to it as statements of its default policy.
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the {service_name} function",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            role=self.role,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=lambda_.Code.from_asset(str(FUNCTIONS_DIR), exclude=ASSET_EXCLUDES),
            layers=[basics.layer],
            timeout=timeout,
            memory_size=memory_size,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment={
                **environment,
                "POWERTOOLS_SERVICE_NAME": service_name,
                "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
                "POWERTOOLS_LOG_LEVEL": basics.log_level.value,
            },
        )
        acknowledge_lambda_basics(self)
