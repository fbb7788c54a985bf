"""The SQS event source stand-in against moto's SQS: the event Lambda builds, and what happens to failures."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

import pytest
from aws_lambda_powertools.utilities.data_classes import SQSEvent

from local_stack.event_source import SqsEventSourcePoller, failed_message_ids
from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.conftest import MAX_RECEIVE_COUNT, VISIBILITY_TIMEOUT_S

RECORD_KEYS = {
    "messageId",
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
}


class RecordingFunction:
    """A stand-in function that records its events and answers what the test tells it to."""

    def __init__(self, answer: Any = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.contexts: list[Any] = []
        self.answer = answer
        self.called = threading.Event()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.events.append(event)
        self.contexts.append(context)
        self.called.set()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer(event) if callable(self.answer) else self.answer


def make_queue(stack: LocalFileSearch, name: str) -> tuple[Any, str, str]:
    sqs = stack.client("sqs")
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT_S)})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return sqs, url, arn


def visible_and_in_flight(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def test_the_function_gets_the_event_lambda_builds(running_stack):
    sqs, url, arn = make_queue(running_stack, "shape")
    sqs.send_message(
        QueueUrl=url,
        MessageBody='{"hello": "world"}',
        MessageAttributes={
            "origin": {"DataType": "String", "StringValue": "test"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    function = RecordingFunction()
    poller = SqsEventSourcePoller(
        sqs=sqs, queue_url=url, queue_arn=arn, region="us-east-1", handler=function, function_name="shape"
    )

    assert poller.poll_once() == 1

    (record,) = function.events[0]["Records"]
    assert set(record) == RECORD_KEYS
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == arn
    assert record["awsRegion"] == "us-east-1"
    assert record["md5OfBody"] == hashlib.md5(b'{"hello": "world"}').hexdigest()  # noqa: S324 (SQS's checksum)
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= record["attributes"].keys()
    # Powertools' SQS data class reads it as it reads a Lambda event.
    parsed = next(SQSEvent(function.events[0]).records)
    assert parsed.json_body == {"hello": "world"}
    origin = parsed.message_attributes["origin"]
    assert origin is not None
    assert (origin.string_value, origin.data_type) == ("test", "String")
    assert record["messageAttributes"]["blob"]["binaryValue"] == "AAE="
    context = function.contexts[0]
    assert context.function_name == "shape"
    assert 0 < context.get_remaining_time_in_millis() <= 30_000
    # Complete success: the message is deleted.
    assert visible_and_in_flight(sqs, url) == 0


def test_a_raising_function_leaves_the_whole_batch_for_redelivery(running_stack):
    sqs, url, arn = make_queue(running_stack, "raising")
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"message {i}"} for i in range(3)]
    )
    function = RecordingFunction(answer=RuntimeError("the function broke"))
    poller = SqsEventSourcePoller(sqs=sqs, queue_url=url, queue_arn=arn, region="us-east-1", handler=function)

    assert poller.poll_once() == 3
    assert visible_and_in_flight(sqs, url) == 3

    # The poller keeps running; once the function recovers, the redelivered batch is settled.
    function.answer = None
    poller.start()
    try:
        deadline = time.monotonic() + 10
        while visible_and_in_flight(sqs, url):
            assert time.monotonic() < deadline, "the batch was not redelivered"
            time.sleep(0.1)
    finally:
        poller.stop()
    redelivered = function.events[-1]["Records"]
    assert sorted(r["body"] for r in redelivered) == ["message 0", "message 1", "message 2"]
    assert {r["attributes"]["ApproximateReceiveCount"] for r in redelivered} == {"2"}


def test_reported_failures_stay_and_the_rest_is_deleted(running_stack):
    sqs, url, arn = make_queue(running_stack, "partial")
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(4)])

    def fail_m1(event: dict[str, Any]) -> dict[str, Any]:
        return {
            "batchItemFailures": [
                {"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "m1"
            ]
        }

    function = RecordingFunction(answer=fail_m1)
    poller = SqsEventSourcePoller(sqs=sqs, queue_url=url, queue_arn=arn, region="us-east-1", handler=function)

    assert poller.poll_once() == 4
    assert visible_and_in_flight(sqs, url) == 1
    time.sleep(VISIBILITY_TIMEOUT_S + 0.2)
    message = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"][0]
    assert message["Body"] == "m1"


@pytest.mark.parametrize(
    ("answer", "failed"),
    [
        (None, set()),
        ({}, set()),
        ({"batchItemFailures": None}, set()),
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "b"}]}, {"b"}),
        # What Lambda cannot read fails the whole batch.
        ({"batchItemFailures": [{"itemIdentifier": "unknown"}]}, {"a", "b"}),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, {"a", "b"}),
        ({"batchItemFailures": [{}]}, {"a", "b"}),
        ({"batchItemFailures": "b"}, {"a", "b"}),
        ("not an object", {"a", "b"}),
    ],
)
def test_the_answer_is_read_as_lambda_reads_it(answer, failed):
    assert failed_message_ids(answer, {"a", "b"}) == failed


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (the local stack)
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_malformed_message_ends_in_the_dlq_and_its_batch_is_indexed(running_stack, caplog):
    """The real indexer behind the poller: one bad message never costs the good ones of its batch."""
    caplog.set_level(logging.INFO, logger="local_stack.event_source")
    sqs = running_stack.client("sqs")
    s3 = running_stack.client("s3")
    keys = ["USER001_good one.txt", "USER002/good two.txt"]
    malformed = "this is not an S3 event notification"
    with running_stack.event_source_disabled():  # so that all three arrive in one batch
        for key in keys:
            s3.put_object(Bucket=running_stack.bucket, Key=key, Body=b"fine")
        sqs.send_message(QueueUrl=running_stack.queue_url, MessageBody=malformed)

    deadline = time.monotonic() + 30
    dead: list[dict[str, Any]] = []
    while not dead:
        assert time.monotonic() < deadline, "the malformed message never reached the dead-letter queue"
        dead = sqs.receive_message(
            QueueUrl=running_stack.dlq_url, WaitTimeSeconds=1, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
    running_stack.wait_until_indexed(timeout=10)

    assert [message["Body"] for message in dead] == [malformed]
    # One batch of three with one failure, then the malformed message alone until the redrive policy.
    reports = [r.getMessage() for r in caplog.records if "as failed" in r.getMessage()]
    assert reports[0].startswith("indexer reported 1 of 3 message(s) as failed")
    assert len(reports) == MAX_RECEIVE_COUNT
    for key in keys:
        assert get_status(f"{running_stack.api_url}/files/{quote(key, safe='')}") == 200
    # Nothing else went to the dead-letter queue.
    assert visible_and_in_flight(sqs, running_stack.dlq_url) == 1


def test_wait_until_indexed_counts_messages_the_indexer_keeps_failing(running_stack):
    sqs = running_stack.client("sqs")
    sqs.send_message(QueueUrl=running_stack.queue_url, MessageBody="not JSON at all")
    started = time.monotonic()
    running_stack.wait_until_indexed(timeout=30)
    # Caught up only once the redrive policy moved it: MAX_RECEIVE_COUNT visibility timeouts later.
    assert time.monotonic() - started >= (MAX_RECEIVE_COUNT - 1) * VISIBILITY_TIMEOUT_S
    assert visible_and_in_flight(sqs, running_stack.dlq_url) == 1
