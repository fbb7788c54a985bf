"""The planner knows a bucket only uploads wrote: the indexer keeps statistics of a sample of its uploads,
and with them every box (time x size) reads at most 1.25x the read units of the cheapest plan.

4,000 uploads go through the real indexer (moto) in the default deployment's placement (16 bucket shards, the
bucket's time index, no Z-order index), uniform over 2017 in time and log-uniform from 1 B to 10 GiB in
size (the bench's data). Each box of the bench's measure 13 is then read whole on every plan the
deployment has, forced, and on the plan the reader chooses with the statistics the state store reads;
the read units are billed as DynamoDB bills them (`bench.memory_table`, over the entries the indexer
wrote).
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from bench.box_reads import SHAPES, read_whole
from bench.box_reads import bucket_query as bench_query
from bench.entries import log_uniform_size
from bench.memory_table import MemoryTable
from file_index.read.file_queries import BucketQuery, Plan
from file_index.read.reader import FileReader
from file_index.rules import schema, upload_statistics
from file_index.rules.objects import iso_utc_millis
from file_index.rules.placement import ShardPlacement
from file_index.store.state import IndexStateStore, Operation, State, effective_state
from tests.integration.indexer.conftest import BUCKET, Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

# One worker runs the three tests, so the uploads are indexed once (`uploaded`).
pytestmark = pytest.mark.xdist_group("upload-statistics")
UPLOADS = 4000
PLACEMENT = ShardPlacement(bucket_shards=16)  # the default deployment's
YEAR_START_MS = int(datetime(2017, 1, 1, tzinfo=UTC).timestamp() * 1000)
YEAR_MS = 365 * 86_400_000
PAGE = 100


# The table the indexer wrote for the 4,000 uploads, item for item: indexed once per worker, then copied into
# each later test's fresh moto table (a batch write of the same items, instead of 15 s of indexing again).
_indexed_items: list[dict[str, Any]] = []


@pytest.fixture
def uploaded(moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch) -> Indexer:
    for name, value in PLACEMENT.to_env().items():
        monkeypatch.setenv(name, value)
    if _indexed_items:
        table = boto3.resource("dynamodb").Table(moto_indexer.table_name)
        with table.batch_writer() as batch:
            for item in _indexed_items:
                batch.put_item(Item=item)
        return moto_indexer
    rng = random.Random(2017)
    records = []
    for number in range(UPLOADS):
        moment = datetime.fromtimestamp((YEAR_START_MS + rng.randrange(YEAR_MS)) / 1000, tz=UTC)
        records.append(
            s3_record(
                "ObjectCreated:Put",
                f"USER{number % 10:03d}_f{number:05d}.bin",
                sequencer=f"{number + 1:016X}",
                size=log_uniform_size(rng),
                event_time=iso_utc_millis(moment),
            )
        )
    queue = SqsQueue()
    queue.send(*(notification(*records[start : start + 10]) for start in range(0, UPLOADS, 10)))
    assert queue.deliver(moto_indexer, moto_indexer.context) == []
    _indexed_items.extend(_scan(moto_indexer))
    return moto_indexer


def _scan(indexer: Indexer) -> list[dict[str, Any]]:
    """Every item of the indexer's table, as plain Python values (the resource's client answers them)."""
    table = boto3.resource("dynamodb").Table(indexer.table_name)
    items: list[dict[str, Any]] = []
    for page in table.meta.client.get_paginator("scan").paginate(TableName=indexer.table_name):
        items.extend(page["Items"])
    return items


def bucket_query(box: Any) -> BucketQuery:
    return replace(bench_query(box), bucket=BUCKET)


def entries(indexer: Indexer) -> MemoryTable:
    return MemoryTable(indexer.table_name, _scan(indexer), schema.global_indexes())


def test_uploads_alone_give_the_planner_statistics_and_every_box_reads_near_the_cheapest(
    uploaded: Indexer,
) -> None:
    store = IndexStateStore(uploaded.client, uploaded.table_name)
    state = effective_state(store.read(BUCKET, upload_counts=True), BUCKET, State.READY)
    statistics = state.index_statistics()
    assert statistics is not None
    # About one upload in a hundred is counted, a hundred times: an estimate of the whole.
    assert 0.6 * UPLOADS <= statistics.count <= 1.4 * UPLOADS
    assert state.to_json()["statistics"]["source"] == "uploads"

    table = entries(uploaded)
    reader = FileReader(table, PLACEMENT)
    ratios: dict[str, float] = {}
    ratios_without: dict[str, float] = {}
    for shape in SHAPES:
        query = bucket_query(shape.box)
        forced = {
            plan: read_whole(reader, table, query, page=PAGE, plan=plan) for plan in reader.plans(query)
        }
        assert len({reading.returned for reading in forced.values()}) == 1  # every plan answers the same
        cheapest = min(reading.read_units for reading in forced.values())
        chosen = reader.plan(query, statistics=statistics, page=PAGE)
        ratios[shape.name] = forced[chosen].read_units / cheapest
        ratios_without[shape.name] = forced[reader.plan(query, page=PAGE)].read_units / cheapest
    assert max(ratios.values()) <= 1.25, ratios
    # Without statistics (what such a bucket had before) some box read far more than it needed.
    assert max(ratios_without.values()) > 1.25, ratios_without


def test_a_reconcile_never_leaves_the_planner_without_statistics(uploaded: Indexer) -> None:
    store = IndexStateStore(uploaded.client, uploaded.table_name)
    before = effective_state(store.read(BUCKET, upload_counts=True), BUCKET, State.READY).index_statistics()
    assert before is not None

    # A reconcile starts: the record is BUILDING and holds none of the run's statistics yet.
    store.start(BUCKET, Operation.RECONCILE, "run-1")
    during = store.read(BUCKET, upload_counts=True)
    assert during is not None
    assert during.state is State.BUILDING
    assert during.index_statistics() == before
    # It ends with statistics of its own listing: those are the planner's, the uploads' stay kept.
    store.add_progress(BUCKET, "run-1", {"listed": 2}, statistics={"entries": 2, "bytes": 600, "size3": 2})
    store.finish(BUCKET, "run-1")
    after = store.read(BUCKET, upload_counts=True)
    assert after is not None
    finished = after.index_statistics()
    assert finished is not None
    assert finished.count == 2
    assert after.upload_counts == during.upload_counts


def test_the_statistics_items_are_skipped_by_every_scan_and_no_search_returns_them(uploaded: Indexer) -> None:
    from file_index.rules.objects import is_record_key

    keys = upload_statistics.statistics_keys(BUCKET)
    found = uploaded.client.batch_get_item(
        RequestItems={uploaded.table_name: {"Keys": [{schema.OBJECT_KEY: {"S": key}} for key in keys]}}
    )["Responses"][uploaded.table_name]
    assert found
    assert all(is_record_key(item[schema.OBJECT_KEY]["S"]) for item in found)
    assert not any(attribute in item for item in found for attribute in schema.GSI_KEY_ATTRIBUTES)
    # No item takes much more than its share of the writes: the sample is spread over the items.
    assert len(found) == upload_statistics.STATISTICS_SHARDS
    reader = FileReader(entries(uploaded), PLACEMENT)
    page = reader.list_files(bucket_query(SHAPES[1].box), limit=1000, plan=Plan.SIZE)
    assert not any(is_record_key(item[schema.OBJECT_KEY]) for item in page.items)
