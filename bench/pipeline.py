"""Measure 15: how many records per second the indexer's deployment drains, from measured CPU per record.

The CPU per record is measured as in measure 6 (`throughput.measure_cpu`: the real handler, DynamoDB
answered at once by a stub, Powertools logging and metrics on), once with each deployment's batch size
and shard placement. The deployment's sizing (memory, batch, maximum concurrency of the SQS event source)
is read from `cdk.json` through the CDK app's configuration (`bench.deployment`), and the arithmetic is
the app's own (`infra.sizing.IndexerSizing.records_per_second`):

    vCPU share   = min(memory MB / 1,769, 1)          Lambda: one vCPU at 1,769 MB, in proportion below
    per instance = min(vCPU share / CPU per record, write concurrency / write latency)
    records/s    = maximum concurrency x per instance

Assumption: this machine's core is worth one Lambda vCPU. Before: the 0.2.0 deployment (256 MB, batches
of 50, 10 concurrent batches, the 0.2.0 shard placement); after: the default deployment.
"""

from __future__ import annotations

from bench import deployment
from bench.report import Row, progress
from bench.throughput import measure_cpu
from file_index.rules.placement import ShardPlacement
from indexer.config import DEFAULT_WRITE_CONCURRENCY
from infra.sizing import LAMBDA_MB_PER_VCPU, WRITE_LATENCY_SECONDS, IndexerSizing

BEFORE = IndexerSizing(memory_mb=256, batch_size=50, max_batching_window_seconds=2, max_concurrency=10)
TARGET_RECORDS_PER_SECOND = 10_000


def _arithmetic(sizing: IndexerSizing, cpu_per_record: float) -> str:
    cpu_bound = sizing.vcpu_share / cpu_per_record
    write_bound = DEFAULT_WRITE_CONCURRENCY / WRITE_LATENCY_SECONDS
    return (
        f"{sizing.memory_mb:,} MB = {sizing.vcpu_share:.3f} vCPU (1 at {LAMBDA_MB_PER_VCPU:,} MB) / "
        f"{cpu_per_record * 1e6:.0f} µs per record = {cpu_bound:,.0f}/s per instance (write bound "
        f"{DEFAULT_WRITE_CONCURRENCY} in flight / {WRITE_LATENCY_SECONDS * 1000:g} ms = "
        f"{write_bound:,.0f}/s) "
        f"x {sizing.max_concurrency} concurrent batches of {sizing.batch_size}"
    )


def run(*, records: int) -> list[Row]:
    after = deployment.indexer_sizing()
    placement = deployment.shard_placement()
    progress(f"pipeline: {records} records, batches of {BEFORE.batch_size}, 0.2.0 placement")
    cpu_before = measure_cpu(records, batch_size=BEFORE.batch_size, placement=ShardPlacement()) / records
    progress(f"pipeline: {records} records, batches of {after.batch_size}, the default placement")
    cpu_after = measure_cpu(records, batch_size=after.batch_size, placement=placement) / records
    rate_before = BEFORE.records_per_second(cpu_before)
    rate_after = after.records_per_second(cpu_after)
    verdict = "meets" if rate_after >= TARGET_RECORDS_PER_SECOND else "MISSES"
    return [
        Row(
            "15. indexer CPU per record, DynamoDB stubbed",
            "µs/record",
            cpu_after * 1e6,
            cpu_before * 1e6,
            f"0.2.0: batches of {BEFORE.batch_size}, 0.2.0 placement",
            cpu_before / cpu_after,
            f"before ÷ after; {records} records each; after: batches of {after.batch_size}, "
            f"{placement.bucket_shards} bucket shards, {len(placement.hot_users)} hot users, "
            f"multiAttributeIndex {str(placement.multi_attribute_index).lower()}; this machine's core",
        ),
        Row(
            "15. indexer records/s, default deployment (model)",
            "records/s",
            rate_after,
            rate_before,
            "0.2.0: 256 MB, 10 concurrent batches",
            rate_after / rate_before,
            f"after ÷ before (higher is better); after: {_arithmetic(after, cpu_after)}; before: "
            f"{_arithmetic(BEFORE, cpu_before)}; {verdict} the {TARGET_RECORDS_PER_SECOND:,} records/s "
            "target; assumes this machine's core is worth one Lambda vCPU",
        ),
    ]
