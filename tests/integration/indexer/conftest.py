"""The indexer under test: the real handler on a FileMetaData table in moto or DynamoDB Local.

`indexer` is parametrised over both engines for the tests that use `engine`; the handler reaches the
engine the way the local stack does, through boto3's endpoint variables, and starts cold in each test.
S3 is moto's in both cases: the indexed bucket `BUCKET` exists (empty) for the writer's HEAD lookups.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from indexer import handler
from tests.integration.conftest import DynamoDBLocal

# The indexed bucket (the indexer's BUCKET_NAME); hand-built events name it unless a test says otherwise.
BUCKET = "fileupload.a"
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


@dataclass
class Engine:
    name: str
    client: Any  # a DynamoDB client on the engine, for set-up and assertions
    table_name: str


@dataclass
class Indexer:
    engine: Engine
    context: Any

    @property
    def client(self) -> Any:
        return self.engine.client

    @property
    def table_name(self) -> str:
        return self.engine.table_name

    def __call__(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        return handler.lambda_handler(event, context or self.context)

    @property
    def runtime(self) -> handler.Runtime:
        return handler.cold_start()


def fresh_handler() -> None:
    """The next invocation starts cold: configuration, clients and thread pool afresh."""
    if handler.cold_start.cache_info().currsize:
        handler.cold_start().executor.shutdown()
    handler.cold_start.cache_clear()


@pytest.fixture
def moto_engine() -> Iterator[Engine]:
    with mock_aws():
        client = boto3.client("dynamodb")
        client.create_table(**schema.create_table_request())
        yield Engine("moto", client, schema.TABLE_NAME)


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    if request.param == "moto":
        yield request.getfixturevalue("moto_engine")
        return
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    table_name: str = request.getfixturevalue("dynamodb_local_table")
    # Only DynamoDB goes to DynamoDB Local (moto passes requests to other endpoints through); S3 is moto's.
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local.endpoint_url)
    # moto installs credentials of its own, and DynamoDB Local keeps one database per access key: the
    # handler must sign as the test client does.
    with mock_aws(), mock.patch.dict(os.environ, FAKE_CREDENTIALS):
        yield Engine("dynamodb_local", local.client(), table_name)


def _indexer(engine: Engine, monkeypatch: pytest.MonkeyPatch, context: Any) -> Iterator[Indexer]:
    monkeypatch.setenv("TABLE_NAME", engine.table_name)
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "file-indexer")
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    fresh_handler()
    yield Indexer(engine, context)
    fresh_handler()


@pytest.fixture
def indexer(engine: Engine, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> Iterator[Indexer]:
    """The handler on both engines (the test runs once per engine)."""
    yield from _indexer(engine, monkeypatch, lambda_context)


@pytest.fixture
def moto_indexer(
    moto_engine: Engine, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> Iterator[Indexer]:
    """The handler on moto only."""
    yield from _indexer(moto_engine, monkeypatch, lambda_context)
