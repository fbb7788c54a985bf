"""Records of one batch are written concurrently: a batch of 100 costs about one round trip, not 100.

Each PutItem attempt is delayed by a fixed simulated round trip (a `before-send` hook on the handler's
client); written one after another, the batch would take 100 of them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

ROUND_TRIP_S = 0.05


# Alone it takes about 7 round trips; the bound leaves room for a machine busy with other tests and still
# fails a batch written one after another (100) or mostly so.
@pytest.mark.parametrize(("concurrency", "max_round_trips"), [("32", 50), ("1", 1000)])
def test_a_batch_of_100_costs_a_few_round_trips(
    moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch, concurrency: str, max_round_trips: int
) -> None:
    monkeypatch.setenv("WRITE_CONCURRENCY", concurrency)

    def slow_network(**_: Any) -> None:
        time.sleep(ROUND_TRIP_S)

    moto_indexer.runtime.dynamodb.meta.events.register_first("before-send.dynamodb.PutItem", slow_network)
    queue = SqsQueue()
    queue.send(
        *(
            notification(
                *(s3_record("ObjectCreated:Put", f"U{m}_f{r}.txt", sequencer="0A") for r in range(10))
            )
            for m in range(10)
        )
    )
    started = time.perf_counter()
    assert queue.deliver(moto_indexer, moto_indexer.context) == []
    round_trips = (time.perf_counter() - started) / ROUND_TRIP_S
    print(f"WRITE_CONCURRENCY={concurrency}: 100 writes took {round_trips:.1f} round trips")
    if concurrency == "1":
        assert round_trips >= 100  # the control: one writer pays every round trip
    else:
        assert round_trips < max_round_trips, f"{round_trips:.1f} round trips for 100 writes"
