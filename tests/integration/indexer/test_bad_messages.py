"""Inputs that parse as JSON but cannot be indexed, and bugs: each fails its own message only, with one
log line naming it and the reason; the rest of the batch, the same key's later events included, is indexed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from file_index.rules.objects import ObjectEvent
from file_index.write.conditions import Outcome
from indexer import handler
from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsQueue, is_live, notification, read_items, s3_record

KEY = "U1_report.txt"


def errors(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [record for record in caplog.records if record.levelname == "ERROR"]


def test_unindexable_records_fail_only_their_messages(
    indexer: Indexer, caplog: pytest.LogCaptureFixture
) -> None:
    surrogate_key = s3_record("ObjectCreated:Put", "placeholder", sequencer="03")
    surrogate_key["s3"]["object"]["key"] = "U1_\ud800"  # json.dumps writes it as the escape "\ud800"
    queue = SqsQueue()
    queue.send(
        notification(s3_record("ObjectCreated:Put", KEY, sequencer="01", size=1)),
        notification(
            s3_record("ObjectCreated:Put", KEY, sequencer="02", event_time="0001-01-01T00:00:00+01:00")
        ),
        notification(surrogate_key),
        notification(s3_record("ObjectCreated:Put", KEY, sequencer="04", size=10**40 + 1)),
        notification(s3_record("ObjectCreated:Put", KEY, sequencer="05", size=7)),
        notification(s3_record("ObjectCreated:Put", "U1_other.txt", sequencer="01", size=3)),
    )
    ids = [message.message_id for message in queue.pending]
    assert '"U1_\\ud800"' in queue.pending[2].body

    failed = queue.deliver(indexer, indexer.context)

    assert sorted(failed) == ids[1:4]
    items = read_items(indexer.client, indexer.table_name, [KEY, "U1_other.txt"])
    assert is_live(items[KEY])
    assert items[KEY]["size"] == 7  # type: ignore[index]
    assert items["U1_other.txt"]["size"] == 3  # type: ignore[index]
    logged = errors(caplog)
    assert [record.messageId for record in logged] == ids[1:4]
    # Said as it happens: the message is retried, then dead-lettered, never silently skipped.
    assert {record.getMessage() for record in logged} == {
        "Malformed message failed: SQS retries it, then moves it to the dead-letter queue"
    }
    reasons = [record.reason for record in logged]
    assert "eventTime" in reasons[0]
    assert "not valid UTF-8" in reasons[1]
    assert "size" in reasons[2]
    assert all(record.exc_info is None for record in logged), "bad input is not a bug: no traceback"


def test_an_unexpected_exception_fails_its_message_and_the_key_goes_on(
    moto_indexer: Indexer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = handler.apply_event

    def apply_event(client: Any, table_name: str, event: ObjectEvent, **options: Any) -> Outcome:
        if event.sequencer == "02":
            raise ZeroDivisionError("a bug")
        return real(client, table_name, event, **options)

    monkeypatch.setattr(handler, "apply_event", apply_event)
    queue = SqsQueue()
    queue.send(
        notification(s3_record("ObjectCreated:Put", KEY, sequencer="01", size=1)),
        notification(
            s3_record("ObjectCreated:Put", "U1_same-message.txt", sequencer="01", size=2),
            s3_record("ObjectCreated:Put", KEY, sequencer="02", size=2),
        ),
        notification(s3_record("ObjectCreated:Put", KEY, sequencer="03", size=3)),
    )
    ids = [message.message_id for message in queue.pending]

    response = moto_indexer(
        {"Records": [{"messageId": m.message_id, "body": m.body} for m in queue.pending]},
        moto_indexer.context,
    )

    assert response == {"batchItemFailures": [{"itemIdentifier": ids[1]}]}
    items = read_items(moto_indexer.client, moto_indexer.table_name, [KEY, "U1_same-message.txt"])
    assert items[KEY]["size"] == 3  # type: ignore[index]
    assert is_live(items["U1_same-message.txt"])
    (logged,) = errors(caplog)
    assert logged.messageId == ids[1]
    assert logged.reason == "unexpected ZeroDivisionError: a bug"
    assert logged.exc_info is not None
    assert logged.exc_info[0] is ZeroDivisionError


def test_a_batch_of_only_bad_messages_answers_with_all_of_them(moto_indexer: Indexer) -> None:
    queue = SqsQueue()
    queue.send("not json", json.dumps({"Records": [{"eventSource": "aws:s3"}]}))
    ids = [message.message_id for message in queue.pending]
    assert sorted(queue.deliver(moto_indexer, moto_indexer.context)) == ids
