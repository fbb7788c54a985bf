"""The AWS side of the in-process benchmarks: moto resources built from the shared schema, a Lambda context.

Everything runs on moto's in-process mock: the table comes from
`file_index.rules.schema.create_table_request`, so the benchmarked table has the deployed keys and indexes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3

from file_index.rules import schema

REGION = "us-east-1"
BUCKET = "fileupload.bench"


# What every benchmark process starts with: fake credentials (nothing may reach AWS) and the Powertools
# settings the CDK stack deploys (infra/powertools_function.py), which Powertools reads at import time.
PROCESS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "POWERTOOLS_SERVICE_NAME": "indexer",
    "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
    "POWERTOOLS_LOG_LEVEL": "INFO",
    # No X-Ray daemon here; the deployed functions trace.
    "POWERTOOLS_TRACE_DISABLED": "true",
}
# Settings from the caller's shell that would point the benchmarks elsewhere.
UNSET_ENVIRONMENT = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3")


def prepare_process() -> None:
    """Set the benchmark process's environment, before any handler module is imported."""
    for name in UNSET_ENVIRONMENT:
        os.environ.pop(name, None)
    os.environ.update(PROCESS_ENVIRONMENT)


@contextmanager
def fake_credentials() -> Iterator[None]:
    """No benchmark may reach AWS: fake credentials and a fixed region for the block."""
    values = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }
    with environment(values):
        yield


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the block, then restore what was there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def create_table(name: str = schema.TABLE_NAME) -> Any:
    """The FileMetaData table (or a copy under another name) as a boto3 `Table` resource."""
    dynamodb = boto3.resource("dynamodb", region_name=REGION)
    table = dynamodb.create_table(**schema.create_table_request(name))
    table.wait_until_exists()
    return table


def scan_all(table: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ConsistentRead": True}
    while True:
        page = table.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@dataclass
class BenchLambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name: str = "bench-function"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:bench-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    log_group_name: str = "/aws/lambda/bench-function"
    log_stream_name: str = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 900_000
