"""The local stack's SQS paths (`local_stack.moto_sqs`): same answers as moto's, at the cost of the messages
they touch rather than of the whole queue.

The cost is counted, not timed: how many messages a receive asks "are you visible?", and how many times
the queue's attributes (moto's whole-queue pass) are computed, while a backlog waits.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from moto.sqs import models

from local_stack.event_source import SqsEventSourcePoller
from local_stack.moto_sqs import fast_queues
from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.test_event_source import RecordingFunction, make_queue

BACKLOG = 300


@pytest.fixture
def idle_stack() -> Iterator[LocalFileSearch]:
    """A stack whose indexer receives nothing: the test reads the event queue itself."""
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack:
        stack.wait_until_indexed()
        with stack.event_source_disabled():
            yield stack


class Counts:
    """Calls of `Queue.attributes` and of `Message.visible` while the block runs."""

    def __init__(self) -> None:
        self.attributes = 0
        self.visible = 0


@pytest.fixture
def counts() -> Iterator[Counts]:
    counted = Counts()
    attributes, visible = models.Queue.attributes, models.Message.visible

    def count_attributes(queue: models.Queue) -> dict[str, Any]:
        counted.attributes += 1
        return attributes.fget(queue)  # type: ignore[attr-defined]

    def count_visible(message: models.Message) -> bool:
        counted.visible += 1
        return visible.fget(message)  # type: ignore[attr-defined]

    with (
        mock.patch.object(models.Queue, "attributes", property(count_attributes)),
        mock.patch.object(models.Message, "visible", property(count_visible)),
    ):
        yield counted


def upload_backlog(stack: LocalFileSearch, count: int) -> None:
    s3 = stack.client("s3")
    for index in range(count):
        s3.put_object(Bucket=stack.bucket, Key=f"USER001_backlog {index:04d}.txt", Body=b"x")


def test_a_notification_a_receive_and_a_delete_do_not_walk_the_backlog(idle_stack, counts):
    upload_backlog(idle_stack, BACKLOG)
    sqs = idle_stack.client("sqs")
    counts.attributes = counts.visible = 0

    idle_stack.client("s3").put_object(Bucket=idle_stack.bucket, Key="USER001_one more.txt", Body=b"x")
    received = sqs.receive_message(QueueUrl=idle_stack.queue_url, MaxNumberOfMessages=10)["Messages"]
    sqs.delete_message_batch(
        QueueUrl=idle_stack.queue_url,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(received)],
    )

    assert len(received) == 10
    assert counts.attributes == 0  # moto computes them for each send and each received message
    assert counts.visible <= 20  # moto asks every message of the queue at each receive


def test_the_notification_is_the_event_moto_sends(idle_stack):
    idle_stack.client("s3").put_object(Bucket=idle_stack.bucket, Key="USER001_same event.txt", Body=b"abc")
    sqs = idle_stack.client("sqs")
    message = sqs.receive_message(
        QueueUrl=idle_stack.queue_url, MessageSystemAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"][0]

    record = json.loads(message["Body"])["Records"][0]
    assert record["eventSource"] == "aws:s3"
    assert record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == idle_stack.bucket
    assert record["s3"]["object"]["key"] == "USER001_same+event.txt"
    assert record["s3"]["object"]["size"] == 3
    assert message["Attributes"]["ApproximateReceiveCount"] == "1"
    assert int(message["Attributes"]["SentTimestamp"]) > 0


def test_counts_redrive_and_deletes_behave_as_moto_s(idle_stack):
    sqs = idle_stack.client("sqs")
    upload_backlog(idle_stack, 3)

    def counts_now() -> tuple[int, int]:
        attributes = sqs.get_queue_attributes(QueueUrl=idle_stack.queue_url, AttributeNames=["All"])[
            "Attributes"
        ]
        return int(attributes["ApproximateNumberOfMessages"]), int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    assert counts_now() == (3, 0)
    first = sqs.receive_message(QueueUrl=idle_stack.queue_url, VisibilityTimeout=1)["Messages"][0]
    assert counts_now() == (2, 1)
    sqs.delete_message(QueueUrl=idle_stack.queue_url, ReceiptHandle=first["ReceiptHandle"])
    sqs.delete_message(QueueUrl=idle_stack.queue_url, ReceiptHandle=first["ReceiptHandle"])  # twice is fine
    assert counts_now() == (2, 0)
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=idle_stack.queue_url, ReceiptHandle="not-a-receipt-handle")

    # A message received and never deleted comes back, and moves to the DLQ after maxReceiveCount receives.
    for _ in range(idle_stack._max_receive_count):
        batch = sqs.receive_message(
            QueueUrl=idle_stack.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=1
        )
        assert len(batch["Messages"]) == 2
        time.sleep(1.1)
    assert sqs.receive_message(QueueUrl=idle_stack.queue_url, MaxNumberOfMessages=10).get("Messages") is None
    dead = sqs.receive_message(QueueUrl=idle_stack.dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert len(dead) == 2


def test_the_poller_fills_a_batch_beyond_ten_from_a_backlog(idle_stack):
    sqs, url, arn = make_queue(idle_stack, "batched")
    for start in range(0, 30, 10):
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)]
        )
    function = RecordingFunction()
    poller = SqsEventSourcePoller(
        sqs=sqs, queue_url=url, queue_arn=arn, region="us-east-1", handler=function, batch_size=25
    )

    assert poller.poll_once() == 25
    assert poller.poll_once() == 5
    assert [len(event["Records"]) for event in function.events] == [25, 5]
    assert sqs.receive_message(QueueUrl=url).get("Messages") is None  # all deleted


def test_a_batch_size_beyond_the_event_source_mapping_s_limit_is_refused(idle_stack):
    sqs, url, arn = make_queue(idle_stack, "too-big")
    with pytest.raises(ValueError, match="batch_size must be between 1 and 10000, not 10001"):
        SqsEventSourcePoller(
            sqs=sqs,
            queue_url=url,
            queue_arn=arn,
            region="us-east-1",
            handler=RecordingFunction(),
            batch_size=10_001,
        )


def test_concurrent_receives_and_deletes_lose_no_message_and_hand_none_out_twice():
    """Several pollers at once (the stack's indexer processes) on moto's threaded server: each message is
    received once and deleted once, whatever the threads' interleaving."""
    messages = 2000
    with fast_queues():
        backend = models.sqs_backends["123456789012"]["us-east-1"]
        backend.create_queue("concurrent")
        for index in range(messages):
            backend.send_message("concurrent", f"message {index}")
        received: list[str] = []
        errors: list[Exception] = []

        def poll() -> None:
            try:
                while batch := backend.receive_message("concurrent", 10, 0, 60):
                    received.extend(message.id for message in batch)
                    for message in batch:
                        backend.delete_message("concurrent", str(message.receipt_handle))
            except Exception as error:
                errors.append(error)

        # Switching between threads very often makes a race between them show.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            pollers = [threading.Thread(target=poll) for _ in range(8)]
            for poller in pollers:
                poller.start()
            for poller in pollers:
                poller.join(120)
        finally:
            sys.setswitchinterval(interval)
        queue = backend.get_queue("concurrent")
        backend.delete_queue("concurrent")

    assert errors == []
    assert len(received) == len(set(received)) == messages
    assert list(queue._messages) == []
