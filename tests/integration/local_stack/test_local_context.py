"""What a newcomer meets at start: the functions run with the configured memory, a setting the local stack
does not follow is said once, and a configuration error is one line (the CDK app's too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from local_stack import event_source
from local_stack.stack import InvalidConfigurationError, LocalFileSearch
from tests.integration.local_stack.conftest import REPO_ROOT


def test_the_indexer_runs_with_the_configured_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The context the poller hands the indexer says `indexerMemorySize`, as Lambda's would (Powertools logs
    it as function_memory_size)."""
    seen: list[int] = []

    class Recorded(event_source.LocalLambdaContext):
        def __post_init__(self) -> None:
            super().__post_init__()
            seen.append(self.memory_limit_in_mb)

    monkeypatch.setattr(event_source, "LocalLambdaContext", Recorded)
    with LocalFileSearch(
        aws_port=0, api_port=0, log_level="WARNING", context={"indexerMemorySize": 2048}
    ) as stack:
        stack.wait_until_indexed()
        stack.client("s3").put_object(Bucket=stack.bucket, Key="USER001_a.txt", Body=b"x")
        stack.wait_until_indexed()
    assert seen
    assert set(seen) == {2048}


def test_an_eventbridge_event_source_is_said_once_not_silently_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        caplog.at_level("WARNING", logger="local_stack"),
        LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context={"eventSource": "eventbridge"}),
    ):
        pass
    said = [record.getMessage() for record in caplog.records if "eventSource" in record.getMessage()]
    assert said == [
        "eventSource is eventbridge in cdk.json: the local stack delivers the bucket's S3 event "
        "notifications instead (the indexer reads both shapes the same way; tests/unit covers EventBridge's)"
    ]


def test_a_bad_key_layout_is_refused_at_start_in_one_line() -> None:
    with pytest.raises(InvalidConfigurationError, match=r"^KEY_LAYOUT: ") as refused:
        LocalFileSearch(aws_port=0, api_port=0, key_pattern="(")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("debug", "one_line"), [("", True), ("true", False)])
def test_the_cdk_app_says_a_configuration_error_in_one_line(debug: str, one_line: bool) -> None:
    """`cdk synth` with a bad cdk.json value: its one useful line; the traceback only with `cdk --debug`."""
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"bucketIndexShards": 0}),
        "CDK_DEBUG": debug,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    expected = "cdk.json: context bucketIndexShards=0 is invalid; allowed: an integer from 1 to 256\n"
    if one_line:
        assert result.stderr == expected
    else:
        assert "Traceback" in result.stderr
        assert result.stderr.rstrip().endswith(expected.removeprefix("cdk.json: ").rstrip())
