"""Every boto3 client of the functions and the admin tools is built by `SdkSettings` (one place for
timeouts, retries and pool size): none runs on botocore's defaults by accident."""

from __future__ import annotations

import ast
from pathlib import Path

import boto3

from file_index.store.sdk import SdkSettings, dynamodb_client, s3_client
from file_search_admin.aws import Aws

ROOT = Path(__file__).resolve().parents[3]
# The one module that may call boto3's factories.
FACTORY = ROOT / "functions" / "file_index" / "store" / "sdk.py"


def _factory_calls(path: Path) -> list[str]:
    """`boto3.client(...)`, `boto3.resource(...)` and `<session>.client/resource(..., config=...)` calls."""
    calls = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("client", "resource"):
            continue
        receiver = node.func.value
        from_boto3 = isinstance(receiver, ast.Name) and receiver.id == "boto3"
        if from_boto3 or any(keyword.arg == "config" for keyword in node.keywords):
            calls.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return calls


def test_no_module_builds_a_client_outside_sdk_settings() -> None:
    sources = [*(ROOT / "functions").rglob("*.py"), *(ROOT / "file_search_admin").rglob("*.py")]
    found = [call for path in sources if path != FACTORY for call in _factory_calls(path)]
    assert found == []
    assert _factory_calls(FACTORY)  # the check sees the calls it looks for


def test_the_writers_and_the_admin_tools_get_their_settings() -> None:
    sdk = SdkSettings(max_attempts=4, max_connections=7, connect_timeout=1.5, read_timeout=4.0)
    for client in (dynamodb_client(sdk), s3_client(sdk)):
        config = client.meta.config
        assert (config.retries, config.connect_timeout, config.read_timeout, config.max_pool_connections) == (
            {"mode": "standard", "total_max_attempts": 4},
            1.5,
            4.0,
            7,
        )
    admin = (
        Aws(boto3.session.Session(region_name="us-east-1"), max_connections=12).client("dynamodb").meta.config
    )
    assert (admin.retries, admin.connect_timeout, admin.read_timeout, admin.max_pool_connections) == (
        {"mode": "standard", "total_max_attempts": 5},
        10,
        60,
        12,
    )
