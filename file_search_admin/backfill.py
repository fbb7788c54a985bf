"""`backfill`: index every object the bucket holds now, from one machine, resumable.

The listing streams page by page into a thread pool of conditional writes (`file_index.repair.
backfill_object`: written only where the index has no item for the key, so live events always win and the
backfill may run while the bucket changes). The state record is BUILDING from the start; after every
listing page whose writes have all finished (pages finish in listing order), its counts and its last key
(`resumeAfter`) are added to the record, so an interrupted run resumes after the last such key. The run
marks the record READY at the end.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from file_index.rules import cost
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.placement import ShardPlacement
from file_index.store.state import IndexStateStore, Operation, State
from file_index.write.listed_objects import BackfillOutcome, ListedObject, backfill_object
from file_index.write.names import NameIndex
from file_search_admin.aws import Client, is_versioned, list_current_objects

# Listing pages whose writes may be in flight at once: the listing stays ahead of the writers without
# holding the bucket in memory.
PAGES_IN_FLIGHT = 3


@dataclass
class BackfillCounts:
    listed: int = 0
    written: int = 0
    skipped: int = 0

    def add(self, other: BackfillCounts) -> None:
        self.listed += other.listed
        self.written += other.written
        self.skipped += other.skipped

    def as_dict(self) -> dict[str, int]:
        return {"listed": self.listed, "written": self.written, "skipped": self.skipped}


@dataclass
class BackfillSummary:
    bucket: str
    table: str
    run_id: str
    resumed_after: str | None
    state: str
    seconds: float
    counts: BackfillCounts = field(default_factory=BackfillCounts)
    # The run's counters in the state record, earlier attempts of a resumed run included.
    total: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "command": "backfill",
            "bucket": self.bucket,
            "table": self.table,
            "runId": self.run_id,
            "resumed": self.resumed_after is not None,
            "resumedAfter": self.resumed_after,
            **self.counts.as_dict(),
            "seconds": round(self.seconds, 3),
            "objectsPerSecond": round(self.counts.listed / self.seconds, 1) if self.seconds > 0 else 0.0,
            "total": self.total,
            "state": self.state,
        }


# Called with the counts so far after every finished page (and once at the start).
ProgressCallback = Callable[[BackfillCounts], None]


@dataclass
class _Page:
    last_key: str | None
    futures: list[Future[BackfillOutcome]]
    listed: int
    statistics: dict[str, int] = field(default_factory=dict)  # `cost.listing_counts` of the page


def run_backfill(
    *,
    s3: Client,
    dynamodb: Client,
    bucket: str,
    table: str,
    key_pattern: KeyPattern,
    concurrency: int = 16,
    restart: bool = False,
    page_size: int = 1000,
    on_progress: ProgressCallback | None = None,
    shard_placement: ShardPlacement | None = None,
    names: NameIndex | None = None,
) -> BackfillSummary:
    """List `bucket` and backfill `table` from it; resumes an interrupted run unless `restart`.

    `shard_placement` places the entries (the deployment's; default the unsharded placement); `names`, when
    given, gets each written entry's name items.

    Any error that outlasts the SDK's retries stops the run: it is recorded in the state record (which
    stays BUILDING, with the last checkpoint) and raised.
    """
    store = IndexStateStore(dynamodb, table)
    previous = store.read(bucket)
    resume = (
        not restart
        and previous is not None
        and previous.state is State.BUILDING
        and previous.operation is Operation.BACKFILL
        and previous.run_id is not None
        and previous.resume_after is not None
    )
    if resume:
        assert previous is not None
        assert previous.run_id is not None
        run_id, start_after = previous.run_id, previous.resume_after
        store.start(bucket, Operation.BACKFILL, run_id, resume=True)
    else:
        run_id, start_after = uuid.uuid4().hex, None
        store.start(bucket, Operation.BACKFILL, run_id)

    counts = BackfillCounts()
    notify = on_progress or (lambda _counts: None)
    notify(counts)
    started = time.monotonic()
    versioned = is_versioned(s3, bucket)
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="backfill")
    pending: deque[_Page] = deque()

    def write(obj: ListedObject) -> BackfillOutcome:
        return backfill_object(
            dynamodb, table, bucket, obj, key_pattern, shard_placement or ShardPlacement(), names
        )

    def settle(page: _Page) -> None:
        done = BackfillCounts(listed=page.listed)
        for future in page.futures:
            outcome = future.result()  # raises the write's error
            if outcome is BackfillOutcome.WRITTEN:
                done.written += 1
            else:
                done.skipped += 1
        store.add_progress(
            bucket, run_id, done.as_dict(), resume_after=page.last_key, statistics=page.statistics
        )
        counts.add(done)
        notify(counts)

    try:
        for listing in list_current_objects(
            s3, bucket, versioned=versioned, start_after=start_after, page_size=page_size
        ):
            pending.append(
                _Page(
                    listing.last_key,
                    [executor.submit(write, obj) for obj in listing.objects],
                    len(listing.objects),
                    cost.listing_counts(listing.objects, bucket),
                )
            )
            while pending and (len(pending) > PAGES_IN_FLIGHT or all(f.done() for f in pending[0].futures)):
                oldest = pending[0]
                wait(oldest.futures, return_when=FIRST_EXCEPTION)
                settle(pending.popleft())
        while pending:
            settle(pending.popleft())
    except BaseException as error:
        executor.shutdown(wait=True, cancel_futures=True)
        reason = "interrupted" if isinstance(error, KeyboardInterrupt) else f"{type(error).__name__}: {error}"
        store.fail(bucket, run_id, f"backfill stopped after {counts.listed} objects: {reason}")
        raise
    executor.shutdown(wait=True)
    final = store.finish(bucket, run_id)
    return BackfillSummary(
        bucket=bucket,
        table=table,
        run_id=run_id,
        resumed_after=start_after,
        state=final.state.value,
        seconds=time.monotonic() - started,
        counts=counts,
        total=final.counts,
    )
