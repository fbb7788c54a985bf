"""Fixtures every test scope shares: fake AWS credentials and a Lambda context."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def _aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach AWS: fake credentials, a fixed region, no endpoint from the caller's shell."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearchTest",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    # Neither a profile nor an endpoint (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB...) from the shell.
    for name in [name for name in os.environ if name == "AWS_PROFILE" or name.startswith("AWS_ENDPOINT_URL")]:
        monkeypatch.delenv(name, raising=False)


@dataclass
class FakeLambdaContext:
    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()
