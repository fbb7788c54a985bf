"""cdk-nag's AwsSolutions pack on the app, and acknowledgements recorded next to what they excuse.

cdk-nag 3.x runs as a CDK policy-validation plugin: `app.synth()` fails with `ValidationFailed` and writes
`validation-report.json` into the cloud assembly when a finding is not acknowledged.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

PACK = "AwsSolutions"
# The AWS-managed policy CDK attaches to the Lambda roles it creates itself (this app's functions have
# their own roles; CDK's bucket-notifications handler does not).
BASIC_EXECUTION_ROLE = "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"


def add_security_checks(app: App) -> None:
    """Run the AwsSolutions rules on every stack of `app` at synth."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


# Why every Python function of the stack (CDK's own deploy-time ones run the same version) is on 3.13.
RUNTIME_REASON = (
    "Python 3.13 on purpose, not the latest runtime: the tests, the type checker and the local stack "
    "run 3.13, and the Powertools layer is published per Python version. python3.13 runs on Amazon "
    "Linux 2023, and AWS projects its deprecation in Lambda for 2029-06-30; moving to a newer Python "
    "means moving the toolchain and the layer parameter with it."
)


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Accept finding `rule` (`AwsSolutions-L1`, `AwsSolutions-IAM5[Resource::*]`) on `scope` and below."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{rule}", reason=reason))


def arn_reference(resource: IConstruct) -> str:
    """How a finding spells the ARN of `resource`: `<LogicalId.Arn>`."""
    default_child = resource.node.default_child
    if not isinstance(default_child, CfnElement):
        raise TypeError(f"{resource.node.path} has no CloudFormation resource")
    return f"<{Stack.of(resource).get_logical_id(default_child)}.Arn>"


def acknowledge_lambda_basics(scope: IConstruct) -> None:
    """The findings every traced Python function of this app raises by design."""
    acknowledge(
        scope,
        "AwsSolutions-IAM5[Resource::*]",
        "Only xray:PutTraceSegments and xray:PutTelemetryRecords use Resource '*': X-Ray has no "
        "resource-level permissions for them (added by Tracing.ACTIVE).",
    )
    acknowledge(scope, "AwsSolutions-L1", RUNTIME_REASON)
