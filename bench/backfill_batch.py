"""Measure 9: one batch of the backfill state machine, and what it makes of 10 million and 1 billion objects.

The state machine's Distributed Map (`infra/backfill.py`) hands each Express child a batch of listed
objects (`DEFAULT_BACKFILL_BATCH_SIZE`, 500), and the child calls the backfill Lambda's `write_batch`
once. Here the real `backfill.handler.write_batch` writes such a batch, in the exact shape Distributed Map
sends, to a DynamoDB stub that answers every call after an injected round trip (`bench.instrument`), as
measure 2 does: its wall time is what one child takes, its CPU time (`time.process_time`) what this
machine's core spends on it.

The model rows scale that to 10 million and 1 billion objects with the service limits, each an input
named in `bench/README.md` ("On paper"):

- the writers: `MaxConcurrency` children at once, each writing its batch in the measured wall time;
- the bucket's index: one partition of an index takes at most 1,000 write units per second, past which
  DynamoDB throttles the base table's writes (GSI back-pressure); with one shard every entry of a bucket
  lands on one partition of `bucketName-size-index`, with N shards (the deployed `bucketIndexShards`) the
  busiest shard meets the limit first, at the rate measure 11's heat model gives;
- prices: us-east-1 list prices (`PRICES`), on-demand DynamoDB, Lambda on arm64, Step Functions Express
  children, S3 LIST requests;
- the name index (when the default deployment keeps one, `nameIndex`): every backfilled entry also gets
  its name items, its key item and one term item per term of its name, each written in the name table and
  its user GSI (`name_units_per_entry`, over measure 16's people's names); its write units are priced
  with the entries'. Only the price: the measured batch writes no name item (its hours leave them out).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench import aws, deployment, events, instrument
from bench.partition_heat import Kind, sustainable
from bench.report import Row, progress
from file_index.rules.name_items import entry_items
from file_index.rules.placement import ShardPlacement

# infra/config.py and infra/backfill.py: the defaults a deploy gets.
BATCH_SIZE = 500
MAX_CONCURRENCY = 10
LAMBDA_MEMORY_GB = 512 / 1024
# Lambda gives a function CPU in proportion to its memory: one vCPU at 1,769 MB. The batch's CPU time
# on this machine's core is taken as the time a whole vCPU needs (an assumption).
FULL_VCPU_MB = 1769
# One partition of a table or index: 1,000 write units per second (DynamoDB's documented limit).
PARTITION_WRITE_UNITS_PER_SECOND = 1000
S3_LIST_PAGE = 1000
# An entry under 1 KB costs 1 write unit in the table and 1 in each index it enters (the default
# deployment's four): the user's time and size indexes when the key names a user, and the bucket's size
# and time indexes (measure 21, `upload_writes`: 5 units an entry).
WRITE_UNITS_WITH_USER = 5
WRITE_UNITS_WITHOUT_USER = 3
EXPRESS_MEMORY_GB = 64 / 1024  # Express bills duration in 64 MB steps; a child holds only its batch
OBJECT_COUNTS = (10_000_000, 1_000_000_000)
# Files of measure 16's people's names (`bench.name_data`) the name index's write units are averaged over.
NAME_SAMPLE_FILES = 2_000


@dataclass(frozen=True)
class Prices:
    """USD, us-east-1 list prices as of `as_of`."""

    as_of: str = "2025-06"
    dynamodb_per_million_write_units: float = 0.625  # on-demand
    lambda_per_gb_second: float = 0.0000133334  # arm64
    lambda_per_million_requests: float = 0.20
    express_per_million_requests: float = 1.00
    express_per_gb_second: float = 0.00001667
    standard_per_thousand_transitions: float = 0.025
    s3_per_thousand_list_requests: float = 0.005


PRICES = Prices()


def _item(index: int) -> dict[str, object]:
    """One item of the listObjectsV2 reader, as AWS documents it (Etag with its quotes, epoch seconds)."""
    return {
        "Key": events.object_key(index % 20, index),
        "Etag": '"d41d8cd98f00b204e9800998ecf8427e"',
        "Size": 1024 + index,
        "LastModified": 1503220502 + index,
        "StorageClass": "STANDARD",
    }


def batch_event(first: int, items: int) -> dict[str, object]:
    return {
        "BatchInput": {"bucket": aws.BUCKET, "operation": "backfill", "runId": "bench-run"},
        "Items": [_item(index) for index in range(first, first + items)],
    }


@dataclass(frozen=True)
class Backfill:
    """What the model says of one backfill of `objects` objects."""

    objects: int
    hours: float
    hours_without_index_bound: float
    dynamodb_usd: float  # the entries: the table and its indexes
    lambda_usd: float
    step_functions_usd: float
    s3_usd: float
    name_index_usd: float = 0.0  # the entries' name items: the name table and its user GSI

    @property
    def total_usd(self) -> float:
        return (
            self.dynamodb_usd + self.name_index_usd + self.lambda_usd + self.step_functions_usd + self.s3_usd
        )


def lambda_batch_seconds(wall_seconds: float, cpu_seconds: float) -> float:
    """A batch's duration in a 512 MB Lambda: its wall time, or its CPU time at a share of a vCPU."""
    return max(wall_seconds, cpu_seconds * FULL_VCPU_MB / (LAMBDA_MEMORY_GB * 1024))


def name_units_per_entry(placement: ShardPlacement, files: int = NAME_SAMPLE_FILES) -> tuple[float, float]:
    """Mean write units and items the name index takes per backfilled entry, over `files` of measure 16's
    names: the items a backfill puts (`NameIndex.put_entry(entry, None)`: the key item and the term items),
    each written in the name table and again in its user GSI (`name_writes.units`)."""
    from bench.name_checks import file_entry
    from bench.name_data import make_files
    from bench.name_writes import units

    sample, _ = make_files(files, seed=16)  # measure 16's write rows' seed
    written = [entry_items(file_entry(file, placement, n), "") for n, file in enumerate(sample)]
    return (
        sum(units(item) for items in written for item in items) / len(written),
        sum(len(items) for items in written) / len(written),
    )


def model(
    objects: int,
    batch_seconds: float,
    prices: Prices = PRICES,
    *,
    index_bound: float = PARTITION_WRITE_UNITS_PER_SECOND,
    name_units: float = 0.0,
) -> Backfill:
    """`index_bound`: the objects/s the bucket's index sustains (one partition: 1,000; sharded: more).
    `name_units`: the name index's write units per entry (`name_units_per_entry`; 0: no name index)."""
    batches = math.ceil(objects / BATCH_SIZE)
    writers_rate = MAX_CONCURRENCY * BATCH_SIZE / batch_seconds
    rate = min(writers_rate, index_bound)
    gb_seconds = batches * batch_seconds * LAMBDA_MEMORY_GB
    return Backfill(
        objects=objects,
        hours=objects / rate / 3600,
        hours_without_index_bound=objects / writers_rate / 3600,
        dynamodb_usd=objects * WRITE_UNITS_WITH_USER / 1e6 * prices.dynamodb_per_million_write_units,
        name_index_usd=objects * name_units / 1e6 * prices.dynamodb_per_million_write_units,
        lambda_usd=gb_seconds * prices.lambda_per_gb_second
        + batches / 1e6 * prices.lambda_per_million_requests,
        # Each child is one Express execution of about the batch's duration; the Standard parent's few
        # states are a rounding error.
        step_functions_usd=batches / 1e6 * prices.express_per_million_requests
        + batches * batch_seconds * EXPRESS_MEMORY_GB * prices.express_per_gb_second,
        s3_usd=math.ceil(objects / S3_LIST_PAGE) / 1000 * prices.s3_per_thousand_list_requests,
    )


def run(*, latency_ms: float, repeats: int) -> list[Row]:
    from backfill.handler import cold_start, write_batch

    placement = deployment.shard_placement()
    # The attributes Powertools reads of Lambda's context object.
    context: Any = aws.BenchLambdaContext(function_name="backfill", memory_limit_in_mb=512)
    walls: list[float] = []
    cpus: list[float] = []
    with (
        aws.fake_credentials(),
        aws.environment({"TABLE_NAME": "FileMetaData", "BUCKET_NAME": aws.BUCKET, **placement.to_env()}),
        instrument.instant_dynamodb(),
    ):
        write_batch(batch_event(10_000_000, 10), context)  # cold start outside the timings
        concurrency = cold_start().config.write_concurrency
        progress(f"backfill batch: {BATCH_SIZE} items, {latency_ms:g} ms per DynamoDB call, {repeats} runs")
        with instrument.dynamodb_latency(latency_ms / 1000):
            for attempt in range(repeats):
                event = batch_event(attempt * BATCH_SIZE, BATCH_SIZE)
                with instrument.recording() as log:
                    wall, cpu = time.perf_counter(), time.process_time()
                    counts = write_batch(event, context)
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                if counts.get("written") != BATCH_SIZE:
                    raise RuntimeError(f"the batch wrote {counts}, not {BATCH_SIZE} items")
    wall_s, cpu_s = statistics.median(walls), statistics.median(cpus)
    floor_s = math.ceil(BATCH_SIZE / concurrency) * latency_ms / 1000
    requests = log.count("dynamodb")
    rows = [
        Row(
            f"9. backfill write_batch of {BATCH_SIZE}, {latency_ms:g} ms/call",
            "ms",
            wall_s * 1000,
            floor_s * 1000,
            f"{BATCH_SIZE}/{concurrency} round trips",
            wall_s / floor_s,
            f"ours ÷ floor; {concurrency} writes in flight; {requests} DynamoDB requests per batch "
            f"({', '.join(f'{op} {n}' for op, n in log.by_operation('dynamodb').items())}); "
            f"CPU {cpu_s * 1000:.0f} ms per batch; median of {repeats}",
        ),
    ]
    today = datetime.now(UTC).date().isoformat()
    batch_s = lambda_batch_seconds(wall_s, cpu_s)
    shards = placement.bucket_shards
    if shards == 1:
        index_bound = float(PARTITION_WRITE_UNITS_PER_SECOND)
        bound = (
            f"{PARTITION_WRITE_UNITS_PER_SECOND:,} writes/s on the bucket's one partition of "
            "bucketName-size-index"
        )
    else:
        # The busiest shard meets the partition limit first: the heat model's rate for new objects.
        progress(f"backfill batch: the bucket index's bound over {shards} shards (heat model)")
        index_bound = sustainable(
            ShardPlacement(bucket_shards=shards), Kind.NEW, hot_user=False, guess=900 * shards, seconds=3
        ).rate
        bound = (
            f"{index_bound:,.0f} new entries/s on bucketName-size-index's {shards} shards (measure 11's "
            f"heat model: the busiest shard at {PARTITION_WRITE_UNITS_PER_SECOND:,} writes/s)"
        )
    name_units, name_items = 0.0, 0.0
    if deployment.stack_config().name_index:
        progress(f"backfill batch: the name index's write units per entry ({NAME_SAMPLE_FILES:,} names)")
        name_units, name_items = name_units_per_entry(placement)
    for objects in OBJECT_COUNTS:
        backfill = model(objects, batch_s, index_bound=index_bound, name_units=name_units)
        one_partition = model(objects, batch_s)
        binding = "the index" if backfill.hours > backfill.hours_without_index_bound else "the writers"
        label = f"{objects:,}"
        rows.append(
            Row.versus(
                f"10. state machine backfill of {label} objects (model)",
                "hours",
                backfill.hours,
                one_partition.hours,
                "0.2.0 placement: one partition",
                note=f"0.2.0 ÷ ours; {backfill.hours / 24:.1f} days, bound by {binding} (the "
                f"{MAX_CONCURRENCY} writers alone: {backfill.hours_without_index_bound:.2f} h); index: "
                f"{bound}; batches of {BATCH_SIZE}, "
                f"MaxConcurrency {MAX_CONCURRENCY}, {batch_s * 1000:.0f} ms per batch in a 512 MB Lambda "
                f"(measured above: the larger of its wall time and its CPU time at 512/{FULL_VCPU_MB} "
                "of a vCPU)",
            )
        )
        names = (
            f"name index {backfill.name_index_usd:,.2f} ({name_units:.1f} WRU/entry: the key item and "
            f"{name_items - 1:.1f} term items of measure 16's names, each also in the user GSI)"
            if name_units
            else "no name index"
        )
        rows.append(
            Row(
                f"10. state machine backfill of {label} objects (model)",
                "USD",
                backfill.total_usd,
                None,
                "",
                None,
                f"DynamoDB: entries {backfill.dynamodb_usd:,.2f} ({WRITE_UNITS_WITH_USER} WRU/entry), "
                f"{names}; Lambda {backfill.lambda_usd:,.2f}, Step Functions Express "
                f"{backfill.step_functions_usd:,.2f}, "
                f"S3 LIST {backfill.s3_usd:,.2f}; us-east-1 list prices as of {PRICES.as_of} "
                f"(model run {today})",
            )
        )
    return rows
