"""The settings both Lambda functions share: runtime, architecture, code asset, Powertools layer, logs.

The code asset is `functions/` as it is in the repository: handlers import `file_index`, `indexer` and
`search` from the asset root, the same import path the tests use. Powertools (with pydantic and the X-Ray
SDK) comes from AWS's public layer and boto3 from the runtime, so synth needs no Docker and no bundling.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.config import LogLevel, RemovalChoice
from infra.nag import acknowledge_lambda_basics

FUNCTIONS_DIR = Path(__file__).resolve().parent.parent / "functions"
# The Python the project is developed, type-checked and tested with (pyproject.toml: py311), so local runs
# and Lambda execute the same interpreter. python3.11 runs on Amazon Linux 2, whose end of life is
# 2026-06-30, and AWS deprecates the runtime on 2027-06-30: before then the runtime moves to a newer
# Python together with the toolchain (pyproject.toml, the venv, CI), never alone.
RUNTIME = lambda_.Runtime.PYTHON_3_11
ARCHITECTURE = lambda_.Architecture.ARM_64
# AWS publishes the ARN of each Powertools release's layer as a public SSM parameter; resolving it at
# deploy time pins the layer to the release the tests ran with, with no account lookup at synth. The
# path names the Python version, so it is built from RUNTIME and moves with it.
POWERTOOLS_LAYER_PARAMETER = f"/aws/service/powertools/python/arm64/{RUNTIME.name}/{{version}}"
# Function logs are operational, not audit records: a month covers incident follow-up.
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# Nothing in the asset that Lambda does not import.
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/tests", "**/.pytest_cache", "**/.mypy_cache"]


def powertools_layer(scope: Construct, *, version: str) -> lambda_.ILayerVersion:
    """The public layer of Powertools `version` in the stack's region; create it once per stack."""
    arn = ssm.StringParameter.value_for_string_parameter(
        scope, POWERTOOLS_LAYER_PARAMETER.format(version=version)
    )
    return lambda_.LayerVersion.from_layer_version_arn(scope, "PowertoolsLayer", arn)


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
        layer: lambda_.ILayerVersion,
        log_level: LogLevel,
        removal: RemovalChoice,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=LOG_RETENTION,
            removal_policy=removal.policy,
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
            layers=[layer],
            timeout=timeout,
            memory_size=memory_size,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment={
                **environment,
                "POWERTOOLS_SERVICE_NAME": service_name,
                "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
                "POWERTOOLS_LOG_LEVEL": log_level.value,
            },
        )
        acknowledge_lambda_basics(self)
