"""`index_batch` on its own: whatever one record's write raises fails that record's message only, and no
write starts once the deadline allows none."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import ObjectEvent
from file_index.write.conditions import Outcome, WriteContentionError
from indexer.batch import Deadline, DeadlineReachedError, Message, index_batch, is_expected
from indexer.events import MalformedMessageError


def message(message_id: str, *keys_and_sequencers: tuple[str, str], bucket: str = "b") -> Message:
    records = [
        {
            "eventSource": "aws:s3",
            "eventName": "ObjectCreated:Put",
            "eventTime": "2024-05-01T10:00:00.000Z",
            "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 1, "sequencer": sequencer}},
        }
        for key, sequencer in keys_and_sequencers
    ]
    return Message(message_id, json.dumps({"Records": records}))


class Recorder:
    """Applies events in memory; raises `errors[(key, sequencer)]` for the chosen ones."""

    def __init__(self, errors: dict[tuple[str, str], Exception]) -> None:
        self.errors = errors
        self.applied: list[tuple[str, str | None]] = []

    def __call__(self, event: ObjectEvent) -> Outcome:
        error = self.errors.get((event.key, event.sequencer or ""))
        if error is not None:
            raise error
        self.applied.append((event.key, event.sequencer))
        return Outcome.WRITTEN


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("a bug"),
        OverflowError("date value out of range"),
        ClientError({"Error": {"Code": "ValidationException", "Message": "no"}}, "PutItem"),
        EndpointConnectionError(endpoint_url="http://dynamodb"),
    ],
)
def test_a_failing_record_fails_its_message_and_the_chain_goes_on(error: Exception) -> None:
    apply = Recorder({("U_a", "02"): error})
    messages = [
        message("m1", ("U_a", "01")),
        message("m2", ("U_a", "02"), ("U_b", "01")),
        message("m3", ("U_a", "03")),
    ]
    with ThreadPoolExecutor(2) as executor:
        reports = index_batch(
            messages, key_pattern=KeyPattern.parse(None), bucket="b", apply=apply, executor=executor
        )

    assert [report.error is not None for report in reports] == [False, True, False]
    assert sorted(apply.applied) == [("U_a", "01"), ("U_a", "03"), ("U_b", "01")]  # U_a's chain went on
    (failed,) = reports[1].failed_results
    assert failed.error is error
    assert "U_a" in str(reports[1].error)


def test_an_unexpected_parse_failure_fails_its_message_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import indexer.batch as batch

    real = batch.parse_message

    def parse(body: str, key_pattern: KeyPattern) -> list[ObjectEvent]:
        if "boom" in body:
            raise KeyError("boom")
        return real(body, key_pattern)

    monkeypatch.setattr(batch, "parse_message", parse)
    apply = Recorder({})
    with ThreadPoolExecutor(1) as executor:
        reports = index_batch(
            [message("m1", ("U_boom", "01")), message("m2", ("U_a", "01"))],
            key_pattern=KeyPattern.parse(None),
            bucket="b",
            apply=apply,
            executor=executor,
        )
    assert isinstance(reports[0].error, KeyError)
    assert reports[1].error is None
    assert apply.applied == [("U_a", "01")]


def test_expected_failures_are_service_and_input_errors() -> None:
    throttled: Any = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "PutItem")
    assert is_expected(throttled)
    assert is_expected(MalformedMessageError("bad"))
    assert is_expected(EndpointConnectionError(endpoint_url="http://dynamodb"))
    assert is_expected(WriteContentionError("retry"))
    assert is_expected(DeadlineReachedError("late"))
    assert not is_expected(RuntimeError("bug"))


def test_events_of_another_bucket_are_reported_never_applied_and_their_message_succeeds() -> None:
    apply = Recorder({})
    mixed = Message(
        "m2",
        json.dumps(
            {
                "Records": [
                    json.loads(message("x", ("U_a", "02"), bucket="other").body)["Records"][0],
                    json.loads(message("x", ("U_c", "01")).body)["Records"][0],
                ]
            }
        ),
    )
    with ThreadPoolExecutor(1) as executor:
        reports = index_batch(
            [message("m1", ("U_a", "03"), ("U_b", "01"), bucket="other"), mixed],
            key_pattern=KeyPattern.parse(None),
            bucket="b",
            apply=apply,
            executor=executor,
        )
    assert apply.applied == [("U_c", "01")]
    assert [[(e.bucket, e.key) for e in report.foreign] for report in reports] == [
        [("other", "U_a"), ("other", "U_b")],
        [("other", "U_a")],
    ]
    assert [report.error for report in reports] == [None, None]


class Clock:
    """The invocation's remaining time, which each applied write uses up by `per_write_ms`."""

    def __init__(self, remaining_ms: int, per_write_ms: int, apply: Recorder) -> None:
        self.start_ms = remaining_ms
        self.per_write_ms = per_write_ms
        self.apply = apply

    def remaining_ms(self) -> int:
        return self.start_ms - self.per_write_ms * len(self.apply.applied)


def test_no_write_starts_after_the_deadline_and_a_partly_written_message_fails() -> None:
    apply = Recorder({})
    # 10 s left, each write takes 2 s, writes may start while more than 7 s are left: two writes start.
    deadline = Deadline(Clock(10_000, 2_000, apply).remaining_ms, margin_ms=7_000)
    messages = [
        message("m1", ("U_b", "01")),
        message("m2", ("U_a", "01"), ("U_c", "01")),  # U_a 01 written, U_c not started
        message("m3", ("U_a", "02")),  # the second write of U_a's chain: not started
        message("m4", ("U_d", "01")),
    ]
    with ThreadPoolExecutor(1) as executor:  # one writer: the chains run in the order of their keys
        reports = index_batch(
            messages,
            key_pattern=KeyPattern.parse(None),
            bucket="b",
            apply=apply,
            executor=executor,
            deadline=deadline,
        )

    assert apply.applied == [("U_b", "01"), ("U_a", "01")]
    assert [report.error is None for report in reports] == [True, False, False, False]
    assert [[(result.event.key, result.deferred) for result in report.results] for report in reports] == [
        [("U_b", False)],
        [("U_a", False), ("U_c", True)],
        [("U_a", True)],
        [("U_d", True)],
    ]
    assert isinstance(reports[1].failed_results[0].error, DeadlineReachedError)
    assert "1 record(s) not written; first: 'U_c': DeadlineReachedError" in str(reports[1].error)


def test_writes_start_while_more_than_the_margin_is_left() -> None:
    apply = Recorder({})
    with ThreadPoolExecutor(2) as executor:
        reports = index_batch(
            [message("m1", ("U_a", "01"), ("U_b", "01"))],
            key_pattern=KeyPattern.parse(None),
            bucket="b",
            apply=apply,
            executor=executor,
            deadline=Deadline(lambda: 10_000, margin_ms=9_999),
        )
    assert sorted(apply.applied) == [("U_a", "01"), ("U_b", "01")]
    assert reports[0].error is None
