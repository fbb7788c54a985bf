"""The state machine's work, without Lambda: parse its inputs, write a batch, sweep a table segment.

The shapes are the state machine's contract (see `backfill.handler`). Nothing here knows of Lambda's
context: the sweep takes a deadline.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from file_index.rules import schema
from file_index.rules.objects import is_record_key
from file_index.store import queries
from file_index.store.entries import get_items, plain_item
from file_index.store.state import Operation
from file_index.write.differences import entry_bucket, is_live
from file_index.write.listed_objects import BackfillOutcome, ListedObject, backfill_object, strip_etag
from file_index.write.repair import Finding, Repair, Repairer

# Items per Scan page of the sweep: the sweep stops between pages, so a page bounds the overrun.
SWEEP_PAGE = 100


class InvalidInputError(ValueError):
    """The state machine passed an input this function cannot read; the message says what."""


class ForeignBucketError(InvalidInputError):
    """A batch or segment of another bucket than the one this function indexes."""


def parse_operation(event: Mapping[str, Any]) -> Operation:
    """`{"operation": "backfill" | "reconcile"}`; absent means backfill."""
    raw = event.get("operation", Operation.BACKFILL.value)
    try:
        return Operation(raw)
    except ValueError:
        raise InvalidInputError(
            f"operation must be one of {[op.value for op in Operation]}, got {raw!r}"
        ) from None


def parse_item(item: Mapping[str, Any]) -> ListedObject:
    """One Distributed Map item of the S3 listObjectsV2 reader: Key, Etag (quoted), Size, LastModified.

    LastModified is epoch seconds in AWS's documented shape; an ISO-8601 string is accepted as well.
    """
    try:
        key = item["Key"]
        size = item["Size"]
    except KeyError as missing:
        raise InvalidInputError(f"item {dict(item)!r} has no {missing.args[0]}") from None
    if not isinstance(key, str) or not key:
        raise InvalidInputError(f"item Key must be a non-empty string, got {key!r}")
    if isinstance(size, bool) or not isinstance(size, int | float | Decimal | str):
        raise InvalidInputError(f"item {key!r}: Size must be a number, got {size!r}")
    try:
        size_value = int(size)
    except ValueError:
        raise InvalidInputError(f"item {key!r}: Size must be a number, got {size!r}") from None
    return ListedObject(
        key=key,
        size=size_value,
        e_tag=strip_etag(str(item.get("Etag") or item.get("ETag") or "")),
        last_modified=parse_last_modified(key, item.get("LastModified")),
    )


def parse_last_modified(key: str, raw: Any) -> datetime:
    if isinstance(raw, int | float | Decimal) and not isinstance(raw, bool):
        return datetime.fromtimestamp(float(raw), UTC)
    if isinstance(raw, str) and raw.strip():
        text = raw.strip()
        try:
            return datetime.fromtimestamp(float(text), UTC)
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"item {key!r}: LastModified {raw!r} is not a time") from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise InvalidInputError(f"item {key!r}: LastModified must be epoch seconds or ISO-8601, got {raw!r}")


@dataclass(frozen=True)
class Batch:
    bucket: str
    operation: Operation
    run_id: str
    objects: list[ListedObject]

    @classmethod
    def parse(cls, event: Mapping[str, Any]) -> Batch:
        """`{"BatchInput": {"bucket", "operation", "runId"}, "Items": [...]}`: a Distributed Map child."""
        batch_input = event.get("BatchInput")
        items = event.get("Items")
        if not isinstance(batch_input, Mapping) or not isinstance(items, list):
            raise InvalidInputError("a batch needs BatchInput (an object) and Items (a list)")
        bucket, run_id = batch_input.get("bucket"), batch_input.get("runId")
        if not isinstance(bucket, str) or not bucket or not isinstance(run_id, str) or not run_id:
            raise InvalidInputError("BatchInput needs bucket and runId")
        return cls(bucket, parse_operation(batch_input), run_id, [parse_item(item) for item in items])


def count_backfill(outcomes: Sequence[BackfillOutcome]) -> dict[str, int]:
    counted = Counter(outcomes)
    return {
        "listed": len(outcomes),
        "written": counted[BackfillOutcome.WRITTEN],
        "skipped": counted[BackfillOutcome.SKIPPED],
    }


def count_findings(findings: Sequence[Finding], **extra: int) -> dict[str, int]:
    """The counters a reconcile adds to the state record: differences per kind, repairs, conflicts."""
    confirmed = [f for f in findings if f.result in (Repair.FIXED, Repair.CONFLICT, Repair.DRY_RUN)]
    kinds = Counter(f.kind.value for f in confirmed)
    return {
        **extra,
        "missing": kinds["missing"],
        "stale": kinds["stale"],
        "orphaned": kinds["orphaned"],
        # Entries given their Z-order address: a counter only when there were some (the Z-order index on).
        **({"unplaced": kinds["unplaced"]} if kinds["unplaced"] else {}),
        "repaired": sum(1 for f in findings if f.result is Repair.FIXED),
        "conflicts": sum(1 for f in findings if f.result is Repair.CONFLICT),
    }


def write_backfill(
    repairer: Repairer, objects: Sequence[ListedObject], executor: ThreadPoolExecutor
) -> dict[str, int]:
    def write(obj: ListedObject) -> BackfillOutcome:
        return backfill_object(
            repairer.dynamodb,
            repairer.table_name,
            repairer.bucket,
            obj,
            repairer.key_pattern,
            repairer.shard_placement,
            repairer.names,
        )

    return count_backfill(list(executor.map(write, objects)))


def reconcile_listed(
    repairer: Repairer, objects: Sequence[ListedObject], executor: ThreadPoolExecutor
) -> dict[str, int]:
    """Directions (a) and (b): one BatchGetItem per 100 keys, a HEAD and a write per difference only.

    The listing carries no version ids, so size and eTag are compared; the HEAD brings the version. An
    entry lacking its Z-order address is given it (no HEAD), which is how a reconcile migrates.
    """
    held = get_items(repairer.dynamodb, repairer.table_name, [obj.key for obj in objects])
    candidates = [
        obj for obj in objects if repairer.differs(held.get(obj.key), obj, compare_versions=False) is not None
    ]
    findings = list(
        executor.map(
            lambda obj: repairer.check(obj.key, held.get(obj.key), obj, compare_versions=False), candidates
        )
    )
    return count_findings([f for f in findings if f is not None], listed=len(objects))


@dataclass(frozen=True)
class SweepResult:
    start_key: dict[str, Any] | None
    done: bool
    counts: dict[str, int]


def sweep(
    repairer: Repairer,
    *,
    segment: int,
    total_segments: int,
    start_key: dict[str, Any] | None,
    deadline: float,
    executor: ThreadPoolExecutor,
    clock: Callable[[], float] = time.monotonic,
) -> SweepResult:
    """Direction (c) for one Scan segment: HEAD each live entry, tombstone it if its object is gone.

    Reads page after page until `deadline` (a `clock` value) has passed; returns where to go on.
    """
    findings: list[Finding] = []
    scanned = 0
    while True:
        request: dict[str, Any] = {
            "TableName": repairer.table_name,
            "Segment": segment,
            "TotalSegments": total_segments,
            "Limit": SWEEP_PAGE,
            "ConsistentRead": True,
        }
        if start_key:
            request["ExclusiveStartKey"] = start_key
        page = queries.scan_page(repairer.dynamodb, request)
        items = [plain_item(raw) for raw in page.items]
        live = [
            item
            for item in items
            if not is_record_key(item[schema.OBJECT_KEY])
            and is_live(item)
            and entry_bucket(item) == repairer.bucket
        ]
        scanned += len(items)

        def check(item: dict[str, Any]) -> Finding | None:
            return repairer.check(item[schema.OBJECT_KEY], item, None, compare_versions=False)

        findings.extend(f for f in executor.map(check, live) if f is not None)
        start_key = page.last_key
        if not start_key:
            return SweepResult(None, True, count_findings(findings, swept=scanned))
        if clock() >= deadline:
            return SweepResult(start_key, False, count_findings(findings, swept=scanned))
