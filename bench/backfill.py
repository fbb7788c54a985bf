"""Measure 7: backfill throughput on the local stack, objects per second, against listing alone.

The whole product runs locally (`local_stack.stack.LocalFileSearch`) with the bucket's notifications off,
so the bucket holds objects the index has never heard of (`bench.seeding`). For each bucket size, the
same bucket is first listed alone (`file_search_admin.aws.list_current_objects`, the listing the backfill
itself uses), then backfilled into a table of its own by `file_search_admin.backfill.run_backfill`, the
code behind `python -m file_search_admin backfill`, with clients configured as the command line's. The
ratio says what the conditional writes add to reading the bucket: the floor is 1×.

Both figures are this machine's: moto's server runs in the same process, so the emulator's CPU competes
with the client's under one interpreter lock. They rank the two, they say nothing of AWS's rates; the
state machine's figures on paper (`bench/README.md`) come from measure 9 and the service limits.
"""

from __future__ import annotations

import time

from bench import seeding
from bench.report import Measured, Row, progress
from file_index.rules import schema


def run(*, sizes: list[int], concurrency: int) -> Measured:
    from file_index.rules.key_pattern import KeyPattern
    from file_search_admin.aws import Aws, list_current_objects
    from file_search_admin.backfill import run_backfill
    from local_stack.stack import LocalFileSearch

    rows: list[Row] = []
    chart: dict[str, list[float]] = {"sizes": [], "backfillPerSecond": [], "listingPerSecond": []}
    with (
        LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack,
        stack.notifications_disabled(),
    ):
        # The command line's clients: the SDK's configuration, which the stack points at its moto.
        clients = Aws.from_options(profile=None, region=stack.region, max_connections=concurrency + 4)
        s3, dynamodb = clients.client("s3"), clients.client("dynamodb")
        seeded = 0
        for size in sorted(sizes):
            progress(f"backfill: seeding the bucket with {size - seeded:,} more objects (no events)")
            seeding.seed_bucket(stack.bucket, seeded, size)
            seeded = size
            # A fresh table per size, so every object is a write and none a skip.
            table = f"{schema.TABLE_NAME}-{size}"
            dynamodb.create_table(**schema.create_table_request(table))
            dynamodb.get_waiter("table_exists").wait(TableName=table)

            progress(f"backfill: listing {size:,} objects alone")
            started = time.perf_counter()
            listed = sum(
                len(page.objects) for page in list_current_objects(s3, stack.bucket, versioned=False)
            )
            listing_seconds = time.perf_counter() - started
            if listed != size:
                raise RuntimeError(f"listed {listed} objects of {size}")

            progress(f"backfill: backfilling {size:,} objects, {concurrency} writes in flight")
            summary = run_backfill(
                s3=s3,
                dynamodb=dynamodb,
                bucket=stack.bucket,
                table=table,
                key_pattern=KeyPattern.parse(None),
                concurrency=concurrency,
            )
            if (summary.counts.listed, summary.counts.written) != (size, size):
                raise RuntimeError(f"backfill of {size} objects: {summary.to_json()}")
            backfill_rate = size / summary.seconds
            listing_rate = size / listing_seconds
            chart["sizes"].append(size)
            chart["backfillPerSecond"].append(backfill_rate)
            chart["listingPerSecond"].append(listing_rate)
            rows.append(
                Row(
                    f"7. backfill throughput, {size:,} objects, local stack",
                    "objects/s",
                    backfill_rate,
                    listing_rate,
                    "listing alone, same bucket",
                    listing_rate / backfill_rate,
                    f"listing ÷ backfill (floor 1×); backfill {summary.seconds:.1f} s, listing "
                    f"{listing_seconds:.1f} s; {concurrency} conditional writes in flight; moto in-process",
                )
            )
    return Measured(rows, {"backfill": chart})
