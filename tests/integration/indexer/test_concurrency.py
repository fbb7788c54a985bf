"""Records of one batch are written concurrently, at most `WRITE_CONCURRENCY` at a time, and every one is.

Each PutItem waits in a `before-send` hook on the handler's client until `WRITE_CONCURRENCY` of them are
in flight together (a rendezvous, not a timing): a handler that wrote one record after another would
never get there. What concurrency saves in wall time is a bench figure (`python -m bench --only
batch_latency`: the same handler with WRITE_CONCURRENCY=32 and =1, in round trips).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

# How long a write waits for the others to join it before the rendezvous is given up (the test fails).
RENDEZVOUS_TIMEOUT_S = 30


class WritesInFlight:
    """Counts the PutItems in flight; each waits until `target` are in flight at once (once reached,
    or given up after a timeout, no write waits any more)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.now = 0
        self.most = 0
        self.gave_up = False
        self._changed = threading.Condition()

    def __call__(self, **_: Any) -> None:
        with self._changed:
            self.now += 1
            self.most = max(self.most, self.now)
            self._changed.notify_all()
            if not self._changed.wait_for(
                lambda: self.most >= self.target or self.gave_up, timeout=RENDEZVOUS_TIMEOUT_S
            ):
                self.gave_up = True
                self._changed.notify_all()
            self.now -= 1


@pytest.mark.parametrize("concurrency", [32, 1])
def test_a_batch_of_100_is_written_whole_with_write_concurrency_writes_in_flight(
    moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    monkeypatch.setenv("WRITE_CONCURRENCY", str(concurrency))
    in_flight = WritesInFlight(concurrency)
    moto_indexer.runtime.dynamodb.meta.events.register_first("before-send.dynamodb.PutItem", in_flight)
    queue = SqsQueue()
    messages = [[f"U{m}_f{r}.txt" for r in range(10)] for m in range(10)]  # 10 messages of 10 records
    keys = [key for message in messages for key in message]
    queue.send(
        *(notification(*(s3_record("ObjectCreated:Put", key, sequencer="0A") for key in m)) for m in messages)
    )
    assert queue.deliver(moto_indexer, moto_indexer.context) == []
    assert not in_flight.gave_up, f"at most {in_flight.most} writes were in flight together"
    assert in_flight.most == concurrency
    items = moto_indexer.client.scan(TableName=moto_indexer.table_name)["Items"]
    assert set(keys) <= {item["objectKey"]["S"] for item in items}
