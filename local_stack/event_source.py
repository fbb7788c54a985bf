"""A stand-in for the Lambda SQS event source mapping, with partial batch responses enabled.

It does what AWS's poller does: long-polls the queue for messages with all their attributes, gathers up to
the mapping's batch size from as many receives (ten messages each) as the queue answers at once, hands the
function the exact SQS event Lambda builds, deletes the messages the function did not report in
`batchItemFailures`, and leaves the reported ones (or the whole batch, when the function raises or answers
something malformed) to become visible again after the visibility timeout. The queue's redrive policy then
moves a message that keeps failing to the dead-letter queue, as in AWS.

Several pollers may feed one queue to one function at once, as the mapping's concurrency does in AWS: they
share a `BatchGate` (threads of one process, or processes: `BatchGate.shared`), which counts the messages
in flight across all of them and lets `disable()` stop every one of them.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from typing import Any

logger = logging.getLogger(__name__)

LambdaHandler = Callable[[dict[str, Any], Any], Any]

RECEIVE_LIMIT = 10  # SQS's ReceiveMessage limit, and the event source mapping's default batch size
MAX_BATCH_SIZE = 10_000  # the event source mapping's limit for a standard queue


@dataclass
class LocalLambdaContext:
    """The parts of Lambda's context object Powertools and the handlers read."""

    function_name: str
    timeout_seconds: float = 30.0
    memory_limit_in_mb: int = 256
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    region: str = "us-east-1"
    account_id: str = "123456789012"
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/{self.aws_request_id}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def to_lambda_record(message: dict[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """One SQS message as a record of the event Lambda hands the function (camelCase, strings)."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": dict(message.get("Attributes") or {}),
        "messageAttributes": {
            name: _to_lambda_message_attribute(value)
            for name, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _to_lambda_message_attribute(value: dict[str, Any]) -> dict[str, Any]:
    # The SQS API answers binary values as bytes; Lambda's event carries them base64-encoded.
    attribute: dict[str, Any] = {
        "stringListValues": list(value.get("StringListValues") or []),
        "binaryListValues": [
            base64.b64encode(item).decode("ascii") for item in value.get("BinaryListValues") or []
        ],
        "dataType": value.get("DataType", "String"),
    }
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
    return attribute


def failed_message_ids(response: Any, message_ids: set[str]) -> set[str]:
    """The messages to leave on the queue, read from the function's answer as Lambda reads it.

    An empty or null answer, or an empty `batchItemFailures`, is a complete success. An answer Lambda
    cannot read (not an object, a failure without an identifier, an identifier not in the batch) fails
    the whole batch.
    """
    if response is None:
        return set()
    if not isinstance(response, dict):
        return set(message_ids)
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return set(message_ids)
    failed: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            return set(message_ids)
        failed.add(identifier)
    return failed


class BatchGate:
    """What the pollers of one event source share: may a batch start, how many run, how many messages are in
    flight. The counters live in `counters` (a list, or shared memory between processes) and change under
    `lock`. Nothing waits while holding the lock, and nobody waits on a condition another process must
    signal: a process that dies (a worker, or a stack killed outright) cannot leave the others waiting.
    """

    _ENABLED, _RUNNING, _IN_FLIGHT = range(3)
    DISABLE_CHECK_SECONDS = 0.01

    def __init__(self, lock: Any = None, counters: Any = None) -> None:
        self._lock = lock if lock is not None else threading.Lock()
        self._counters = counters if counters is not None else [1, 0, 0]

    @classmethod
    def shared(cls, context: BaseContext) -> BatchGate:
        """A gate the processes of `context` share (passed to them when they start)."""
        return cls(context.Lock(), context.Array("q", [1, 0, 0], lock=False))

    @property
    def in_flight(self) -> int:
        with self._lock:
            return int(self._counters[self._IN_FLIGHT])

    def add_in_flight(self, count: int) -> None:
        with self._lock:
            self._counters[self._IN_FLIGHT] += count

    def begin(self) -> bool:
        """True, and the batch counts as running, when batches may start; False when disabled."""
        with self._lock:
            if not self._counters[self._ENABLED]:
                return False
            self._counters[self._RUNNING] += 1
            return True

    def end(self) -> None:
        with self._lock:
            self._counters[self._RUNNING] -= 1

    def disable(self) -> None:
        """No batch starts from now on; returns once none is running."""
        with self._lock:
            self._counters[self._ENABLED] = 0
        while True:
            with self._lock:
                if self._counters[self._RUNNING] == 0:
                    return
            time.sleep(self.DISABLE_CHECK_SECONDS)

    def enable(self) -> None:
        with self._lock:
            self._counters[self._ENABLED] = 1


class SqsEventSourcePoller:
    """Feeds one queue to one function on a background thread until `stop()`.

    Pollers sharing a `gate` run their batches concurrently and are disabled together.
    """

    def __init__(
        self,
        *,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        region: str,
        handler: LambdaHandler,
        function_name: str = "indexer",
        batch_size: int = RECEIVE_LIMIT,
        wait_seconds: int = 1,
        memory_mb: int = 256,
        gate: BatchGate | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, not {batch_size}")
        self._sqs = sqs
        self._queue_url = queue_url
        self._queue_arn = queue_arn
        self._region = region
        self._handler = handler
        self._function_name = function_name
        # What the deployed function is given (`indexerMemorySize`), so logs and metrics say the same.
        self._memory_mb = memory_mb
        self._batch_size = batch_size
        # AWS long-polls for 20 s; a shorter wait keeps shutdown prompt and changes nothing else.
        self._wait_seconds = wait_seconds
        self._stopping = threading.Event()
        self._gate = gate if gate is not None else BatchGate()
        self._thread = threading.Thread(target=self._run, name="sqs-event-source", daemon=True)

    @property
    def in_flight(self) -> int:
        """Messages received and not yet deleted or given back to the queue (by any poller of the gate)."""
        return self._gate.in_flight

    def start(self) -> SqsEventSourcePoller:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def disable(self) -> None:
        """Stop receiving, as disabling the event source mapping does; returns once no batch is running."""
        self._gate.disable()

    def enable(self) -> None:
        self._gate.enable()

    def _run(self) -> None:
        self.run(self._stopping)

    def run(self, stopping: Any) -> None:
        """Receive, invoke and settle batches until `stopping` (an Event) is set."""
        while not stopping.is_set():
            if not self._gate.begin():
                stopping.wait(0.05)
                continue
            try:
                self.poll_once()
                failed = False
            except Exception:  # a broken poll (e.g. the queue endpoint went away) must not kill the poller
                logger.exception("polling %s failed; retrying", self._queue_url)
                failed = True
            finally:
                self._gate.end()
            if failed:
                stopping.wait(1.0)

    def poll_once(self) -> int:
        """Receive one batch, invoke the function, settle the messages; returns how many were received.

        The first receive long-polls; the batch then fills from further receives until it is full or the
        queue has nothing visible left, so a backlog goes to the function in batches of `batch_size`.
        """
        messages = self._receive(self._batch_size, self._wait_seconds)
        if not messages:
            return 0
        while len(messages) < self._batch_size:
            more = self._receive(self._batch_size - len(messages), 0)
            if not more:
                break
            messages.extend(more)
        # Until this count goes up, the queue itself counts the received messages as not visible; from
        # here until they are settled, this count does.
        self._gate.add_in_flight(len(messages))
        try:
            self._invoke(messages)
        finally:
            self._gate.add_in_flight(-len(messages))
        return len(messages)

    def _receive(self, count: int, wait_seconds: int) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self._sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(RECEIVE_LIMIT, count),
            WaitTimeSeconds=wait_seconds,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        return messages

    def _invoke(self, messages: list[dict[str, Any]]) -> None:
        event = {
            "Records": [
                to_lambda_record(message, queue_arn=self._queue_arn, region=self._region)
                for message in messages
            ]
        }
        ids = {message["MessageId"] for message in messages}
        try:
            context = LocalLambdaContext(
                self._function_name, memory_limit_in_mb=self._memory_mb, region=self._region
            )
            response = self._handler(event, context)
        except Exception:
            # Lambda returns the whole batch to the queue when the function raises.
            logger.exception("%s raised; %d message(s) return to the queue", self._function_name, len(ids))
            return
        failed = failed_message_ids(response, ids)
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), RECEIVE_LIMIT):
            chunk = done[start : start + RECEIVE_LIMIT]
            result = self._sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            for failure in result.get("Failed", []):
                logger.warning("could not delete a processed message: %s", failure.get("Message"))
        if failed:
            logger.warning(
                "%s reported %d of %d message(s) as failed; they return after the visibility timeout",
                self._function_name,
                len(failed),
                len(ids),
            )
        logger.info("%s processed %d message(s)", self._function_name, len(done))
