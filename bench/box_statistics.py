"""Measure 13, a bucket only uploads wrote: the plan chosen with the indexer's upload statistics against
the cheapest, from 1,000 to 10,000,000 objects.

The data are measure 13's (uniform over 2017, log-uniform from 1 B to 10 GiB, the default deployment's
16 shards), kept light (a key's shard, size and upload time, entries at the bench's mean stored size),
so ten million fit in memory. The statistics are those the indexer keeps: each key in the sample
(`upload_statistics.upload_sample`) adds its counters. For every bucket box the reader chooses among the
default deployment's plans (the size index filtering time, the bucket's time index filtering size) with
those statistics ("after") and without any ("before": what such a bucket got until the indexer kept
them); each plan's read units are its key ranges' in every shard, read in 1 MB pages
(`models.range_read_units`), exact for the data. The row gives the worst chosen ÷ cheapest over the
shapes, before and after.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from types import SimpleNamespace

from bench import aws, deployment, models
from bench.entries import YEAR_2017, log_uniform_size
from bench.report import Row, progress
from file_index.read.file_queries import BucketQuery, Plan
from file_index.read.reader import FileReader
from file_index.rules import cost, shards, upload_statistics, zorder

ENTRY_BYTES = 310  # the bench's entries' mean stored size (`bench.entries`)
PAGE = 100


class LightBucket:
    """Per shard, the sorted sizes and upload times of `objects` uploads, and the statistics the indexer's
    sample of them leaves."""

    def __init__(self, objects: int, shard_count: int, *, seed: int = 2017) -> None:
        rng = random.Random(seed)
        sizes: list[list[int]] = [[] for _ in range(shard_count)]
        times: list[list[int]] = [[] for _ in range(shard_count)]
        counts: Counter[str] = Counter()
        for index in range(objects):
            key = f"USER{index % 10:03d}/upload-{index:08d}.bin"
            size, moment = log_uniform_size(rng), rng.randint(*YEAR_2017)
            shard = shards.shard_of(key, shard_count)
            sizes[shard].append(size)
            times[shard].append(moment)
            sample = upload_statistics.upload_sample(key, aws.BUCKET, size, moment)
            if sample is not None:
                counts.update(sample[1])
        self.sizes = [array("q", sorted(values)) for values in sizes]
        self.times = [array("q", sorted(values)) for values in times]
        self.statistics = cost.statistics_from_counts(counts)

    def read_units(self, plan: Plan, box: zorder.Box) -> float:
        if plan is Plan.SIZE:
            keys, low = self.sizes, box.min_size or 0
            high = zorder.MAX_SIZE if box.max_size is None else box.max_size
        else:
            keys, low = self.times, box.from_ms or 0
            high = zorder.MAX_TIME_MS if box.to_ms is None else box.to_ms
        return sum(
            models.range_read_units(bisect_right(values, high) - bisect_left(values, low), ENTRY_BYTES)
            for values in keys
        )


def rows(sizes: Sequence[int], shapes: Sequence[tuple[str, zorder.Box, BucketQuery]]) -> list[Row]:
    """One row per size: the worst chosen ÷ cheapest over `shapes` (box_reads.SHAPES: name, box and the
    bucket query of the box), before and after."""
    placement = deployment.shard_placement()  # the default deployment: no Z-order index
    reader = FileReader(SimpleNamespace(meta=SimpleNamespace(client=None), name="model"), placement)
    result: list[Row] = []
    for objects in sizes:
        started = datetime.now(UTC)
        bucket = LightBucket(objects, placement.bucket_shards)
        progress(
            f"box statistics: {objects:,} uploads in {(datetime.now(UTC) - started).total_seconds():.0f} s"
        )
        worst_before: tuple[float, str] = (0.0, "")
        worst_after: tuple[float, str] = (0.0, "")
        for name, box, query in shapes:
            units = {plan: bucket.read_units(plan, box) for plan in reader.plans(query)}
            cheapest = min(units.values())
            before = units[reader.plan(query, page=PAGE)] / cheapest
            after = units[reader.plan(query, statistics=bucket.statistics, page=PAGE)] / cheapest
            worst_before = max(worst_before, (before, name))
            worst_after = max(worst_after, (after, name))
        sampled = bucket.statistics.count if bucket.statistics else 0
        result.append(
            Row.versus(
                f"13. bucket boxes, uploads only (statistics from the indexer's sample), {objects:,} objects",
                "chosen ÷ cheapest, worst",
                worst_after[0],
                worst_before[0],
                "before: no statistics",
                note=f"worst after: {worst_after[1]}; worst before: {worst_before[1]}; the sample stands for "
                f"{sampled:,} entries; read units of each plan's ranges in {placement.bucket_shards} shards",
            )
        )
    return result
