"""Measure 2: wall time of one indexer batch when every DynamoDB call costs a fixed round trip.

A remote DynamoDB spends its time on the network and on AWS's side, not on the Lambda's CPU. To model
that, DynamoDB answers from a stub (`instrument.instant_dynamodb`) after an injected sleep per call
(`instrument.dynamodb_latency`); an in-process emulator would instead burn this machine's CPU under the
GIL and hide the effect being measured. Three writers index the same kind of batch (all new keys):

- ours: the real `indexer.handler.lambda_handler`, which writes a batch's keys concurrently
  (`WRITE_CONCURRENCY` writes in flight, 32 by default);
- the same handler with one write in flight (`WRITE_CONCURRENCY=1`, a cold start of its own): every
  write pays its round trip, so a batch of n costs about n;
- sequential: the same parser and writer (`indexer.events.parse_message`,
  `file_index.write.writer.apply_event`) called one event after the other;
- the guideline's listener, one message at a time (a read and a write per event).

The floor is one round trip: no writer that calls DynamoDB at all can finish a batch faster. The handler's
two settings are also given in round trips (wall time ÷ the injected latency).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from bench import aws, events, instrument
from bench.report import Measured, Row, progress
from file_index.rules import schema

ONE_WRITER = "ours, WRITE_CONCURRENCY=1"


class _Counter:
    """Hands out disjoint key ranges, so every write of every run is a real write."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, count: int) -> list[events.S3Event]:
        batch = events.creates(count, first=self.next)
        self.next += count
        return batch


def _samples_ms(run_once: Callable[[], None], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run_once()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def run(*, latency_ms: float, batch_sizes: list[int], repeats: int) -> Measured:
    import boto3

    from bench.guideline_listener import GuidelineListener
    from file_index.rules.key_pattern import KeyPattern
    from file_index.store.sdk import dynamodb_client, s3_client
    from file_index.write.writer import apply_event
    from indexer.events import parse_message
    from indexer.handler import cold_start, lambda_handler

    rows: list[Row] = []
    # The chart's data: per writer, per batch size, every run's wall time.
    chart: dict[str, Any] = {"latencyMs": latency_ms, "batchSizes": batch_sizes, "ms": {}}
    keys = _Counter()
    context = aws.BenchLambdaContext()
    with (
        aws.fake_credentials(),
        aws.environment({"TABLE_NAME": schema.TABLE_NAME, "BUCKET_NAME": aws.BUCKET}),
        instrument.instant_dynamodb(),
    ):
        key_pattern = KeyPattern.parse(None)
        writer_client = dynamodb_client()
        # Read only for a permanent version delete, which the batches here do not hold.
        s3 = s3_client()
        guideline = GuidelineListener(boto3.resource("dynamodb").Table("FileMetaDataGuideline"))
        lambda_handler(events.sqs_event(keys.take(10)), context)  # cold start outside the timings
        concurrency = cold_start().config.write_concurrency
        one_writer: dict[int, list[float]] = {}
        with aws.environment({"WRITE_CONCURRENCY": "1"}):
            _start_cold()
            lambda_handler(events.sqs_event(keys.take(10)), context)
            assert cold_start().config.write_concurrency == 1
            with instrument.dynamodb_latency(latency_ms / 1000):
                for size in batch_sizes:
                    progress(f"batch latency: {size} records, one write in flight, {repeats} runs")

                    def alone(size: int = size) -> None:
                        lambda_handler(events.sqs_event(keys.take(size)), context)

                    one_writer[size] = _samples_ms(alone, repeats)
        _start_cold()
        lambda_handler(events.sqs_event(keys.take(10)), context)

        with instrument.dynamodb_latency(latency_ms / 1000):
            for size in batch_sizes:
                progress(
                    f"batch latency: {size} records, {latency_ms:g} ms per DynamoDB call, {repeats} runs"
                )

                def ours(size: int = size) -> None:
                    lambda_handler(events.sqs_event(keys.take(size)), context)

                def sequential(size: int = size) -> None:
                    for event in keys.take(size):
                        for parsed in parse_message(event.message_body(), key_pattern):
                            apply_event(writer_client, schema.TABLE_NAME, parsed, s3=s3)

                def listener(size: int = size) -> None:
                    guideline.process(event.message_body() for event in keys.take(size))

                runs = {
                    "concurrent (ours)": _samples_ms(ours, repeats),
                    ONE_WRITER: one_writer[size],
                    "sequential, same writer": _samples_ms(sequential, repeats),
                    "guideline listener": _samples_ms(listener, repeats),
                }
                for writer, samples in runs.items():
                    chart["ms"].setdefault(writer, []).append(samples)
                ours_ms, one_writer_ms, sequential_ms, guideline_ms = (
                    statistics.median(v) for v in runs.values()
                )
                floor = f"floor {latency_ms:g} ms (one round trip); {concurrency} writes in flight at most"
                rows.append(
                    Row.versus(
                        f"2. indexer batch of {size}, {latency_ms:g} ms/call",
                        "ms",
                        ours_ms,
                        sequential_ms,
                        "sequential, same writer",
                        note=f"sequential ÷ ours; {floor}; median of {repeats}",
                    )
                )
                rows.append(
                    Row.versus(
                        f"2. indexer batch of {size}, {latency_ms:g} ms/call",
                        "ms",
                        ours_ms,
                        guideline_ms,
                        "guideline listener",
                        note="guideline ÷ ours; read + write per event, concurrency 1",
                    )
                )
                if latency_ms <= 0:
                    continue  # no round trip to count in
                rows.append(
                    Row.versus(
                        f"2. indexer batch of {size}, {latency_ms:g} ms/call",
                        "round trips",
                        ours_ms / latency_ms,
                        one_writer_ms / latency_ms,
                        ONE_WRITER,
                        note=f"one writer ÷ ours; the same handler, WRITE_CONCURRENCY={concurrency} "
                        f"against 1; wall time ÷ {latency_ms:g} ms; median of {repeats}",
                    )
                )
    return Measured(rows, {"batch_latency": chart})


def _start_cold() -> None:
    """Make the indexer's next invocation a cold start (configuration, clients, thread pool afresh)."""
    from indexer.handler import cold_start

    if cold_start.cache_info().currsize:
        cold_start().executor.shutdown()
    cold_start.cache_clear()
