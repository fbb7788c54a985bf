"""cdk-nag's AwsSolutions pack and cfn-lint on the synthesized templates: nothing unexplained, no errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cfnlint.api import lint  # type: ignore[import-untyped]

from tests.infra.conftest import Synth

pytestmark = pytest.mark.xdist_group("infra")

# Rules acknowledged by design; a new one must be reviewed and added here on purpose.
EXPECTED_ACKNOWLEDGED_RULES = {
    "AwsSolutions-APIG3",
    "AwsSolutions-COG4",
    "AwsSolutions-IAM4",
    "AwsSolutions-IAM5",
    "AwsSolutions-L1",
    "AwsSolutions-S1",
    "AwsSolutions-SMG4",
}
# CDK's own singleton functions: the bucket-notifications handler, and the AwsCustomResource handler that
# starts the first backfill of an existing bucket.
CDK_HANDLERS = (
    "BucketNotificationsHandler",
    "AWS679f53fac002430cb0da5b7982bd2287",
    "Custom::CDKBucketDeployment",  # copies the page at deploy time
)


def nag_report(synth: Synth) -> dict[str, Any]:
    (report,) = [r for r in synth.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    return report


def test_cdk_nag_finds_nothing_unacknowledged(any_synth: Synth) -> None:
    report = nag_report(any_synth)

    findings = [
        (v["ruleName"], [c["constructPath"] for c in v["violatingConstructs"]]) for v in report["violations"]
    ]
    assert findings == []
    assert report["conclusion"] == "success"
    assert any_synth.synth_error is None


def test_cdk_nag_ran_and_every_acknowledgement_has_a_reason(any_synth: Synth) -> None:
    suppressed = nag_report(any_synth)["suppressedViolations"]
    # The pack really ran: the findings accepted by design were raised and matched an acknowledgement.
    assert {v["ruleName"].split("[")[0] for v in suppressed} >= EXPECTED_ACKNOWLEDGED_RULES
    for violation in suppressed:
        reason = violation["reason"]
        assert len(reason) >= 60, f"{violation['ruleName']} is acknowledged without a real reason: {reason!r}"


def test_dev_stack_acknowledges_the_open_api_explicitly(dev_synth: Synth) -> None:
    suppressed = {v["ruleName"] for v in nag_report(dev_synth)["suppressedViolations"]}

    assert "AwsSolutions-APIG4" in suppressed


def test_cfn_lint_finds_no_errors(any_synth: Synth) -> None:
    matches = lint(json.dumps(any_synth.template_json), regions=["us-east-1", "eu-west-1"])

    errors = [
        f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})" for m in matches if m.rule.id[0] == "E"
    ]
    assert errors == []
    # CDK's own templates raise W3005 (redundant DependsOn) only; anything else deserves a look.
    assert {m.rule.id for m in matches} <= {"W3005"}


def reasons(synth: Synth, rule: str) -> set[str]:
    """The reasons given for every acknowledged finding of `rule` (with or without a `[...]` detail)."""
    return {
        v["reason"]
        for v in nag_report(synth)["suppressedViolations"]
        if v["ruleName"] == rule or v["ruleName"].startswith(f"{rule}[")
    }


@pytest.mark.parametrize("rule", ["AwsSolutions-COG4", "AwsSolutions-APIG3"])
def test_api_acknowledgements_describe_the_chosen_authorization(
    default_synth: Synth, dev_synth: Synth, rule: str
) -> None:
    (default_reason,) = reasons(default_synth, rule)
    (dev_reason,) = reasons(dev_synth, rule)

    assert "IAM" in default_reason
    assert "apiAuth=none" not in default_reason
    # An open dev API is acknowledged as what it is, never with the IAM argument of the default.
    assert "apiAuth=none" in dev_reason
    assert "open API" in dev_reason
    assert "every method uses IAM" not in dev_reason
    assert "unsigned requests never reach" not in dev_reason


def test_runtime_acknowledgement_names_the_runtime_and_its_support(default_synth: Synth) -> None:
    (reason,) = reasons(default_synth, "AwsSolutions-L1")

    assert "Python 3.13" in reason
    assert "Amazon Linux 2023" in reason
    assert "2029-06-30" in reason  # python3.13's projected deprecation in Lambda
    assert "toolchain" in reason
    # Nothing left of the previous runtime's argument.
    assert "3.11" not in reason
    assert "Amazon Linux 2 " not in reason


def test_only_cdks_own_handler_keeps_the_basic_execution_policy(any_synth: Synth) -> None:
    """The app's functions have their own roles; a reason never claims the managed policy is minimal."""
    suppressed = [
        v
        for v in nag_report(any_synth)["suppressedViolations"]
        if v["ruleName"].startswith("AwsSolutions-IAM4[") and "AWSLambdaBasicExecutionRole" in v["ruleName"]
    ]
    paths = [c["constructPath"] for v in suppressed for c in v["violatingConstructs"]]

    assert paths
    assert all(path.split("/")[1].startswith(CDK_HANDLERS) for path in paths), paths
    for violation in suppressed:
        assert "minimum" not in violation["reason"]
        assert "any log group of the account" in violation["reason"]
