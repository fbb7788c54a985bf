"""`reconcile`: compare the bucket with the index and repair the differences, in both directions.

One table Scan (state records left out) and one listing of the bucket's current versions; an object
whose entry agrees with the listing costs no request of its own. Each difference is confirmed by a HEAD
of the object and repaired by one conditional write (`file_index.write.repair`): objects missing from the
index, entries of another version, and live entries of objects the listing no longer shows. With the
Z-order index on, entries lacking their `zAddress` are given it (no HEAD needed), as `migrate` does. With
`dry_run` nothing is written, not even the state record.

The index's items are held in memory while the bucket is listed (a few hundred bytes each); buckets too
large for one machine reconcile through the stack's state machine instead.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from file_index.rules import cost, schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import scan_index
from file_index.store.state import IndexStateStore, Operation
from file_index.write.differences import Difference, entry_bucket, is_live
from file_index.write.names import NameIndex
from file_index.write.repair import Finding, Repair, Repairer
from file_search_admin.aws import Client, is_versioned, list_current_objects

DEFAULT_MAX_KEYS = 20
# Differences between the bucket and the index; `UNPLACED` (an entry without its Z-order address) is one
# of the index alone, reported apart.
OBJECT_DIFFERENCES = (Difference.MISSING, Difference.STALE, Difference.ORPHANED)
_CONFIRMED = frozenset({Repair.FIXED, Repair.CONFLICT, Repair.DRY_RUN})


@dataclass
class ReconcileSummary:
    bucket: str
    table: str
    dry_run: bool
    max_keys: int
    listed: int = 0
    scanned: int = 0
    seconds: float = 0.0
    run_id: str | None = None
    state: str | None = None
    findings: list[Finding] = field(default_factory=list)

    def found(self) -> Counter[Difference]:
        """Differences the HEAD confirmed."""
        return Counter(f.kind for f in self.findings if f.result in _CONFIRMED)

    def fixed(self) -> Counter[Difference]:
        return Counter(f.kind for f in self.findings if f.result is Repair.FIXED)

    def keys(self, kind: Difference) -> list[str]:
        return sorted(f.key for f in self.findings if f.kind is kind and f.result in _CONFIRMED)[
            : self.max_keys
        ]

    def count(self, result: Repair) -> int:
        return sum(1 for f in self.findings if f.result is result)

    def state_counts(self) -> dict[str, int]:
        found, fixed = self.found(), self.fixed()
        return {
            "listed": self.listed,
            "scanned": self.scanned,
            **{kind.value: found[kind] for kind in Difference},
            "repaired": sum(fixed.values()),
            "conflicts": self.count(Repair.CONFLICT),
        }

    def to_json(self) -> dict[str, Any]:
        found, fixed = self.found(), self.fixed()
        return {
            "command": "reconcile",
            "bucket": self.bucket,
            "table": self.table,
            "dryRun": self.dry_run,
            "listed": self.listed,
            "scanned": self.scanned,
            "found": {kind.value: found[kind] for kind in OBJECT_DIFFERENCES},
            "fixed": {kind.value: fixed[kind] for kind in OBJECT_DIFFERENCES},
            # Entries put where the placement's indexes find them: their Z-order address, or shards the
            # readers query.
            "unplaced": {"found": found[Difference.UNPLACED], "fixed": fixed[Difference.UNPLACED]},
            # The entry changed between the read and the repair: a live event won, nothing was written.
            "conflicts": self.count(Repair.CONFLICT),
            # The listing showed a difference the HEAD no longer did: S3 changed since the listing.
            "settled": self.count(Repair.SETTLED),
            "keys": {kind.value: self.keys(kind) for kind in OBJECT_DIFFERENCES},
            "seconds": round(self.seconds, 3),
            "runId": self.run_id,
            "state": self.state,
        }


def run_reconcile(
    *,
    s3: Client,
    dynamodb: Client,
    bucket: str,
    table: str,
    key_pattern: KeyPattern,
    dry_run: bool = False,
    concurrency: int = 16,
    tombstone_ttl_days: int = DEFAULT_TOMBSTONE_TTL_DAYS,
    max_keys: int = DEFAULT_MAX_KEYS,
    shard_placement: ShardPlacement | None = None,
    names: NameIndex | None = None,
    judge_shards: bool = True,
) -> ReconcileSummary:
    """Compare `bucket` with `table` and repair; `shard_placement` is the deployment's (default: unsharded);
    `names`, when given, follows every repair (`file_index.write.repair.repair`); `judge_shards` False: the
    placement's shard counts are a guess, so entries are never moved between shards."""
    started = time.monotonic()
    summary = ReconcileSummary(bucket=bucket, table=table, dry_run=dry_run, max_keys=max_keys)
    store = IndexStateStore(dynamodb, table)
    if not dry_run:
        summary.run_id = uuid.uuid4().hex
        store.start(bucket, Operation.RECONCILE, summary.run_id)
    repairer = Repairer(
        s3=s3,
        dynamodb=dynamodb,
        table_name=table,
        bucket=bucket,
        key_pattern=key_pattern,
        dry_run=dry_run,
        tombstone_ttl_days=tombstone_ttl_days,
        shard_placement=shard_placement or ShardPlacement(),
        names=names,
        judge_shards=judge_shards,
    )
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="reconcile")
    checks: list[Future[Finding | None]] = []
    statistics: Counter[str] = Counter()  # of the listing, for the planner (`cost.listing_counts`)
    try:
        index: dict[str, dict[str, Any]] = {}
        for item in scan_index(dynamodb, table):
            summary.scanned += 1
            # Entries of another bucket are not this bucket's to judge; tombstones name no bucket. The
            # stored bucketName may be a shard value: compare the bucket it stands for.
            if entry_bucket(item) in (None, bucket):
                index[item[schema.OBJECT_KEY]] = item
        versioned = is_versioned(s3, bucket)
        for page in list_current_objects(s3, bucket, versioned=versioned):
            summary.listed += len(page.objects)
            statistics.update(cost.listing_counts(page.objects, bucket))
            for obj in page.objects:
                held = index.pop(obj.key, None)
                if repairer.differs(held, obj, compare_versions=versioned) is not None:
                    checks.append(
                        executor.submit(repairer.check, obj.key, held, obj, compare_versions=versioned)
                    )
        # What the listing did not show: live entries are candidates for removal, confirmed by a HEAD.
        for key, item in index.items():
            if is_live(item):
                checks.append(executor.submit(repairer.check, key, item, None, compare_versions=versioned))
        summary.findings = [finding for check in checks if (finding := check.result()) is not None]
    except BaseException as error:
        executor.shutdown(wait=True, cancel_futures=True)
        if summary.run_id is not None:
            store.fail(bucket, summary.run_id, f"reconcile stopped: {type(error).__name__}: {error}")
        raise
    executor.shutdown(wait=True)
    if summary.run_id is not None:
        store.add_progress(bucket, summary.run_id, summary.state_counts(), statistics=statistics)
        summary.state = store.finish(bucket, summary.run_id).state.value
    summary.seconds = time.monotonic() - started
    return summary
