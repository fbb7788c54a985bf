"""GET /status and the `indexState` of lists: the state record, the initial state, the queues' backlog,
and what the status answers when SQS or CloudWatch fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import EndpointConnectionError
from moto.backends import get_backend
from moto.core import DEFAULT_ACCOUNT_ID

from file_index.rules import schema, upload_statistics
from file_index.store.state import IndexStateStore, Operation, state_key
from search import composition
from search.models import IndexStatus
from search.status import STATE_MAX_AGE_SECONDS
from tests.integration.search.conftest import BUCKET, QUEUE_NAME, REGION, RawBody, SearchApi, StateClock

NO_RUN: dict[str, Any] = {
    "operation": None,
    "runId": None,
    "startedAt": None,
    "finishedAt": None,
    "updatedAt": None,
    "progress": {},
    "lastError": None,
    "zOrderPending": False,
    "statistics": None,
}


@pytest.fixture
def store(api: SearchApi) -> IndexStateStore:
    return IndexStateStore(boto3.client("dynamodb", region_name=REGION), schema.TABLE_NAME)


@pytest.fixture
def cold_start(api: SearchApi) -> Iterator[None]:
    """A new execution environment for a test that changes the configuration or hooks the clients."""
    composition.file_search.cache_clear()
    yield
    composition.file_search.cache_clear()


def status(api: SearchApi) -> dict[str, Any]:
    response = api.get("/status")
    assert response.status == 200, response.body
    assert response.headers["Content-Type"] == "application/json"
    body: dict[str, Any] = response.json
    IndexStatus.model_validate(body)  # the documented shape
    return body


def list_states(api: SearchApi) -> set[str]:
    """The indexState of a user list and of a bucket list."""
    states = set()
    for path in ("/files?user=USER001", f"/files?bucket={BUCKET}"):
        response = api.get(path)
        assert response.status == 200, response.body
        states.add(response.json["indexState"])
    return states


def test_a_bucket_without_a_state_record_is_ready_by_default(api: SearchApi) -> None:
    assert status(api) == {
        "indexState": "READY",
        "buckets": [{"bucket": BUCKET, "state": "READY", **NO_RUN}],
        "queue": {
            "messagesWaiting": 0,
            "messagesInFlight": 0,
            "messagesDelayed": 0,
            "oldestMessageAgeSeconds": None,  # moto publishes no SQS metrics
        },
        "deadLetterQueue": {"messages": 0},
        "unavailable": [],
    }
    assert list_states(api) == {"READY"}


def test_an_attached_bucket_is_building_until_its_backfill_writes_a_record(
    api: SearchApi, cold_start: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INDEX_INITIAL_STATE", "BUILDING")
    answer = status(api)
    assert answer["indexState"] == "BUILDING"
    assert answer["buckets"] == [{"bucket": BUCKET, "state": "BUILDING", **NO_RUN}]
    assert list_states(api) == {"BUILDING"}


def test_a_running_backfill_is_building_with_its_progress(api: SearchApi, store: IndexStateStore) -> None:
    store.start(BUCKET, Operation.BACKFILL, "run-1")
    store.add_progress(BUCKET, "run-1", {"listed": 10, "written": 7, "skipped": 3})

    answer = status(api)
    assert answer["indexState"] == "BUILDING"
    [bucket] = answer["buckets"]
    assert bucket["bucket"] == BUCKET
    assert bucket["state"] == "BUILDING"
    assert bucket["operation"] == "backfill"
    assert bucket["runId"] == "run-1"
    assert bucket["progress"] == {"listed": 10, "skipped": 3, "written": 7}
    assert bucket["startedAt"] <= bucket["updatedAt"]
    assert bucket["finishedAt"] is None
    assert bucket["lastError"] is None


def test_a_finished_run_is_ready_with_its_counts(api: SearchApi, store: IndexStateStore) -> None:
    store.start(BUCKET, Operation.RECONCILE, "run-2")
    store.add_progress(BUCKET, "run-2", {"listed": 5, "repaired": 2})
    store.finish(BUCKET, "run-2")

    answer = status(api)
    assert answer["indexState"] == "READY"
    [bucket] = answer["buckets"]
    assert bucket["state"] == "READY"
    assert bucket["operation"] == "reconcile"
    assert bucket["progress"] == {"listed": 5, "repaired": 2}
    assert bucket["finishedAt"] is not None
    assert bucket["startedAt"] <= bucket["finishedAt"]


def test_a_state_record_damaged_by_hand_answers_building_not_a_5xx(
    api: SearchApi, store: IndexStateStore, state_clock: StateClock
) -> None:
    store.start(BUCKET, Operation.BACKFILL, "run-3")
    store.finish(BUCKET, "run-3")
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=schema.TABLE_NAME,
        Key={schema.OBJECT_KEY: {"S": state_key(BUCKET)}},
        UpdateExpression="SET #state = :weird",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":weird": {"S": "WEIRD"}},
    )
    assert status(api)["indexState"] == "BUILDING"
    state_clock.advance(STATE_MAX_AGE_SECONDS)  # lists may hold the READY they read before
    assert list_states(api) == {"BUILDING"}


def test_a_failed_run_stays_building_and_says_why(api: SearchApi, store: IndexStateStore) -> None:
    store.start(BUCKET, Operation.BACKFILL, "run-3")
    store.fail(BUCKET, "run-3", "AccessDenied listing the bucket")

    answer = status(api)
    assert answer["indexState"] == "BUILDING"
    assert answer["buckets"][0]["lastError"] == "AccessDenied listing the bucket"


def test_the_backlog_counts_waiting_in_flight_delayed_and_dead_letters(api: SearchApi) -> None:
    sqs = api.sqs
    for n in range(3):
        sqs.send_message(QueueUrl=api.queue_url, MessageBody=f"event {n}")
    sqs.send_message(QueueUrl=api.queue_url, MessageBody="later", DelaySeconds=120)
    sqs.receive_message(QueueUrl=api.queue_url, MaxNumberOfMessages=1, VisibilityTimeout=300)
    for n in range(2):
        sqs.send_message(QueueUrl=api.dlq_url, MessageBody=f"dead {n}")
    # A dead letter someone is looking at is still a dead letter.
    sqs.receive_message(QueueUrl=api.dlq_url, MaxNumberOfMessages=1, VisibilityTimeout=300)

    answer = status(api)
    assert answer["queue"] == {
        "messagesWaiting": 2,
        "messagesInFlight": 1,
        "messagesDelayed": 1,
        "oldestMessageAgeSeconds": None,
    }
    assert answer["deadLetterQueue"] == {"messages": 2}
    assert answer["unavailable"] == []


@pytest.fixture
def cloudwatch(api: SearchApi) -> Iterator[Any]:
    """moto's CloudWatch, emptied afterwards (metric data cannot be deleted through the API)."""
    yield boto3.client("cloudwatch", region_name=REGION)
    get_backend("cloudwatch")[DEFAULT_ACCOUNT_ID][REGION].reset()


def test_the_oldest_message_age_is_the_newest_cloudwatch_datapoint_of_the_queue(
    api: SearchApi, cloudwatch: Any
) -> None:
    now = datetime.now(UTC)
    for minutes_ago, seconds, queue in [
        (8, 100, QUEUE_NAME),
        (2, 42, QUEUE_NAME),  # the newest of this queue in the window
        (1, 999, "another-queue"),
        (30, 555, QUEUE_NAME),  # older than the window
    ]:
        cloudwatch.put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {
                    "MetricName": "ApproximateAgeOfOldestMessage",
                    "Dimensions": [{"Name": "QueueName", "Value": queue}],
                    "Timestamp": now - timedelta(minutes=minutes_ago),
                    "Value": seconds,
                }
            ],
        )
    assert status(api)["queue"]["oldestMessageAgeSeconds"] == 42


class FailingCalls:
    """Fails the chosen operations of the handler's clients at the HTTP layer, on every attempt."""

    def __init__(self) -> None:
        self.throttled: set[str] = set()  # SQS operations answered with ThrottlingException
        self.unreachable: set[str] = set()  # operations whose endpoint cannot be reached
        self.attempts = 0

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation in self.unreachable:
            self.attempts += 1
            raise EndpointConnectionError(endpoint_url=request.url)
        if operation in self.throttled:
            self.attempts += 1
            body = json.dumps({"__type": "com.amazonaws.sqs#ThrottlingException", "message": "slow down"})
            headers = {"Content-Type": "application/x-amz-json-1.0"}
            return AWSResponse(request.url, 400, headers, RawBody(body.encode()))
        return None


@pytest.fixture
def failing(api: SearchApi, cold_start: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[FailingCalls]:
    injector = FailingCalls()
    monkeypatch.setattr("botocore.endpoint.time", SimpleNamespace(sleep=lambda _seconds: None))
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register_first("before-send", injector)
    try:
        yield injector
    finally:
        session.events.unregister("before-send", injector)


def test_a_failing_sqs_leaves_the_queue_figures_null_and_named(
    api: SearchApi, failing: FailingCalls, store: IndexStateStore
) -> None:
    store.start(BUCKET, Operation.BACKFILL, "run-4")
    failing.throttled.add("GetQueueAttributes")

    answer = status(api)
    assert answer["indexState"] == "BUILDING"  # what is known is still told
    assert answer["queue"] == {
        "messagesWaiting": None,
        "messagesInFlight": None,
        "messagesDelayed": None,
        "oldestMessageAgeSeconds": None,
    }
    assert answer["deadLetterQueue"] == {"messages": None}
    assert answer["unavailable"] == ["queue", "deadLetterQueue"]
    assert failing.attempts == 4  # two attempts per queue, then the figure is given up


def test_an_unreachable_cloudwatch_leaves_only_the_age_null(api: SearchApi, failing: FailingCalls) -> None:
    api.sqs.send_message(QueueUrl=api.queue_url, MessageBody="event")
    failing.unreachable.add("GetMetricStatistics")

    answer = status(api)
    assert answer["queue"]["messagesWaiting"] == 1
    assert answer["queue"]["oldestMessageAgeSeconds"] is None
    assert answer["deadLetterQueue"] == {"messages": 0}
    assert answer["unavailable"] == ["queue.oldestMessageAgeSeconds"]


def test_lists_flip_from_building_to_ready_within_the_state_max_age(
    api: SearchApi, store: IndexStateStore, state_clock: StateClock
) -> None:
    api.put_file("USER001_FILE001.txt")
    store.start(BUCKET, Operation.BACKFILL, "run-5")
    assert list_states(api) == {"BUILDING"}

    store.finish(BUCKET, "run-5")
    # The status reads afresh; lists keep the state they read for a moment, then read it again.
    assert status(api)["indexState"] == "READY"
    assert list_states(api) == {"BUILDING"}
    state_clock.advance(STATE_MAX_AGE_SECONDS)
    assert list_states(api) == {"READY"}

    store.start(BUCKET, Operation.RECONCILE, "run-6")
    state_clock.advance(STATE_MAX_AGE_SECONDS)
    assert list_states(api) == {"BUILDING"}


def test_lists_read_the_state_record_once_per_max_age(
    api: SearchApi, cold_start: None, state_clock: StateClock
) -> None:
    reads: list[dict[str, Any]] = []
    statistics_reads: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        # The indexer's upload statistics items are read apart, at most every few minutes.
        is_statistics = params["Key"][schema.OBJECT_KEY]["S"] in upload_statistics.statistics_keys(BUCKET)
        (statistics_reads if is_statistics else reads).append(params)

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        for _ in range(3):
            list_states(api)
        state_clock.advance(STATE_MAX_AGE_SECONDS - 0.1)
        list_states(api)
        assert len(reads) == 1
        state_clock.advance(0.1)
        list_states(api)
        assert len(reads) == 2
    finally:
        session.events.unregister("provide-client-params.dynamodb.GetItem", record)
    assert all(read["Key"] == {schema.OBJECT_KEY: {"S": state_key(BUCKET)}} for read in reads)
    assert len(statistics_reads) == upload_statistics.STATISTICS_SHARDS  # once for all these lists
    assert not any(read["ConsistentRead"] for read in reads)  # half the cost of a consistent read


def test_the_state_record_never_appears_in_a_search(api: SearchApi, store: IndexStateStore) -> None:
    api.put_file("USER001_FILE001.txt")
    store.start(BUCKET, Operation.BACKFILL, "run-7")
    store.add_progress(BUCKET, "run-7", {"listed": 1})
    record = api.table.get_item(Key={schema.OBJECT_KEY: state_key(BUCKET)})
    assert "Item" in record  # the record is in the table ...

    response = api.get(f"/files/{quote(state_key(BUCKET), safe='')}")
    assert response.status == 400  # ... but its key is longer than any S3 key, so it is never looked up
    assert response.json["message"] == "objectKey is longer than 1024 bytes"
    for path in ("/files?user=USER001", f"/files?bucket={BUCKET}", f"/files?bucket={BUCKET}&order=asc"):
        keys = [item["objectKey"] for item in api.get(path).json["items"]]
        assert keys == ["USER001_FILE001.txt"], path


@pytest.mark.parametrize(
    ("name", "value", "logged"),
    [
        ("QUEUE_URL", None, "environment variable QUEUE_URL is required"),
        ("DEAD_LETTER_QUEUE_URL", "", "environment variable DEAD_LETTER_QUEUE_URL is required"),
        ("QUEUE_URL", "file-events", "QUEUE_URL must be an SQS queue URL (https://host/account/name), not"),
        ("INDEX_INITIAL_STATE", "EMPTY", "INDEX_INITIAL_STATE must be READY or BUILDING, not 'EMPTY'"),
    ],
)
@pytest.mark.parametrize("path", ["/status", "/files?user=U"])
def test_a_bad_variable_fails_at_cold_start_with_its_name_and_no_detail_to_the_client(
    api: SearchApi,
    cold_start: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    name: str,
    value: str | None,
    logged: str,
    path: str,
) -> None:
    if value is None:
        monkeypatch.delenv(name)
    else:
        monkeypatch.setenv(name, value)
    response = api.get(path)
    assert response.status == 500
    assert response.json == {"message": "internal error"}
    errors = [str(record.exc_info[1]) for record in caplog.records if record.exc_info]
    assert any(error.startswith(logged) for error in errors), errors


@pytest.mark.parametrize(
    ("shards", "hot_users", "pool"), [("1", "{}", 10), ("16", "{}", 16), ("4", '{"bot": 64}', 32)]
)
def test_the_connection_pool_holds_the_read_fan_out(
    api: SearchApi, cold_start: None, monkeypatch: pytest.MonkeyPatch, shards: str, hot_users: str, pool: int
) -> None:
    """Every thread of a page's fan-out has a connection (botocore's default pool of 10 would queue them)."""
    monkeypatch.setenv("BUCKET_INDEX_SHARDS", shards)
    monkeypatch.setenv("HOT_USERS", hot_users)
    search = composition.file_search()
    client = search._reader._client  # the table's client, which every Query and BatchGetItem goes through
    assert client.meta.config.max_pool_connections == pool
    threads = composition.read_threads(search._reader.placement)
    assert threads <= pool


def test_every_client_of_the_search_is_built_by_its_sdk_settings(
    api: SearchApi, cold_start: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard retries and bounded timeouts on every client, not botocore's 60 s and legacy retries."""
    monkeypatch.setenv("BUCKET_INDEX_SHARDS", "16")
    search = composition.file_search()
    clients = {
        "table": search._reader._client,
        "s3": search._objects._s3,
        "state": search._index_state._store._dynamodb,
        "sqs": search._backlog._sqs,
        "cloudwatch": search._backlog._cloudwatch,
    }
    settings = {
        name: (
            client.meta.config.retries,
            client.meta.config.connect_timeout,
            client.meta.config.read_timeout,
            client.meta.config.max_pool_connections,
        )
        for name, client in clients.items()
    }
    fan_out = ({"mode": "standard", "total_max_attempts": 3}, 2.0, 5.0, 16)
    backlog = ({"mode": "standard", "total_max_attempts": 2}, 2.0, 3.0, 2)
    assert settings == {
        "table": fan_out,
        "s3": fan_out,
        "state": fan_out,
        "sqs": backlog,
        "cloudwatch": backlog,
    }
    assert clients["s3"].meta.config.signature_version == "s3v4"
