"""With metrics disabled (`POWERTOOLS_METRICS_DISABLED`, as the local stack runs the indexer), the indexer
publishes nothing and keeps nothing: Powertools' disabled flush keeps the metric set, which then grew
until its 100th value of a metric printed an EMF document anyway."""

from __future__ import annotations

from typing import Any

import pytest

from indexer import handler
from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

BATCHES = 12  # of 10 records: past 100 values of IndexLagMs


def test_a_disabled_indexer_prints_no_metrics_and_keeps_none(
    moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    queue = SqsQueue()
    queue.send(
        *(notification(s3_record("ObjectCreated:Put", f"USER001_file{n}.txt")) for n in range(BATCHES * 10))
    )

    assert queue.deliver(moto_indexer, moto_indexer.context) == []

    printed: Any = capsys.readouterr().out
    assert '"_aws"' not in printed, "an EMF document was printed with metrics disabled"
    assert handler.metrics.metric_set == {}
