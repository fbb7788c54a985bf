"""Indexes one SQS batch: parse every message, then write all its events concurrently.

The events of different keys are independent (ordering lives in each write's condition), so they are
written at once on a thread pool: a batch of 100 costs about one DynamoDB round trip of wall time. The
events of one key are written one after another in delivery order, which is what gives events without a
sequencer their "last delivered wins on a tie" rule (see `file_index.rules.objects`); it costs nothing for
sequenced events, whose order the condition settles anyway.

Events of any bucket but the indexed one are refused before anything is written: they are reported as
`foreign` and their message succeeds (a retry could never make them apply). Without this, a delete in
another bucket would hide this bucket's entry of the same key.

A message succeeds when all its records do. A malformed message fails alone, before anything is written;
a record whose write fails (throttling or 5xx beyond the SDK's retries, or any other exception) fails its
message only, and the rest of its key's chain is still written. Nothing a message holds can fail the
whole batch. Retrying a message is safe: every write is conditional and idempotent.

A `Deadline` stops the batch from starting writes when the invocation is about to end: every record not
started by then fails with `DeadlineReachedError` (its message is retried), so a stalled connection costs
the records that were waiting for it, not a timed-out invocation that fails every message of the batch,
written or not, and pushes them towards the dead-letter queue. A message with some records written before
the deadline and some not fails as a whole; its retry finds the written ones stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from botocore.exceptions import BotoCoreError, ClientError

from file_index.rules.key_pattern import KeyPattern
from file_index.store.unprocessed import UnprocessedError
from file_index.write.conditions import Outcome, WriteContentionError
from indexer.events import MalformedMessageError, ObjectEvent, parse_message

ApplyEvent = Callable[[ObjectEvent], Outcome]


class DeadlineReachedError(RuntimeError):
    """The invocation was about to end before this record's write started; its message is retried."""


@dataclass(frozen=True)
class Deadline:
    """No write starts once the invocation has `margin_ms` or less left.

    `remaining_ms` is the Lambda context's `get_remaining_time_in_millis`; `margin_ms` must cover the
    longest one write can take, so that a write started in time ends in time.
    """

    remaining_ms: Callable[[], int]
    margin_ms: int

    def allows_a_write(self) -> bool:
        return self.remaining_ms() > self.margin_ms


@dataclass(frozen=True)
class Message:
    message_id: str
    body: str


@dataclass(frozen=True)
class EventResult:
    message_id: str
    event: ObjectEvent
    outcome: Outcome | None  # None when the write failed
    error: Exception | None = None
    applied_at: datetime | None = None

    @property
    def lag_ms(self) -> float | None:
        """From the event's time in S3 to its write (or no-op) in the index."""
        if self.applied_at is None:
            return None
        return (self.applied_at - self.event_time_utc).total_seconds() * 1000

    @property
    def event_time_utc(self) -> datetime:
        return self.event.event_time.astimezone(UTC)

    @property
    def deferred(self) -> bool:
        """Not started because the invocation was about to end (not a failure of the write)."""
        return isinstance(self.error, DeadlineReachedError)


@dataclass
class MessageReport:
    """What happened to one message; `error` set means it must be reported as a batch item failure."""

    message_id: str
    results: list[EventResult] = field(default_factory=list)
    # Why the body could not be parsed: a MalformedMessageError, or (a bug) anything else parsing raised.
    malformed: Exception | None = None
    # Events of another bucket than the indexed one: never written, and no reason to retry.
    foreign: list[ObjectEvent] = field(default_factory=list)

    @property
    def failed_results(self) -> list[EventResult]:
        return [result for result in self.results if result.error is not None]

    @property
    def error(self) -> Exception | None:
        if self.malformed is not None:
            return self.malformed
        failed = self.failed_results
        if failed:
            return IndexWriteError(self.message_id, failed)
        return None


class IndexWriteError(RuntimeError):
    """Some records of a message could not be written; the message is retried by SQS."""

    def __init__(self, message_id: str, failed: Sequence[EventResult]) -> None:
        first = failed[0]
        super().__init__(
            f"message {message_id}: {len(failed)} record(s) not written; "
            f"first: {first.event.key!r}: {_describe(first.error)}"
        )


def index_batch(
    messages: Iterable[Message],
    *,
    key_pattern: KeyPattern,
    bucket: str,
    apply: ApplyEvent,
    executor: Executor,
    deadline: Deadline | None = None,
) -> list[MessageReport]:
    """Parse and write a batch of `bucket`'s events; one report per message, in delivery order.

    With a `deadline`, each write starts only while it allows one (module docstring).
    """
    reports: list[MessageReport] = []
    # Each key's events in delivery order; different keys' chains run concurrently.
    chains: dict[str, list[tuple[str, ObjectEvent]]] = {}
    for message in messages:
        report = MessageReport(message.message_id)
        reports.append(report)
        try:
            events = parse_message(message.body, key_pattern)
        except Exception as error:  # one bad body must not fail the batch
            report.malformed = error
            continue
        for event in events:
            if event.bucket != bucket:
                report.foreign.append(event)
                continue
            chains.setdefault(event.key, []).append((message.message_id, event))

    futures = [executor.submit(_apply_chain, chain, apply, deadline) for chain in chains.values()]
    by_message = {report.message_id: report for report in reports}
    for future in futures:
        for result in future.result():
            by_message[result.message_id].results.append(result)
    return reports


def _apply_chain(
    chain: Sequence[tuple[str, ObjectEvent]], apply: ApplyEvent, deadline: Deadline | None
) -> list[EventResult]:
    results = []
    for message_id, event in chain:
        # Checked before every write: a chain may wait in the pool's queue, and each write may take long.
        # The remaining time only shrinks, so once one event of a key is not started, neither is the rest
        # of its chain: a later event must not be written ahead of an earlier one that its retry brings.
        if deadline is not None and not deadline.allows_a_write():
            error = DeadlineReachedError("not started: the invocation was about to time out")
            results.append(EventResult(message_id, event, None, error))
            continue
        try:
            outcome = apply(event)
        except Exception as error:  # fails this record's message only (see is_expected)
            results.append(EventResult(message_id, event, None, error))
            continue
        results.append(EventResult(message_id, event, outcome, applied_at=datetime.now(UTC)))
    return results


def is_expected(error: BaseException | None) -> bool:
    """A failure the services can cause (DynamoDB, S3, the network, writes racing on one key); anything
    else is a bug, logged with its traceback, and still fails only its own message (retried, then
    dead-lettered)."""
    return isinstance(
        error,
        (
            MalformedMessageError,
            ClientError,
            BotoCoreError,
            WriteContentionError,
            DeadlineReachedError,
            UnprocessedError,
        ),
    )


def _describe(error: Exception | None) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "ClientError"))
    return type(error).__name__ if error is not None else "unknown"
