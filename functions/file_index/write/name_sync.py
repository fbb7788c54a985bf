"""Bring a bucket's name index in step with its entries, and mark it complete (`file_index.write.names`).

`sync_names` runs in two passes, each a parallel segmented Scan that holds one page per segment:

1. Over `FileMetaData`: for every live entry of the bucket, the items it should have (its key item and
   term items) are read back by key (BatchGetItem) and those missing or with other values are put
   (BatchWriteItem).
2. Over the name table: every item of the bucket that no live entry has (its entry gone, an overwrite's
   old upload time, a shard the entry left, an item of a scope no reader reads) is removed on the
   condition that it is unchanged since it was read (`since` equal), so an item a live write has just put
   again stays.

With `complete=True` (`file_search_admin index-names`, which builds the name index of a table that has
none, such as a 0.3.0 table) it sets the bucket's flag (`TERMS_COMPLETE`, keeping the first
`completedAt`) between the passes: every live entry then has its items, and writers give every new one
its items, so name lists may answer. Every step is idempotent, so an interrupted run is finished by
running it again; a second run writes nothing.

Safe beside live events: a put for an entry deleted meanwhile leaves an item that searches skip (every
candidate's entry decides) and the next run removes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from file_index.rules import schema
from file_index.rules.name_items import SCOPE_SEPARATOR, is_live_entry, item_key
from file_index.rules.placement import ShardPlacement
from file_index.store import name_items, queries, unprocessed
from file_index.store.entries import plain_item
from file_index.store.name_index_flag import FLAG_MARK, NameIndexFlag
from file_index.write.names import NameIndex

DEFAULT_SEGMENTS = 4
# Entries read per Scan page: a page's items (some tens per entry) are what a segment holds at once.
_ENTRY_PAGE = 250
# BatchGetItem takes at most 100 keys.
_BATCH_GET_KEYS = 100


@dataclass
class NameSyncCounts:
    entries: int = 0  # live entries of the bucket read
    items: int = 0  # name items of the bucket read (pass 2)
    put: int = 0  # items written (missing, or with other values)
    removed: int = 0  # items removed (no live entry has them)
    kept: int = 0  # items a live write changed while the run read them: left as they are
    phase: str = "entries"  # "entries", "name items", "done"
    complete: bool = False  # the bucket's name index is complete (the flag)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def to_json(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "nameItems": self.items,
            "put": self.put,
            "removed": self.removed,
            "kept": self.kept,
            "termItemsComplete": self.complete,
        }


def _scan_pages(
    dynamodb: Any, table_name: str, segment: int, segments: int, **request: Any
) -> Iterator[list[dict[str, Any]]]:
    segment_request = {"TableName": table_name, "Segment": segment, "TotalSegments": segments, **request}
    for page in queries.scan_pages(dynamodb, segment_request):
        yield [plain_item(raw) for raw in page.items]


def _batch_get(
    dynamodb: Any, table_name: str, keys: Sequence[Mapping[str, Any]], *, consistent: bool
) -> list[dict[str, Any]]:
    """The items of `keys` that exist (plain values), 100 keys to a BatchGetItem."""
    found: list[dict[str, Any]] = []
    for start in range(0, len(keys), _BATCH_GET_KEYS):
        chunk = [
            {name: {"S": str(value)} for name, value in key.items()}
            for key in keys[start : start + _BATCH_GET_KEYS]
        ]
        request = {table_name: {"Keys": chunk, "ConsistentRead": consistent}}
        got = unprocessed.batch_get(dynamodb, request).raise_if_left()
        found.extend(plain_item(raw) for raw in got.of(table_name))
    return found


def _item_tuple(item: Mapping[str, Any]) -> tuple[str, str]:
    return str(item[schema.NAME_SCOPE]), str(item[schema.NAME_SORT])


def _same_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k != schema.NAME_SINCE} == {
        k: v for k, v in b.items() if k != schema.NAME_SINCE
    }


def _now() -> datetime:
    return datetime.now(UTC)


def sync_names(
    dynamodb: Any,
    table_name: str,
    name_table_name: str,
    bucket: str,
    *,
    on_progress: Callable[[NameSyncCounts], None] | None = None,
    complete: bool = False,
    segments: int = DEFAULT_SEGMENTS,
    now: Callable[[], datetime] = _now,
) -> NameSyncCounts:
    """Make the name items of `bucket` exactly those of its live entries; `complete`: and mark its name
    index complete once every live entry has its items (module docstring)."""
    counts = NameSyncCounts()
    notify = on_progress or (lambda _counts: None)
    state = NameIndexFlag(dynamodb, name_table_name, ttl=0.0)
    names = NameIndex(dynamodb, name_table_name, entry_table=table_name)
    counts.complete = state.complete(bucket)
    notify(counts)

    def entries_segment(segment: int) -> None:
        for page in _scan_pages(
            dynamodb, table_name, segment, segments, ConsistentRead=True, Limit=_ENTRY_PAGE
        ):
            live = [
                entry
                for entry in page
                if is_live_entry(entry)
                and ShardPlacement.public_bucket(str(entry[schema.BUCKET_NAME])) == bucket
            ]
            wanted = [
                item
                for entry in live
                for item in names.items_of(entry, str(entry.get(schema.ORDER_KEY) or ""))
            ]
            held = {
                _item_tuple(item): item
                for item in _batch_get(
                    dynamodb, name_table_name, [item_key(i) for i in wanted], consistent=False
                )
            }
            missing = [i for i in wanted if not _same_values(held.get(_item_tuple(i), {}), i)]
            names.put_items(missing)
            counts.add(entries=len(live), put=len(missing))
            notify(counts)

    _in_segments(entries_segment, segments)
    if complete and not counts.complete:
        state.mark_complete(bucket, now())
        counts.complete = True
    counts.phase = "name items"
    notify(counts)

    def items_segment(segment: int) -> None:
        for page in _scan_pages(
            dynamodb,
            name_table_name,
            segment,
            segments,
            ProjectionExpression="#s, #t, #k, #since",
            ExpressionAttributeNames={
                "#s": schema.NAME_SCOPE,
                "#t": schema.NAME_SORT,
                "#k": schema.OBJECT_KEY,
                "#since": schema.NAME_SINCE,
            },
        ):
            checked: list[dict[str, Any]] = []
            for item in page:
                partition, _, suffix = str(item[schema.NAME_SCOPE]).partition(SCOPE_SEPARATOR)
                if ShardPlacement.public_bucket(partition) == bucket and suffix != FLAG_MARK:
                    checked.append(item)
            removed, kept = _remove_strays(dynamodb, table_name, name_table_name, names, checked)
            counts.add(items=len(checked), removed=removed, kept=kept)
            notify(counts)

    _in_segments(items_segment, segments)
    counts.phase = "done"
    notify(counts)
    return counts


def _remove_strays(
    dynamodb: Any, table_name: str, name_table_name: str, names: NameIndex, items: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """Remove those of `items` that no live entry has (conditional on `since` unchanged): (removed, kept)."""
    object_keys = sorted({str(item[schema.OBJECT_KEY]) for item in items if schema.OBJECT_KEY in item})
    entries = _batch_get(
        dynamodb, table_name, [{schema.OBJECT_KEY: key} for key in object_keys], consistent=True
    )
    expected: set[tuple[str, str]] = set()
    for entry in entries:
        if is_live_entry(entry):
            expected.update(_item_tuple(item) for item in names.items_of(entry, ""))
    removed = kept = 0
    for item in items:
        scope, term = _item_tuple(item)
        if (scope, term) in expected:
            continue
        key = {schema.NAME_SCOPE: scope, schema.NAME_SORT: term}
        if name_items.delete_if_unchanged(
            dynamodb, name_table_name, key, str(item.get(schema.NAME_SINCE, ""))
        ):
            removed += 1
        else:
            kept += 1
    return removed, kept


def _in_segments(run: Callable[[int], None], segments: int) -> None:
    if segments <= 1:
        run(0)
        return
    with ThreadPoolExecutor(max_workers=segments) as pool:
        for _ in pool.map(run, range(segments)):
            pass
