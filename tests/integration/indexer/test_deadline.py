"""The indexer under a deadline: no write starts once the invocation is about to time out, and a stalled
connection fails a write within the configured timeouts, not botocore's 60 s.

The deadline is the Lambda context's remaining time. Here it comes from a clock the test controls (it
moves with each write DynamoDB answers) or from the real clock; the handler, its clients and the table
are the real ones (moto), and the stalled service is a local socket that accepts and never answers.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from file_index.rules.config import ConfigError
from indexer import handler
from tests.conftest import FakeLambdaContext
from tests.integration.indexer.conftest import BUCKET, Indexer, fresh_handler
from tests.integration.indexer.notifications import SqsQueue, is_live, notification, read_items, s3_record


@dataclass
class ClockContext(FakeLambdaContext):
    """A Lambda context whose remaining time is what `clock` says."""

    clock: Callable[[], int] = lambda: 30_000

    def get_remaining_time_in_millis(self) -> int:
        return self.clock()


class WriteClock:
    """Remaining time that runs out after `writes` writes: each answered PutItem uses up a millisecond,
    and the invocation starts with `writes` milliseconds more than the margin."""

    def __init__(self, runtime: handler.Runtime, writes: int) -> None:
        self.margin_ms = runtime.deadline_margin_ms
        self.start_ms = self.margin_ms + writes
        self.written = 0
        runtime.dynamodb.meta.events.register("after-call.dynamodb.PutItem", self._tick)

    def _tick(self, **_: Any) -> None:
        self.written += 1

    def __call__(self) -> int:
        return self.start_ms - self.written


def create(key: str) -> str:
    return notification(s3_record("ObjectCreated:Put", key, sequencer="0A"))


@pytest.fixture
def one_writer(moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch) -> Indexer:
    """The handler with one writer thread, so that the writes happen in a known order."""
    monkeypatch.setenv("WRITE_CONCURRENCY", "1")
    return moto_indexer


def test_records_after_the_deadline_are_batch_item_failures_and_the_earlier_ones_are_written(
    one_writer: Indexer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = WriteClock(one_writer.runtime, writes=2)
    queue = SqsQueue()
    queue.send(
        create("U1_a.txt"),
        notification(  # partly written before the deadline: fails as a whole
            s3_record("ObjectCreated:Put", "U1_b.txt", sequencer="0A"),
            s3_record("ObjectCreated:Put", "U1_c.txt", sequencer="0A"),
        ),
        create("U1_d.txt"),
    )
    ids = [message.message_id for message in queue.pending]
    keys = ["U1_a.txt", "U1_b.txt", "U1_c.txt", "U1_d.txt"]

    with caplog.at_level(logging.INFO):
        failed = queue.deliver(one_writer, ClockContext(clock=clock))

    assert sorted(failed) == sorted(ids[1:])
    assert clock.written == 2
    items = read_items(one_writer.client, one_writer.table_name, keys)
    assert [is_live(items[key]) for key in keys] == [True, True, False, False]
    # Not an error per record: one warning for the batch, and the records counted as deferred.
    assert not [record for record in caplog.records if record.levelname == "ERROR"]
    (warning,) = [record for record in caplog.records if record.levelname == "WARNING"]
    assert "about to time out" in warning.getMessage()
    assert (warning.records, warning.messages) == (2, 2)  # type: ignore[attr-defined]

    # Redelivered with time to spare, the failed messages complete; the written record is found stale.
    assert queue.deliver(one_writer, one_writer.context) == []
    items = read_items(one_writer.client, one_writer.table_name, keys)
    assert all(is_live(items[key]) for key in keys)


def test_the_deferred_records_are_counted_in_the_metrics(
    one_writer: Indexer, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = WriteClock(one_writer.runtime, writes=1)
    queue = SqsQueue()
    queue.send(create("U1_a.txt"), create("U1_b.txt"), create("U1_c.txt"))
    capsys.readouterr()

    assert len(queue.deliver(one_writer, ClockContext(clock=clock))) == 2

    (emf,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert (emf["DeferredRecords"], emf["FailedRecords"], emf["IndexedFiles"]) == ([2.0], [2.0], [1.0])


def test_an_invocation_too_short_for_any_write_fails_naming_the_variables(one_writer: Indexer) -> None:
    margin = one_writer.runtime.deadline_margin_ms
    with pytest.raises(ConfigError, match=r"SDK_READ_TIMEOUT_SECONDS.*raise the function's timeout"):
        one_writer({"Records": []}, ClockContext(clock=lambda: margin))


@pytest.fixture
def stalled_endpoint() -> Iterator[str]:
    """A TCP endpoint that takes connections (the kernel completes the handshake) and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        host, port = server.getsockname()
        yield f"http://{host}:{port}"


@pytest.fixture
def stalled_indexer(
    stalled_endpoint: str, monkeypatch: pytest.MonkeyPatch, lambda_context: FakeLambdaContext
) -> Iterator[Indexer]:
    """The handler with DynamoDB behind a stalled connection, and tight SDK settings."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", stalled_endpoint)
    monkeypatch.setenv("TABLE_NAME", "FileMetaData")
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("SDK_CONNECT_TIMEOUT_SECONDS", "0.3")
    monkeypatch.setenv("SDK_READ_TIMEOUT_SECONDS", "0.3")
    monkeypatch.setenv("DYNAMODB_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("WRITE_CONCURRENCY", "1")
    fresh_handler()
    yield Indexer(engine=None, context=lambda_context)  # type: ignore[arg-type]  # no table to look at
    fresh_handler()


def test_a_stalled_connection_fails_the_write_within_the_configured_timeouts(
    stalled_indexer: Indexer, caplog: pytest.LogCaptureFixture
) -> None:
    worst = stalled_indexer.runtime.config.sdk.worst_call_seconds
    assert worst == 2 * (0.3 + 0.3) + 1  # two attempts, one back-off of at most 1 s
    queue = SqsQueue()
    queue.send(create("U1_a.txt"))

    started = time.monotonic()
    failed = queue.deliver(stalled_indexer, stalled_indexer.context)
    elapsed = time.monotonic() - started

    assert len(failed) == 1
    assert 2 * 0.3 <= elapsed < worst + 1.5, elapsed  # both attempts waited out the read timeout
    (error,) = [record for record in caplog.records if record.levelname == "ERROR"]
    assert error.reason.startswith("Read timeout on endpoint URL")  # type: ignore[attr-defined]
    assert error.exc_info is None  # an expected failure: no traceback


def test_a_stalled_connection_costs_the_waiting_records_not_the_invocation(
    stalled_indexer: Indexer,
) -> None:
    # The invocation has time for one write's worst case and half a second more, on the real clock. The
    # first write stalls to its timeouts (at least 0.6 s); the nine others are then not started, and the
    # handler answers in time with every message a batch item failure, instead of being killed at its
    # timeout (writing all ten would take at least 6 s).
    runtime = stalled_indexer.runtime
    calls: list[str] = []
    runtime.dynamodb.meta.events.register("before-call.dynamodb.PutItem", lambda **_: calls.append("PutItem"))
    deadline = time.monotonic() + (runtime.deadline_margin_ms + 500) / 1000
    context = ClockContext(clock=lambda: int((deadline - time.monotonic()) * 1000))
    queue = SqsQueue()
    queue.send(*(create(f"U1_{n}.txt") for n in range(10)))

    failed = queue.deliver(stalled_indexer, context)

    assert len(failed) == 10
    assert calls == ["PutItem"]
    assert context.get_remaining_time_in_millis() > 0, "the handler answered before its time ran out"
