"""Synthesizes the stack once per configuration per test session, with cdk-nag, as `cdk synth` does.

A synth costs seconds, so each configuration is synthesized once and every test reads the result. A
cdk-nag failure does not stop the fixture: the template is still written, and the nag test reports the
findings while the other tests still check the template.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# jsii starts its node process on the first aws_cdk import: the variable must be set before that.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from infra.config import StackConfig
from infra.nag import add_security_checks
from infra.stack import FileSearchStack

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK_NAME = "S3FileSearch"
# Throwaway dev settings: every branch of the configuration that differs from the default.
# ... and the 0.3.0 table: no bucket time index (one write unit less per new entry).
DEV_OVERRIDES = {
    "removalPolicy": "destroy",
    "apiAuth": "none",
    "alarmEmail": "ops@example.com",
    "bucketTimeIndex": False,
}
EXISTING_BUCKET = "legacy-uploads"
# An existing bucket in use: events through EventBridge, a weekly reconcile, the backfill's knobs turned.
IMPORTED_OVERRIDES = {
    "existingBucketName": EXISTING_BUCKET,
    "eventSource": "eventbridge",
    "reconcileSchedule": "rate(7 days)",
    "backfillConcurrency": 25,
    "backfillBatchSize": 200,
    "reconcileSegments": 4,
}
# An existing bucket fed by S3 notifications, in a throwaway stack: nothing may delete the bucket.
IMPORTED_S3_OVERRIDES = {
    "existingBucketName": EXISTING_BUCKET,
    "eventSource": "s3",
    "removalPolicy": "destroy",
}
# A bucket the stack creates, sending its events through EventBridge.
EVENTBRIDGE_OVERRIDES = {"eventSource": "eventbridge"}
# A large deployment: more shards, a hot uploader, the Z-order index, a bigger indexer.
PLACEMENT_OVERRIDES = {
    "bucketIndexShards": 32,
    "hotUsers": {"ingest-bot": 8},
    "multiAttributeIndex": True,
    "indexerMemorySize": 3008,
    "indexerBatchSize": 500,
    "indexerMaxBatchingWindowSeconds": 5,
    "indexerMaxConcurrency": 50,
}


def cdk_json_context() -> dict[str, Any]:
    """The context `cdk synth` passes: cdk.json's, including its feature flags."""
    return dict(json.loads((REPO_ROOT / "cdk.json").read_text())["context"])


@dataclass(frozen=True)
class Synth:
    stack: FileSearchStack
    outdir: Path
    template: Template
    template_json: dict[str, Any]
    validation_report: dict[str, Any]
    synth_error: str | None

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.template_json["Resources"].items()
            if resource["Type"] == resource_type
        }

    def logical_id(self, construct: Any) -> str:
        return str(self.stack.get_logical_id(construct.node.default_child))


def synthesize(outdir: Path, overrides: Mapping[str, Any]) -> Synth:
    context = {**cdk_json_context(), **overrides}
    app = cdk.App(context=context, outdir=str(outdir))
    stack = FileSearchStack(app, STACK_NAME, config=StackConfig.from_context(app.node.try_get_context))
    add_security_checks(app)
    synth_error = None
    try:
        app.synth()
    except RuntimeError as error:  # jsii turns cdk-nag's ValidationFailed into a RuntimeError
        synth_error = str(error)
    template_json = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    report_path = outdir / "validation-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return Synth(
        stack=stack,
        outdir=outdir,
        template=Template.from_json(template_json),
        template_json=template_json,
        validation_report=report,
        synth_error=synth_error,
    )


@pytest.fixture(scope="session")
def default_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack as `cdk.json` configures it: retained data, IAM auth, no alarm e-mail."""
    return synthesize(tmp_path_factory.mktemp("cdk-default"), {})


@pytest.fixture(scope="session")
def dev_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """A throwaway dev stack: destroyed data, open API, alarms mailed through SNS."""
    return synthesize(tmp_path_factory.mktemp("cdk-dev"), DEV_OVERRIDES)


@pytest.fixture(scope="session")
def imported_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """An existing bucket, EventBridge events, a scheduled reconcile and non-default backfill settings."""
    return synthesize(tmp_path_factory.mktemp("cdk-imported"), IMPORTED_OVERRIDES)


@pytest.fixture(scope="session")
def imported_s3_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """An existing bucket with S3 notifications, in a stack whose own data is destroyed with it."""
    return synthesize(tmp_path_factory.mktemp("cdk-imported-s3"), IMPORTED_S3_OVERRIDES)


@pytest.fixture(scope="session")
def eventbridge_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """A bucket the stack creates, its events delivered through EventBridge."""
    return synthesize(tmp_path_factory.mktemp("cdk-eventbridge"), EVENTBRIDGE_OVERRIDES)


@pytest.fixture(scope="session")
def placement_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """More shards, a hot user, the Z-order index and a bigger indexer."""
    return synthesize(tmp_path_factory.mktemp("cdk-placement"), PLACEMENT_OVERRIDES)


SYNTHS = ["default", "dev", "imported", "imported_s3", "eventbridge", "placement"]


@pytest.fixture(params=SYNTHS)
def any_synth(request: pytest.FixtureRequest) -> Synth:
    """Every configuration, for the checks that must hold whatever the deployer chose."""
    return request.getfixturevalue(f"{request.param}_synth")


@pytest.fixture(params=["imported", "imported_s3"])
def existing_bucket_synth(request: pytest.FixtureRequest) -> Synth:
    """Both stacks on an existing bucket."""
    return request.getfixturevalue(f"{request.param}_synth")
