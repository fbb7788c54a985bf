"""The fetcher of one partition of a list's plan (`ShardReader`, a `shard_merge.ShardFetch`): one Query per
call, the Z-order walk's jumps, and the read-ahead bound every sharded read shares (`MAX_QUERY_ITEMS`,
`READ_AHEAD_FACTOR`). `file_index.read.reader` merges the partitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import ConditionBase, Key

from file_index.read.file_queries import ZWalk
from file_index.rules import schema, shard_merge, zorder
from file_index.rules.shard_merge import (
    Position,
    ShardBatch,
)
from file_index.store import queries

# DynamoDB answers at most 1 MB per Query whatever its Limit; this bounds the items one Query may read.
MAX_QUERY_ITEMS = 1000
# A filtered Query reads at most this many times what the page still needs from its shard.
READ_AHEAD_FACTOR = 8


def key_range(attribute: Any, low: Any, high: Any) -> ConditionBase | None:
    """`attribute` between `low` and `high` (inclusive; either None for an open side), or None."""
    if low is not None and high is not None:
        return attribute.between(low, high)
    if low is not None:
        return attribute.gte(low)
    if high is not None:
        return attribute.lte(high)
    return None


def all_of(*conditions: ConditionBase | None) -> ConditionBase | None:
    result: ConditionBase | None = None
    for condition in conditions:
        if condition is not None:
            result = condition if result is None else result & condition
    return result


@dataclass(frozen=True)
class Partition:
    """One partition value a plan reads, and the filter that keeps only its own entries."""

    value: str
    shard_filter: ConditionBase | None


class ShardReader:
    """The fetcher of one partition (`shard_merge.ShardFetch`): one Query per call.

    With `ranges` (the Z-order plan, with its `box` and `walk`) it walks them in the read's order: a
    position inside a range continues it; one past a range's end (`_past`) starts the next; a Query that
    stops outside the box goes on at the next address inside it (`_jump`). Counts its Queries and reads.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        index: schema.GlobalIndex,
        partition: Partition,
        bounds: tuple[Any, Any],
        filter_condition: ConditionBase | None,
        ranges: Sequence[zorder.ZRange] | None,
        ascending: bool,
        box: zorder.Box | None = None,
        walk: ZWalk | None = None,
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        self._client = client
        self._keep = keep
        self._table_name = table_name
        self._index = index
        self._partition = partition
        self._bounds = bounds  # the key range of the sort key, inclusive, None for an open side
        self._filter = all_of(filter_condition, partition.shard_filter)
        self._ranges = None if ranges is None else (list(ranges) if ascending else list(reversed(ranges)))
        self._ascending = ascending
        self._box = box
        self._walk_limit = None if walk is None else walk.min_limit
        self.requests = 0
        self.scanned = 0
        self._kept = 0

    def _limit(self, count: int) -> int:
        # Ask for what the page needs, grown by what this shard's filter has dropped so far this page.
        # Growth is capped: what a shard reads ahead of the page's end is read again by the next page.
        wanted = math.ceil(count * (self.scanned + 1) / (self._kept + 1))
        return max(1, min(MAX_QUERY_ITEMS, READ_AHEAD_FACTOR * count, max(count, wanted)))

    def _query_limit(self, count: int) -> int:
        """The Limit of the next Query for a page that still needs `count` items from this shard."""
        if self._walk_limit is None:
            return self._limit(count)
        # What the page needs, at least one read unit's worth: the walk jumps where the data leaves the
        # box rather than reading ahead through it.
        return min(MAX_QUERY_ITEMS, max(self._walk_limit, count))

    def _start_key(self, after: Position) -> dict[str, Any]:
        return {
            schema.OBJECT_KEY: after.object_key,
            self._index.partition_key.name: self._partition.value,
            self._index.sort_key.name: after.sort_value,
        }

    def __call__(self, after: Position | None, count: int) -> ShardBatch[dict[str, Any]]:
        sort_key = Key(self._index.sort_key.name)
        low, high = self._bounds
        start_key = None if after is None else self._start_key(after)
        if after is not None and not after.object_key and self._ranges is None:
            # A cursor's compact position: the shard goes on from that sort value, inclusive.
            low, high = self._from(after.sort_value, low, high)
            start_key = None
        sort_condition = key_range(sort_key, low, high)
        current: zorder.ZRange | None = None
        last_range = True
        limit = self._query_limit(count)
        if self._ranges is not None:
            remaining = [
                r for r in self._ranges if after is None or not self._passed(r, str(after.sort_value))
            ]
            if not remaining:
                return ShardBatch([], exhausted=True)
            current, last_range = remaining[0], len(remaining) == 1
            lo, hi = current
            if after is not None and not after.object_key:
                # A jump's landing (or a range's end): the walk goes on from that address, inclusive.
                lo, hi = self._from(str(after.sort_value), lo, hi)
            sort_condition = sort_key.between(lo, hi)
            if after is None or not after.object_key or not lo <= str(after.sort_value) <= hi:
                start_key = None
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "IndexName": self._index.name,
            "KeyConditionExpression": all_of(
                Key(self._index.partition_key.name).eq(self._partition.value), sort_condition
            ),
            "ScanIndexForward": self._ascending,
            "Limit": limit,
        }
        if self._filter is not None:
            request["FilterExpression"] = self._filter
        if start_key is not None:
            request["ExclusiveStartKey"] = start_key
        page = queries.query_page(self._client, request)
        items = page.items
        self.requests += 1
        self.scanned += page.scanned
        if self._keep is not None:
            # A condition DynamoDB cannot evaluate (words of a name): read like a filter, kept here.
            items = [item for item in items if self._keep(item)]
        self._kept += len(items)
        evaluated = page.last_key
        if evaluated is not None:
            resume = self._position(evaluated)
            if self._box is not None:
                landing = self._jump(str(resume.sort_value))
                if landing is None:
                    return ShardBatch(items, exhausted=True)  # nothing of the box lies further on
                if landing != resume.sort_value:
                    resume = shard_merge.compact(landing)
            return ShardBatch(items, exhausted=False, resume=resume)
        if current is None or last_range:
            return ShardBatch(items, exhausted=True)
        return ShardBatch(items, exhausted=False, resume=self._past(current))

    def _from(self, value: Any, low: Any, high: Any) -> tuple[Any, Any]:
        """The key range `low`..`high` (None: open) narrowed to start at `value`, inclusive, in the read's
        order: a compact position's."""
        if self._ascending:
            return (value if low is None else max(low, value)), high
        return low, (value if high is None else min(high, value))

    def _jump(self, address: str) -> str | None:
        """Where the walk goes on after reading `address`: the address itself if its codes are in the box
        (its neighbours may be too), else the next in-box address in the read's order (BIGMIN, LITMAX),
        skipping whatever lies between: None if there is none."""
        assert self._box is not None
        if self._ascending:
            return zorder.next_address_in_box(address, self._box)
        return zorder.prev_address_in_box(address, self._box)

    def _position(self, key: Mapping[str, Any]) -> Position:
        value = key[self._index.sort_key.name]
        return Position(int(value) if isinstance(value, Decimal) else str(value), str(key[schema.OBJECT_KEY]))

    def _passed(self, candidate: zorder.ZRange, address: str) -> bool:
        return candidate.hi < address if self._ascending else address < candidate.lo

    def _past(self, done: zorder.ZRange) -> Position:
        # An address just past the range in the read's order: z_ranges leaves a gap between ranges, so
        # it lies in no range, and the next fetch starts the next range from its beginning.
        step = 1 if self._ascending else -1
        value = zorder.address_value(done.hi if self._ascending else done.lo) + step
        return shard_merge.compact(format(value, f"0{zorder.ADDRESS_WIDTH}x"))


def position_getter(sort_attribute: str) -> Callable[[Mapping[str, Any]], Position]:
    def position_of(item: Mapping[str, Any]) -> Position:
        value = item[sort_attribute]
        return Position(
            int(value) if isinstance(value, Decimal) else str(value), str(item[schema.OBJECT_KEY])
        )

    return position_of
