"""A search API on moto: the FileMetaData table, the download bucket, the cursor secret, the indexer's
queue and dead-letter queue, and the handler.

`api.get(path)` sends a request through the real handler as API Gateway's REST proxy would
(`local_stack.api_gateway.to_rest_event`); `put_file` / `put_tombstone` write items with the shapes the
indexer writes (file_index.rules.schema).

The table is on moto; a test marked `@both_engines` (or a module with `pytestmark = both_engines`) also
runs with the table on DynamoDB Local (AWS's own engine), a fresh one per test, while the bucket and the
secret stay on moto. The handler reaches DynamoDB Local the way the local stack does, through
`AWS_ENDPOINT_URL_DYNAMODB`; moto's in-process mock leaves requests to that endpoint alone.

The handler keeps the index state for a moment (`search.status.STATE_MAX_AGE_SECONDS`); its clock is
`state_clock`, which stands still within a test (`advance` moves it) and jumps ahead between tests, so no
test sees a state another one cached.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from io import BytesIO
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.name_index_flag import mark_table_complete
from file_index.write.entry_items import entry_item
from file_index.write.names import NameIndex
from local_stack.api_gateway import to_rest_event
from search import composition, handler, status
from tests.integration.conftest import DynamoDBLocal

REGION = "us-east-1"
BUCKET = "fileupload.a"
CURSOR_KEY = "cursor-signing-key-for-tests"
QUEUE_NAME = "file-events"
DLQ_NAME = "file-events-dlq"

ENGINES = ["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)]
# `@both_engines` runs a test on moto and on DynamoDB Local; tests without it run on moto only.
both_engines = pytest.mark.parametrize("engine", ENGINES, indirect=True)


@dataclass
class ApiResponse:
    status: int
    headers: dict[str, str]
    body: str

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class SearchApi:
    table: Any
    s3: Any
    lambda_context: Any
    sqs: Any = None
    queue_url: str = ""
    dlq_url: str = ""
    calls: int = field(default=0)
    name_table: str | None = None  # the name index table, when the handler has one

    def get(self, raw_path: str, headers: dict[str, str] | None = None) -> ApiResponse:
        self.calls += 1
        result = handler.lambda_handler(to_rest_event("GET", raw_path, headers=headers), self.lambda_context)
        response_headers = dict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            response_headers.setdefault(name, ", ".join(values))
        return ApiResponse(int(result["statusCode"]), response_headers, result.get("body") or "")

    def put_file(
        self,
        key: str,
        *,
        user: str = "USER001",
        date: str = "2017-08-20T09:15:02.113Z",
        size: int = 12,
        bucket: str = BUCKET,
        sequencer: str = "00599E9964323435D9",
        **extra: Any,
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            schema.OBJECT_KEY: key,
            schema.BUCKET_NAME: bucket,
            schema.FILE_ID: key.split("_", 1)[-1],
            schema.SIZE: Decimal(size),
            schema.UPLOAD_USER: user,
            schema.UPLOAD_DATE: date,
            schema.SEQUENCER: sequencer,
            schema.E_TAG: "d41d8cd98f00b204e9800998ecf8427e",
            schema.ORDER_KEY: sequencer,
            **extra,
        }
        self.table.put_item(Item=item)
        return item

    def put_tombstone(self, key: str, *, sequencer: str = "00599E9964323435FF") -> None:
        self.table.put_item(
            Item={
                schema.OBJECT_KEY: key,
                schema.SEQUENCER: sequencer,
                schema.ORDER_KEY: sequencer,
                schema.DELETED: True,
                schema.EXPIRES_AT: Decimal(2_000_000_000),
            }
        )


@dataclass(frozen=True)
class MotoStack:
    env: dict[str, str]
    table: Any
    s3: Any
    sqs: Any

    @property
    def queue_url(self) -> str:
        return self.env["QUEUE_URL"]

    @property
    def dlq_url(self) -> str:
        return self.env["DEAD_LETTER_QUEUE_URL"]

    def api(self, table: Any, lambda_context: Any) -> SearchApi:
        return SearchApi(
            table=table,
            s3=self.s3,
            lambda_context=lambda_context,
            sqs=self.sqs,
            queue_url=self.queue_url,
            dlq_url=self.dlq_url,
        )


@dataclass
class StateClock:
    """Stands in for `search.status.monotonic`."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_STATE_CLOCK = StateClock()


@pytest.fixture
def state_clock(monkeypatch: pytest.MonkeyPatch) -> StateClock:
    """The clock of the handler's index state cache, an hour past any cached entry."""
    _STATE_CLOCK.now = max(_STATE_CLOCK.now, time.monotonic()) + 3600
    monkeypatch.setattr(status, "monotonic", _STATE_CLOCK)
    return _STATE_CLOCK


@pytest.fixture(scope="module")
def moto_stack() -> Iterator[MotoStack]:
    """Table, bucket and secret on moto, made once per module: client creation dominates test time."""
    with mock_aws():
        dynamodb = boto3.resource("dynamodb", region_name=REGION)
        dynamodb.create_table(**schema.create_table_request())
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        secrets = boto3.client("secretsmanager", region_name=REGION)
        secret = secrets.create_secret(Name="cursor-key", SecretString=CURSOR_KEY)
        sqs = boto3.client("sqs", region_name=REGION)
        dlq_url = sqs.create_queue(QueueName=DLQ_NAME)["QueueUrl"]
        queue_url = sqs.create_queue(QueueName=QUEUE_NAME)["QueueUrl"]
        env = {
            "TABLE_NAME": schema.TABLE_NAME,
            "BUCKET_NAME": BUCKET,
            "CURSOR_SECRET_ARN": secret["ARN"],
            "QUEUE_URL": queue_url,
            "DEAD_LETTER_QUEUE_URL": dlq_url,
        }
        composition.file_search.cache_clear()
        yield MotoStack(env=env, table=dynamodb.Table(schema.TABLE_NAME), s3=s3, sqs=sqs)
        composition.file_search.cache_clear()


class RawBody(BytesIO):
    """A body botocore reads as an HTTP response's (an `AWSResponse` a `before-send` hook answers with)."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()


@contextlib.contextmanager
def sdk_hook(event: str, hook: Any) -> Iterator[None]:
    """`hook` first on botocore's `event` (e.g. `before-send.dynamodb`) for the handler's clients, which are
    made afresh inside the block, and gone afterwards."""
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    session = boto3.DEFAULT_SESSION
    assert session is not None
    composition.file_search.cache_clear()  # the handler's clients are made after the hook is in place
    session.events.register_first(event, hook)
    try:
        yield
    finally:
        session.events.unregister(event, hook)
        composition.file_search.cache_clear()


@pytest.fixture
def search_env(moto_stack: MotoStack, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The handler's environment, an empty table and empty queues.

    The handler's cold-start state is kept between tests of a module (same table, bucket and secret);
    a test that changes the environment clears it with `composition.file_search.cache_clear()`.
    """
    for name, value in moto_stack.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DOWNLOAD_URL_EXPIRY_SECONDS", raising=False)
    monkeypatch.delenv("INDEX_INITIAL_STATE", raising=False)
    # moto, like SQS, allows one purge a minute; these tests purge after every test.
    monkeypatch.setenv("MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR", "false")
    for queue_url in (moto_stack.queue_url, moto_stack.dlq_url):
        moto_stack.sqs.purge_queue(QueueUrl=queue_url)
    with moto_stack.table.batch_writer() as batch:
        for page in moto_stack.table.meta.client.get_paginator("scan").paginate(
            TableName=schema.TABLE_NAME, ProjectionExpression=schema.OBJECT_KEY
        ):
            for item in page["Items"]:
                batch.delete_item(Key={schema.OBJECT_KEY: item[schema.OBJECT_KEY]})
    return moto_stack.env


@pytest.fixture(scope="session")
def dynamodb_local_session() -> boto3.session.Session:
    """The default session of tests on DynamoDB Local, made once: loading service models is slow.

    Its credentials are fixed because DynamoDB Local keeps one database per access key and region:
    the set-up and the handler must agree on them (moto's mock sets credentials of its own).
    """
    return boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """Where `api` keeps the table: "moto" unless parametrised by `both_engines`."""
    return str(getattr(request, "param", "moto"))


@pytest.fixture
def api(
    engine: str,
    moto_stack: MotoStack,
    search_env: dict[str, str],
    state_clock: StateClock,
    lambda_context: Any,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[SearchApi]:
    if engine == "moto":
        yield moto_stack.api(moto_stack.table, lambda_context)
        return
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    session: boto3.session.Session = request.getfixturevalue("dynamodb_local_session")
    table_name = f"FileMetaData-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local.endpoint_url)
    monkeypatch.setenv("TABLE_NAME", table_name)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)  # the handler's clients come from it
    dynamodb = session.resource("dynamodb")
    dynamodb.meta.client.create_table(**schema.create_table_request(table_name))
    dynamodb.meta.client.get_waiter("table_exists").wait(
        TableName=table_name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100}
    )
    composition.file_search.cache_clear()
    try:
        yield moto_stack.api(dynamodb.Table(table_name), lambda_context)
    finally:
        composition.file_search.cache_clear()
        dynamodb.meta.client.delete_table(TableName=table_name)


# The placement `indexed_api` gives the handler: sharded bucket, a hot user and the Z-order index.
INDEXED_PLACEMENT = ShardPlacement(bucket_shards=3, hot_users={"bot": 4}, multi_attribute_index=True)


@pytest.fixture
def indexed_api(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[SearchApi]:
    """`api` over fresh tables on its engine with every index: the entries' table with the Z-order index
    and the name index table, the handler running with INDEXED_PLACEMENT and the name index."""
    client = api.table.meta.client
    suffix = uuid.uuid4().hex[:12]
    table_name, name_table_name = f"FileMetaData-{suffix}", f"FileNames-{suffix}"
    client.create_table(**schema.create_table_request(table_name, multi_attribute_index=True))
    client.create_table(**schema.create_name_table_request(name_table_name))
    for made in (table_name, name_table_name):
        client.get_waiter("table_exists").wait(
            TableName=made, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100}
        )
    # A new name table, as a new deployment's: its term items are complete from the first write.
    mark_table_complete(_plain_client(api), name_table_name, datetime.now(UTC))
    monkeypatch.setenv("TABLE_NAME", table_name)
    monkeypatch.setenv("NAME_TABLE_NAME", name_table_name)
    for name, value in INDEXED_PLACEMENT.to_env().items():
        monkeypatch.setenv(name, value)
    composition.file_search.cache_clear()
    resource = boto3.resource("dynamodb", endpoint_url=client.meta.endpoint_url, region_name=REGION)
    try:
        yield replace(api, table=resource.Table(table_name), name_table=name_table_name)
    finally:
        composition.file_search.cache_clear()
        for made in (table_name, name_table_name):
            client.delete_table(TableName=made)


def _plain_client(api: SearchApi) -> Any:
    """A DynamoDB client of `api`'s engine, typed values in and out (a resource's client has plain ones)."""
    return boto3.client("dynamodb", endpoint_url=api.table.meta.client.meta.endpoint_url, region_name=REGION)


def upload(key: str, *, user: str, file_id: str) -> ObjectEvent:
    """The create event of one upload of 42 bytes (1 May 2024) of `key` by `user`."""
    return ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=BUCKET,
        key=key,
        event_time=datetime(2024, 5, 1, tzinfo=UTC),
        sequencer="0A",
        size=42,
        e_tag=None,
        version_id=None,
        upload_user=user,
        file_id=file_id,
    )


def write_entries(api: SearchApi, events: Iterable[ObjectEvent]) -> None:
    """The entries of `events` (creates) as the writer stores them under INDEXED_PLACEMENT, and their name
    items as the writer puts them, into `indexed_api`'s tables."""
    assert api.name_table is not None
    names = NameIndex(_plain_client(api), api.name_table, entry_table=api.table.name)
    name_items = []
    with api.table.batch_writer() as batch:
        for event in events:
            entry = entry_item(event, event.order_key, INDEXED_PLACEMENT)
            batch.put_item(Item=entry)
            name_items.extend(names.items_of(entry, event.order_key))
    names.put_items(name_items)
