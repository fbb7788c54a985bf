"""Measure 12: what the sharded bucket listing costs per page, against today's single Query.

The same `objects` uploads to one bucket are written twice by the writer's own `entry_item`: once
under one shard (the 0.2.0 placement), once under the default deployment's shard count, each into its own
moto table. The real `FileReader` then lists the bucket (`GET /files?bucket=B`, largest first) a page
at a time, for each page size, and the rows give what a page read (DynamoDB's `ScannedCount`) and how
many Queries it made, for the first page and the one after it (through the cursor). Every count is
checked against DynamoDB's own answers (`bench.reading.checked_page`).

What it shows: one shard reads exactly the items it returns in one Query; N shards make at least N
Queries a page (one per shard, run in parallel) and read ahead up to `shards.fair_share` items of each,
so a small page reads several times what it returns, a large one close to it.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from bench import aws, deployment, reading
from bench.entries import YEAR_2017, create_event, entry, log_uniform_size
from bench.report import Row, progress
from file_index.read.file_queries import BucketQuery, Page
from file_index.rules.placement import ShardPlacement

USERS = 50


def _items(objects: int, placement: ShardPlacement) -> list[dict[str, object]]:
    rng = random.Random(12)
    items = []
    for index in range(objects):
        user = f"USER{index % USERS:03d}"
        key = f"{user}/upload-{index:07d}.bin"
        moment = datetime.fromtimestamp(rng.randint(*YEAR_2017) / 1000, tz=UTC)
        # Sizes from a few values, so many entries tie on the sort key as in a real bucket.
        size = log_uniform_size(rng) if index % 2 else 1024 * rng.randint(1, 8)
        event = create_event(bucket=aws.BUCKET, key=key, user=user, size=size, moment=moment, sequence=index)
        items.append(entry(event, event.order_key, placement))
    return items


def _two_pages(files: reading.FileReader, limit: int) -> tuple[Page, Page | None]:
    query = BucketQuery(aws.BUCKET)
    first = reading.checked_page(files, query, limit=limit)
    if first.next_cursor is None:
        return first, None
    return first, reading.checked_page(files, query, limit=limit, start=first.next_cursor)


def run(*, objects: int, page_sizes: list[int]) -> list[Row]:
    from moto import mock_aws

    sharded = deployment.shard_placement()
    single = ShardPlacement()
    rows: list[Row] = []
    with aws.fake_credentials(), mock_aws():
        progress(f"fan-out: {objects} entries under 1 and {sharded.bucket_shards} shards, moto")
        tables = {
            placement.bucket_shards: reading.load(
                f"FileMetaData{placement.bucket_shards}",
                _items(objects, placement),
                multi_attribute_index=False,
            )
            for placement in (single, sharded)
        }
        for limit in page_sizes:
            progress(f"fan-out: pages of {limit}")
            with reading.reader(tables[1], single) as files:
                one, one_next = _two_pages(files, limit)
            with reading.reader(tables[sharded.bucket_shards], sharded) as files:
                many, many_next = _two_pages(files, limit)
            # Ties on size may come in another order across shards; the sizes must agree.
            if [item["size"] for item in one.items] != [item["size"] for item in many.items]:
                raise RuntimeError(f"the sharded first page of {limit} differs from the single one")
            later = ""
            if one_next is not None and many_next is not None:
                later = (
                    f"; next page: {many_next.scanned_count} read in {many_next.request_count} Queries "
                    f"(1 shard: {one_next.scanned_count} in {one_next.request_count})"
                )
            shards = sharded.bucket_shards
            rows.append(
                Row.versus(
                    f"12. bucket listing, page of {limit}, {shards} shards vs 1: items read",
                    "items read/page",
                    many.scanned_count,
                    one.scanned_count,
                    "1 shard",
                    note=f"1 shard ÷ {shards}; {len(many.items)} returned; {objects:,} entries; "
                    f"{many.scanned_count / max(1, len(many.items)):.2f} read per item returned{later}",
                )
            )
            rows.append(
                Row.versus(
                    f"12. bucket listing, page of {limit}, {shards} shards vs 1: Queries",
                    "Queries/page",
                    many.request_count,
                    one.request_count,
                    "1 shard",
                    note=f"1 shard ÷ {shards}; the {shards} shards' Queries run in parallel, so a page "
                    "waits for about one round trip either way; every Query is billed at least 0.5 RCU "
                    f"(eventually consistent), so a page costs at least {many.request_count * 0.5:g} RCU "
                    f"against {one.request_count * 0.5:g}",
                )
            )
    return rows
