"""The planner knows what a bucket with churn holds: the indexer's statistics take off what deletes and
overwrites remove, so a box reads near the cheapest plan where counting uploads alone sent it to the wrong
index.

The bucket keeps 1,000 large files (1 MiB to 1 GiB, over 2017), 300 of them overwritten in November's last
days; in December it had 3,000 small temporary files (at most 64 KiB), each deleted an hour after it was
written. Through the real indexer (moto) in the default deployment's placement. Counted on upload only, the
statistics said most files are small and of that month (the planner counts time by month), so "December, at
least 1 MiB" went to the size index and read every large file for the month's few (as a reviewer found of
a week's box: 5,051 items read for 20).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from bench.box_reads import bucket_query as bench_query
from bench.box_reads import read_whole
from bench.memory_table import MemoryTable
from file_index.read.file_queries import BucketQuery
from file_index.read.reader import FileReader
from file_index.rules import cost, schema, upload_statistics, zorder
from file_index.rules.objects import iso_utc_millis
from file_index.rules.placement import ShardPlacement
from file_index.store.state import IndexStateStore, State, effective_state
from tests.integration.indexer.conftest import BUCKET, Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

pytestmark = pytest.mark.xdist_group("upload-statistics")
PLACEMENT = ShardPlacement(bucket_shards=16)  # the default deployment's
KEPT, TEMPORARY, OVERWRITTEN = 1000, 3000, 300
YEAR_START = datetime(2017, 1, 1, tzinfo=UTC)
OVERWRITES = datetime(2017, 11, 26, tzinfo=UTC)
DECEMBER = datetime(2017, 12, 1, tzinfo=UTC)
LAST_WEEK = datetime(2017, 12, 24, tzinfo=UTC)
MiB = 1024**2
PAGE = 100


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def box(start: datetime, end: datetime, min_size: int | None, max_size: int | None = None) -> BucketQuery:
    shape = zorder.Box(from_ms=ms(start), to_ms=ms(end) - 1, min_size=min_size, max_size=max_size)
    return replace(bench_query(shape), bucket=BUCKET)


BOXES = {
    "December, at least 1 MiB": box(DECEMBER, datetime(2018, 1, 1, tzinfo=UTC), MiB),
    "December's last week, any size": box(LAST_WEEK, LAST_WEEK + timedelta(days=7), None),
    "November's last week, at least 1 MiB": box(OVERWRITES, DECEMBER, MiB),
    "August, at least 1 MiB": box(datetime(2017, 8, 1, tzinfo=UTC), datetime(2017, 9, 1, tzinfo=UTC), MiB),
    "the year, 1-2 MiB": box(YEAR_START, datetime(2018, 1, 1, tzinfo=UTC), MiB, 2 * MiB),
    "the year, at least 512 MiB": box(YEAR_START, datetime(2018, 1, 1, tzinfo=UTC), 512 * MiB),
}


def churn() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bucket's events in the order S3 sent them, and the creates among them (what uploads counted)."""
    rng = random.Random(35)
    timed: list[tuple[datetime, str, str, int]] = []
    for n in range(KEPT + OVERWRITTEN):
        # The first KEPT over the year; then OVERWRITTEN of them again, in November's last days.
        moment = YEAR_START + timedelta(seconds=rng.randrange(364 * 86_400))
        if n >= KEPT:
            moment = OVERWRITES + timedelta(seconds=rng.randrange(4 * 86_400))
        key = f"USER{n % 10:03d}_kept{n % KEPT:05d}.bin"
        timed.append((moment, "ObjectCreated:Put", key, int(MiB * 1024 ** rng.random())))
    for n in range(TEMPORARY):
        moment = DECEMBER + timedelta(seconds=rng.randrange(30 * 86_400))
        key = f"USER{n % 10:03d}_tmp{n:05d}.log"
        timed.append((moment, "ObjectCreated:Put", key, rng.randrange(1, 64 * 1024)))
        timed.append((moment + timedelta(hours=1), "ObjectRemoved:Delete", key, 0))
    timed.sort(key=lambda event: event[0])
    records = [
        s3_record(name, key, sequencer=f"{number + 1:016X}", size=size, event_time=iso_utc_millis(moment))
        for number, (moment, name, key, size) in enumerate(timed)
    ]
    return records, [record for record in records if record["eventName"].startswith("ObjectCreated:")]


def counted_on_upload(creates: list[dict[str, Any]]) -> cost.IndexStatistics | None:
    """The statistics uploads alone made (what the indexer counted before it took deletes off)."""
    total: Counter[str] = Counter()
    for record in creates:
        moment = datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00"))
        sample = upload_statistics.upload_sample(
            record["s3"]["object"]["key"], BUCKET, record["s3"]["object"]["size"], ms(moment)
        )
        if sample is not None:
            total.update(sample[1])
    return cost.statistics_from_counts(total)


def test_deletes_and_overwrites_keep_the_statistics_true_and_every_box_near_the_cheapest(
    moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in PLACEMENT.to_env().items():
        monkeypatch.setenv(name, value)
    records, creates = churn()
    queue = SqsQueue()
    queue.send(*(notification(*records[start : start + 10]) for start in range(0, len(records), 10)))
    assert queue.deliver(moto_indexer, moto_indexer.context) == []

    store = IndexStateStore(moto_indexer.client, moto_indexer.table_name)
    statistics = effective_state(
        store.read(BUCKET, upload_counts=True), BUCKET, State.READY
    ).index_statistics()
    assert statistics is not None
    # An estimate of what the bucket holds (its 1,000 files), no longer of the 4,300 uploads.
    assert 0.6 * KEPT <= statistics.count <= 1.4 * KEPT
    uploads_only = counted_on_upload(creates)
    assert uploads_only is not None
    assert uploads_only.count > 3 * KEPT

    items = [
        item
        for page in moto_indexer.client.get_paginator("scan").paginate(TableName=moto_indexer.table_name)
        for item in page["Items"]
    ]
    table = MemoryTable(moto_indexer.table_name, _plain(items), schema.global_indexes())
    reader = FileReader(table, PLACEMENT)
    ratios: dict[str, float] = {}
    ratios_on_upload: dict[str, float] = {}
    for name, query in BOXES.items():
        forced = {
            plan: read_whole(reader, table, query, page=PAGE, plan=plan) for plan in reader.plans(query)
        }
        assert len({reading.returned for reading in forced.values()}) == 1
        cheapest = min(reading.read_units for reading in forced.values())
        ratios[name] = forced[reader.plan(query, statistics=statistics, page=PAGE)].read_units / cheapest
        chosen_before = reader.plan(query, statistics=uploads_only, page=PAGE)
        ratios_on_upload[name] = forced[chosen_before].read_units / cheapest
    assert max(ratios.values()) <= 1.25, ratios
    # Counted on upload only, December's few large files were found by reading every large file.
    # (4.6x the cheapest plan's read units: the 16 shards' queries make a floor both plans pay.)
    assert ratios_on_upload["December, at least 1 MiB"] > 3, ratios_on_upload


def _plain(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    deserializer = boto3.dynamodb.types.TypeDeserializer()
    return [{name: deserializer.deserialize(value) for name, value in item.items()} for item in items]
