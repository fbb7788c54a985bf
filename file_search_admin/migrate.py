"""`migrate`: give every entry of a bucket its Z-order address, then let searches use the Z-order index.

Switching `multiAttributeIndex` on for a table that already holds entries creates the Z-order index
empty of them: only entries written since carry `zAddress`. The index state record's `zOrderPending`
flag says so, and searches keep to the two original indexes (exact, just costlier) while it is set.
This command fills the addresses in and clears the flag.

A parallel Scan (`segments` segments, one thread each, consistent reads) reads the table; state records,
tombstones and entries of other buckets are passed over. For each live entry whose `zAddress` is missing
or not the one its upload time and size give, one conditional UpdateItem sets it
(`file_index.write.repair.place_entry`): it applies only while the entry still has the `orderKey` (or none),
size and upload date that were read, so an event that changed the entry meanwhile wins; its own write
carries the address. Such an entry is read again and placed if it still lacks the address (a writer
without the Z-order placement, e.g. one of the release before the switch), else counted `skipped`.

The flag is set before the first address is written (searches keep off the Z-order index from then on,
even if nothing had set it; a run that finds every address in place never sets it) and cleared only when
every segment finished without an error, so a failed or interrupted run leaves searches on the original
indexes. Run it after the deployment that switched the index on:
the functions must already write addresses, or entries written between the scan and that deployment
stay without one. A second run finds every address in place and updates nothing. It never writes to S3.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from file_index.rules import schema
from file_index.rules.objects import is_record_key
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import get_items, plain_item
from file_index.store.state import IndexStateStore
from file_index.write.differences import entry_bucket, is_live, is_unplaced
from file_index.write.repair import Placement, place_entry
from file_search_admin.aws import Client
from file_search_admin.errors import AdminError

DEFAULT_SEGMENTS = 4
# Items per Scan page: small enough that progress moves, large enough to keep requests few.
SCAN_PAGE = 500
# An entry that keeps changing under its update is left to the events that change it, after this many.
MAX_PLACE_ROUNDS = 3
# What the scan needs of an entry to place it; reading less costs the same read units but moves less.
_PROJECTED = (
    schema.OBJECT_KEY,
    schema.BUCKET_NAME,
    schema.SIZE,
    schema.UPLOAD_DATE,
    schema.ORDER_KEY,
    schema.DELETED,
    schema.Z_ADDRESS,
)


class ZOrderIndexOffError(AdminError):
    """The placement has no Z-order index, so there is nothing to migrate."""


class EntryKeepsChangingError(AdminError):
    """An entry changed under every update of one run; the flag stays set, run again."""


@dataclass
class MigrateCounts:
    scanned: int = 0  # items the scan read, state records and tombstones included
    updated: int = 0  # entries given their address
    already: int = 0  # entries that had it
    skipped: int = 0  # entries an event changed between the scan and the update (the event placed them)

    def add(self, other: MigrateCounts) -> None:
        self.scanned += other.scanned
        self.updated += other.updated
        self.already += other.already
        self.skipped += other.skipped

    def as_dict(self) -> dict[str, int]:
        return {
            "scanned": self.scanned,
            "updated": self.updated,
            "already": self.already,
            "skipped": self.skipped,
        }


@dataclass
class MigrateSummary:
    bucket: str
    table: str
    segments: int
    seconds: float = 0.0
    counts: MigrateCounts = field(default_factory=MigrateCounts)
    z_order_pending: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "command": "migrate",
            "bucket": self.bucket,
            "table": self.table,
            "segments": self.segments,
            **self.counts.as_dict(),
            "seconds": round(self.seconds, 3),
            "zOrderPending": self.z_order_pending,
        }


# Called with the counts so far after every Scan page of any segment.
ProgressCallback = Callable[[MigrateCounts], None]
# Called with an entry just before its update: the seam where a test lets an event land in between.
BeforeUpdate = Callable[[Mapping[str, Any]], None]


def run_migrate(
    *,
    dynamodb: Client,
    bucket: str,
    table: str,
    placement: ShardPlacement,
    segments: int = DEFAULT_SEGMENTS,
    on_progress: ProgressCallback | None = None,
    before_update: BeforeUpdate | None = None,
) -> MigrateSummary:
    """Fill in the missing `zAddress` of `bucket`'s entries in `table`; clears `zOrderPending` at the end.

    Raises ZOrderIndexOffError when `placement` has no Z-order index (nothing is read or written), and any
    error that outlasts the SDK's retries (the flag stays set).
    """
    if not placement.multi_attribute_index:
        raise ZOrderIndexOffError(
            "the Z-order index is off (multiAttributeIndex is false): entries carry no zAddress to migrate"
        )
    if segments < 1:
        raise ValueError(f"segments must be at least 1, got {segments}")
    started = time.monotonic()
    summary = MigrateSummary(bucket=bucket, table=table, segments=segments)
    store = IndexStateStore(dynamodb, table)
    lock = threading.Lock()
    marked = threading.Event()

    def mark_pending() -> None:
        # Before the first address is written, not at the start: a run over a complete index (the usual
        # second run) never moves searches off the Z-order index.
        with lock:
            if not marked.is_set():
                store.mark_z_order_pending(bucket)
                marked.set()

    notify = on_progress or (lambda _counts: None)
    notify(summary.counts)

    def report(page: MigrateCounts) -> None:
        with lock:
            summary.counts.add(page)
            notify(summary.counts)

    stop = threading.Event()
    migration = _Migration(
        dynamodb, table, bucket, placement, before_update or (lambda _item: None), stop, mark_pending
    )
    executor = ThreadPoolExecutor(max_workers=segments, thread_name_prefix="migrate")
    try:
        futures = [
            executor.submit(migration.segment, segment, segments, report) for segment in range(segments)
        ]
        for future in futures:
            future.result()
    except BaseException:
        # The first error (or Ctrl-C) stops every segment after its page; the flag stays set.
        stop.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    store.clear_z_order_pending(bucket)
    summary.z_order_pending = False
    summary.seconds = time.monotonic() - started
    return summary


@dataclass(frozen=True)
class _Migration:
    dynamodb: Client
    table: str
    bucket: str
    placement: ShardPlacement
    before_update: BeforeUpdate
    stop: threading.Event
    mark_pending: Callable[[], None]

    def segment(self, segment: int, total: int, report: Callable[[MigrateCounts], None]) -> None:
        request: dict[str, Any] = {
            "TableName": self.table,
            "Segment": segment,
            "TotalSegments": total,
            "Limit": SCAN_PAGE,
            # Consistent, so an entry written before the run is seen as it is, not as it was.
            "ConsistentRead": True,
            "ProjectionExpression": ", ".join(f"#p{i}" for i in range(len(_PROJECTED))),
            "ExpressionAttributeNames": {f"#p{i}": name for i, name in enumerate(_PROJECTED)},
        }
        for page in self.dynamodb.get_paginator("scan").paginate(**request):
            counts = MigrateCounts()
            for raw in page.get("Items", []):
                counts.scanned += 1
                item = plain_item(raw)
                if (
                    is_record_key(item[schema.OBJECT_KEY])
                    or not is_live(item)
                    or entry_bucket(item) != self.bucket
                ):
                    continue
                outcome = self.place(item)
                if outcome is Placement.UPDATED:
                    counts.updated += 1
                elif outcome is Placement.ALREADY:
                    counts.already += 1
                else:
                    counts.skipped += 1
            report(counts)
            if self.stop.is_set():
                return

    def place(self, item: dict[str, Any]) -> Placement:
        """UPDATED or ALREADY for the entry as read; SKIPPED when an event changed it and placed it."""
        if not is_unplaced(item, self.placement, judge_shards=False):
            return Placement.ALREADY
        key = item[schema.OBJECT_KEY]
        self.mark_pending()
        for _ in range(MAX_PLACE_ROUNDS):
            self.before_update(item)
            if (
                place_entry(self.dynamodb, self.table, item, self.placement, judge_shards=False)
                is Placement.UPDATED
            ):
                return Placement.UPDATED
            # Changed since it was read: as it is now, it is gone, a tombstone, or placed by its writer, or
            # it still lacks the address (a writer without the Z-order placement) and is placed again.
            now = get_items(self.dynamodb, self.table, [key]).get(key)
            if now is None or not is_live(now) or not is_unplaced(now, self.placement, judge_shards=False):
                return Placement.SKIPPED
            item = now
        raise EntryKeepsChangingError(
            f"entry {key!r} changed under {MAX_PLACE_ROUNDS} updates in a row; run migrate again"
        )
