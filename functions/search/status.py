"""The index state and the indexer's backlog: `GET /status`, and the `indexState` of every list answer.

The state is the indexed bucket's state record (`file_index.state`); without one, the configured
initial state. Lists read it through `IndexStateView`, which keeps it for `STATE_MAX_AGE_SECONDS` per
execution environment: the record is one item, so one DynamoDB partition (3,000 read units/s, 6,000
eventually consistent reads/s), and reading it on every list of every environment would cap the whole
API's list rate there, besides adding a round trip to every page. Kept this briefly, a list tells READY
at most `STATE_MAX_AGE_SECONDS` (plus DynamoDB's eventual consistency, normally under a second) after a
backfill or reconcile finished. `GET /status` always reads the record afresh.

The backlog comes from SQS (`GetQueueAttributes`, approximate counts) and CloudWatch (the queue's
`ApproximateAgeOfOldestMessage`, which SQS publishes only as a metric, once a minute). Each of those
three calls may fail on its own (throttling, a network fault, a missing permission) without failing the
status: its figures are null and `unavailable` names them, so a null is never mistaken for a zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from time import monotonic
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from file_index.cost import IndexStatistics
from file_index.state import IndexState, IndexStateStore, State, effective_state

STATE_MAX_AGE_SECONDS = 2.0
# SQS publishes its metrics once a minute, a few minutes late at times: the newest point of this window
# is the current age; an idle queue (or an emulator) has none.
AGE_METRIC_WINDOW = timedelta(minutes=10)
AGE_METRIC_PERIOD_SECONDS = 60

logger = Logger(service="file-search", child=True)

T = TypeVar("T")

# boto3 ships no type information for its generated clients.
SqsClient = Any
CloudWatchClient = Any


class IndexStateView:
    """The indexed bucket's index state, read from its state record (`initial` when there is none)."""

    def __init__(
        self,
        store: IndexStateStore,
        bucket: str,
        initial: State,
        *,
        max_age_seconds: float = STATE_MAX_AGE_SECONDS,
    ) -> None:
        self._store = store
        self._bucket = bucket
        self._initial = initial
        self._max_age = max_age_seconds
        # (when read, state), replaced whole: threads serving at once (the local stack) need no lock.
        self._cached: tuple[float, IndexState] | None = None

    def read(self, *, consistent: bool = True) -> IndexState:
        """The state record as it is now (one GetItem), or the initial state of a bucket without one."""
        # A record holding only the Z-order flag (a migration of a never-backfilled bucket): the index is
        # as complete as before the flag was set.
        return effective_state(
            self._store.read(self._bucket, consistent=consistent), self._bucket, self._initial
        )

    def current(self) -> IndexState:
        """The state record at most `max_age_seconds` old (an eventually consistent read when older)."""
        now = monotonic()
        cached = self._cached
        # An entry stamped later than now (a replaced clock) is never trusted.
        if cached is not None and 0 <= now - cached[0] < self._max_age:
            return cached[1]
        state = self.read(consistent=False)
        self._cached = (now, state)
        return state

    def state(self) -> State:
        """READY or BUILDING, at most `max_age_seconds` old."""
        return self.current().state

    def statistics(self) -> IndexStatistics | None:
        """The bucket's statistics from its last complete backfill or reconcile (None: none yet), at
        most `max_age_seconds` old: what the planner weighs its plans with."""
        return self.current().index_statistics()

    def z_order_pending(self) -> bool:
        """True while entries may lack their Z-order address (the third index was switched on for an
        existing table and its migration has not finished): box searches must not use that index."""
        return self.current().z_order_pending


@dataclass(frozen=True)
class Backlog:
    """The queue's and the dead-letter queue's figures; None where `unavailable` says it was unreadable.

    `oldest_message_age_seconds` is also None when CloudWatch has no recent datapoint (an idle queue).
    """

    messages_waiting: int | None = None
    messages_in_flight: int | None = None
    messages_delayed: int | None = None
    oldest_message_age_seconds: int | None = None
    dead_letter_messages: int | None = None
    unavailable: list[str] = field(default_factory=list)


class BacklogReader:
    """Reads the backlog of the indexer's queue and its dead-letter queue."""

    def __init__(
        self,
        *,
        sqs: SqsClient,
        cloudwatch: CloudWatchClient,
        queue_url: str,
        queue_name: str,
        dead_letter_queue_url: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._sqs = sqs
        self._cloudwatch = cloudwatch
        self._queue_url = queue_url
        self._queue_name = queue_name
        self._dlq_url = dead_letter_queue_url
        self._clock = clock

    def read(self) -> Backlog:
        unavailable: list[str] = []
        queue = self._attempt("queue", unavailable, lambda: self._counts(self._queue_url))
        age = self._attempt("queue.oldestMessageAgeSeconds", unavailable, self._oldest_message_age)
        dead = self._attempt("deadLetterQueue", unavailable, lambda: self._counts(self._dlq_url))
        return Backlog(
            messages_waiting=queue[0] if queue else None,
            messages_in_flight=queue[1] if queue else None,
            messages_delayed=queue[2] if queue else None,
            oldest_message_age_seconds=age,
            # Messages someone is reading (inspecting, redriving) are still dead letters.
            dead_letter_messages=dead[0] + dead[1] + dead[2] if dead else None,
            unavailable=unavailable,
        )

    def _attempt(self, figure: str, unavailable: list[str], read: Callable[[], T]) -> T | None:
        try:
            return read()
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "unknown")
            logger.warning("a backlog figure is unavailable", extra={"figure": figure, "code": code})
        except BotoCoreError as error:
            logger.warning("a backlog figure is unavailable", extra={"figure": figure, "error": str(error)})
        unavailable.append(figure)
        return None

    def _counts(self, queue_url: str) -> tuple[int, int, int]:
        """Visible, in-flight and delayed messages (SQS's approximate counts)."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return (
            int(attributes.get("ApproximateNumberOfMessages", 0)),
            int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        )

    def _oldest_message_age(self) -> int | None:
        """The newest Maximum of the queue's ApproximateAgeOfOldestMessage in the window, or None."""
        end = self._clock()
        response = self._cloudwatch.get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": self._queue_name}],
            StartTime=end - AGE_METRIC_WINDOW,
            EndTime=end,
            Period=AGE_METRIC_PERIOD_SECONDS,
            Statistics=["Maximum"],
        )
        points = [point for point in response.get("Datapoints", []) if "Maximum" in point]
        if not points:
            return None
        newest = max(points, key=lambda point: point["Timestamp"])
        return int(newest["Maximum"])


@dataclass(frozen=True)
class StatusReport:
    """What `GET /status` answers: the indexed bucket's state and the backlog."""

    state: IndexState
    backlog: Backlog

    def to_json(self) -> dict[str, Any]:
        backlog = self.backlog
        return {
            "indexState": self.state.state.value,
            "buckets": [self.state.to_json()],
            "queue": {
                "messagesWaiting": backlog.messages_waiting,
                "messagesInFlight": backlog.messages_in_flight,
                "messagesDelayed": backlog.messages_delayed,
                "oldestMessageAgeSeconds": backlog.oldest_message_age_seconds,
            },
            "deadLetterQueue": {"messages": backlog.dead_letter_messages},
            "unavailable": list(backlog.unavailable),
        }
