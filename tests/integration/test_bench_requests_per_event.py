"""Measure 1 end to end, in its own interpreter as `python -m bench` runs it, on a stream long enough that
the indexer writes an upload statistics item (a sampled upload, one in `SAMPLE_ONE_IN`): the measure's
scan of the table meets that record and must skip it, not end in `KeyError: 'size'`."""

from __future__ import annotations

from bench import events
from bench.runner import run_isolated
from file_index.rules.upload_statistics import sampled

KEYS = 100


def test_measure_1_reads_its_table_past_the_indexers_records() -> None:
    stream = events.event_stream(keys=KEYS)
    assert any(event.is_create and sampled(event.key) is not None for event in stream)

    measured = run_isolated("requests_per_event", {"keys": KEYS}, timeout=300)

    requests, wrong = measured.rows
    assert requests.measure == "1. DynamoDB requests per S3 event"
    assert "UpdateItem" in requests.note  # the statistics item was written, so the scan met it
    assert requests.ours is not None
    assert 1 <= requests.ours < 1.1
    assert wrong.measure == "1. keys indexed wrong after that stream"
    assert wrong.ours == 0
