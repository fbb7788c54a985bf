"""Read side of `FileMetaData`: one file by key, and the lists of a user or a bucket, sharded and boxed.

A list reads one plan (`Plan`), which is also the order of its answer:

| plan (= order) | index | key condition | filter |
|---|---|---|---|
| `size` | `bucketName-size-index` | each bucket shard, size bounds | upload time bounds |
| `uploadDate` | `uploadUser-uploadDate-index` | each user shard, time bounds | size bounds |
| `size` (a user, `order_by="size"`) | `uploadUser-size-index` | each user shard, size bounds | time bounds |
| `uploadDate` (a bucket) | `bucketName-uploadDate-index` | each bucket shard, time bounds | size bounds |
| `zAddress` | `bucketName-zAddress-index` | each bucket shard, the box's z-range, walked | the box |

`FileReader.plans` says which plans can answer a query, `FileReader.plan` chooses: a user's list is
`uploadDate`, or `size` when asked in that order. A bucket's list asked in an order
(`BucketQuery.order_by`) is read in it (`uploadDate` needs the bucket's time index). A bucket's list
without time bounds is `size`. With time bounds, every plan the deployment has may answer (the time
index, the size index, the Z-order index when it is on and built: the placement says it exists, the caller
that every entry has its address); with the bucket's statistics
(`cost.IndexStatistics`) the planner takes the one whose estimated read units are least
(`cost.estimate_plan`), without them a fixed rule (time bounds alone: the time index; else the Z-order
index if it can answer, else `size`). Without the bounds a plan does not key on, a list reads exactly the
items it returns, plus the shards' read-ahead.

The Z-order walk (`ZWalk`): a shard reads the box's address range in order; when a Query stops on an entry
outside the box (its `LastEvaluatedKey`), the next one starts at the next address inside the box
(BIGMIN/LITMAX), so a stretch outside the box is skipped, read by no Query. Each of its Queries asks for
what the page still needs, at least `Z_WALK_MIN_LIMIT` items.

Each plan reads every partition value of its bucket or user (`ShardPlacement.bucket_partitions`,
`user_partitions`) and merges them (`shards.merge_page`): by (sort value, objectKey) across shards, in
DynamoDB's order inside one. A user partition `u#k` holds a hot user's shard k only where the entry's
`userShard` is k, and the partition `u` only entries without `userShard` (a user whose own name is
`u#k` writes none), so a filter on `userShard` keeps them apart.

A filtered read may read far more than it keeps, so every page is bounded: at most `PAGE_ROUNDS` rounds
of Queries (the shards of a round in parallel, so a page waits for at most that many Query latencies and
makes at most that many Queries of a shard), each Query reading at most `MAX_QUERY_ITEMS` items. A round
also tops up the shards running low, so a shard does not wait for a round of its own. A page that reaches
the bound ends with what it has, every item no shard can precede (possibly nothing), and a cursor past
what it read.

Paging: `ListCursor` is the plan and the merge's `MergeCursor` (where each shard resumes: its next item's
sort value, its last returned item on a tie, or how far a filtered read got) as plain JSON, for the caller
to sign. A cursor is checked against its query
(`InvalidStartKey`) before any read, so it cannot move a read outside the query it was made for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, ClassVar

from boto3.dynamodb.conditions import Attr, ConditionBase, Key

from file_index.rules import cost, schema, shards, zorder
from file_index.rules.objects import MAX_KEY_BYTES
from file_index.rules.placement import ShardPlacement
from file_index.rules.shards import (
    InvalidMergeCursorError,
    MergeCursor,
    MergedPage,
    Position,
    ShardBatch,
    ShardFetch,
)
from file_index.store.expressions import SharedClient

# The attributes a search answers with (the README's attribute table); bookkeeping attributes stay private.
PUBLIC_ATTRIBUTES = (schema.OBJECT_KEY, *schema.OBJECT_ATTRIBUTES, *schema.ENRICHMENT_ATTRIBUTES)

# DynamoDB answers at most 1 MB per Query whatever its Limit; this bounds the items one Query may read.
MAX_QUERY_ITEMS = 1000
# A filtered Query reads at most this many times what the page still needs from its shard.
READ_AHEAD_FACTOR = 8
# Round trips a page makes at most: each round reads the shards that need it in parallel, so a page
# answers in at most this many Query latencies, and makes at most this many Queries of a shard.
PAGE_ROUNDS = 4
# The page size the planner assumes when it is not told (the API's default `limit`).
DEFAULT_PAGE = 100
# The Z-order walk asks at least this many items of a Query: about one read unit (4 KB) of entries, the
# least a Query is billed, so a short read costs no more than a jump and may save one.
Z_WALK_MIN_LIMIT = 10


@dataclass(frozen=True)
class ZWalk:
    """How the Z-order plan walks each shard.

    The walk reads the box's `max_ranges` z-ranges in order. A Query whose read stops on an entry outside
    the box goes on from the next address inside it (BIGMIN, or LITMAX reading downwards): whatever lies
    between is skipped, read by no Query. `min_limit` is the least a Query asks for (the page's need
    otherwise). `ZWalk()` is the deployed walk; other values make it jump more often (tests).
    """

    max_ranges: int = zorder.WALK_MAX_RANGES
    min_limit: int = Z_WALK_MIN_LIMIT


class Plan(StrEnum):
    """How a list is read, named by the attribute its answer is ordered by (the API's `orderedBy`)."""

    SIZE = "size"
    UPLOAD_DATE = "uploadDate"
    Z_ORDER = "zAddress"


@dataclass(frozen=True)
class UserQuery:
    """A user's files, `start`..`end` inclusive (ISO-8601 UTC strings), `min_size`..`max_size` bytes.

    `day_prefix` ("YYYY-MM-DD") selects one UTC day with `begins_with`; it excludes `start`/`end`.
    """

    user: str
    start: str | None = None
    end: str | None = None
    day_prefix: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    ascending: bool = True
    # The order asked for (the API's `sort`): "size" reads the user's size index; None: by upload time.
    order_by: str | None = None

    def __post_init__(self) -> None:
        _drop_zero_size(self)

    def key_bounds(self) -> tuple[str | None, str | None]:
        """The range of `uploadDate` (the user index's sort key) to read, inclusive, None for an open side.
        A day is the range of its timestamps: every `uploadDate` of it starts with the day and a "T"."""
        if self.day_prefix is not None:
            return self.day_prefix, self.day_prefix + "~"
        return self.start, self.end

    def has_time(self, date: str) -> bool:
        if self.day_prefix is not None:
            return date.startswith(self.day_prefix)
        return _between(date, self.start, self.end)


@dataclass(frozen=True)
class BucketQuery:
    """A bucket's files, `min_size`..`max_size` bytes, uploaded `start`..`end` (inclusive, ISO-8601 UTC)."""

    bucket: str
    min_size: int | None = None
    max_size: int | None = None
    start: str | None = None
    end: str | None = None
    ascending: bool = False
    # The order asked for (the API's `sort`): "size" or "uploadDate"; None leaves it to the plan.
    order_by: str | None = None

    def __post_init__(self) -> None:
        _drop_zero_size(self)

    @property
    def has_time_bounds(self) -> bool:
        return self.start is not None or self.end is not None

    @property
    def has_size_bounds(self) -> bool:
        return self.min_size is not None or self.max_size is not None

    def has_time(self, date: str) -> bool:
        return _between(date, self.start, self.end)

    def box(self) -> zorder.Box | None:
        """The query as a Z-order box, or None if the Z-order index cannot represent it (before 1970)."""
        try:
            from_ms = None if self.start is None else zorder.epoch_millis(self.start)
            to_ms = None if self.end is None else zorder.epoch_millis(self.end)
            # Bounds beyond what an address can hold (before 1970, after 2109) are open sides: every
            # address is inside them, so the box keeps the Z-order index (`from=1900-01-01`).
            return zorder.Box(
                from_ms=None if from_ms is not None and from_ms < 0 else from_ms,
                to_ms=None if to_ms is not None and to_ms > zorder.MAX_TIME_MS else to_ms,
                min_size=self.min_size,
                max_size=self.max_size,
            )
        except zorder.ZOrderError:
            return None


FileQuery = UserQuery | BucketQuery


def _drop_zero_size(query: FileQuery) -> None:
    """A smallest size of 0 bounds nothing (sizes are never negative): it is no bound, so it does not
    keep a list off the plans that read only what they return."""
    if query.min_size == 0:
        object.__setattr__(query, "min_size", None)


def _holds_no_time(query: FileQuery) -> bool:
    """True when the time bounds hold no stored millisecond (`from` rounded up past `to`)."""
    return query.start is not None and query.end is not None and query.start > query.end


def _has_size(query: FileQuery, size: int) -> bool:
    return _between(size, query.min_size, query.max_size)


def _between[V: (int, str)](value: V, low: V | None, high: V | None) -> bool:
    """`low` <= `value` <= `high`, a bound of None being open."""
    return (low is None or value >= low) and (high is None or value <= high)


def _range(attribute: Any, low: Any, high: Any) -> ConditionBase | None:
    """`attribute` between `low` and `high` (inclusive; either None for an open side), or None."""
    if low is not None and high is not None:
        return attribute.between(low, high)
    if low is not None:
        return attribute.gte(low)
    if high is not None:
        return attribute.lte(high)
    return None


def _and(*conditions: ConditionBase | None) -> ConditionBase | None:
    result: ConditionBase | None = None
    for condition in conditions:
        if condition is not None:
            result = condition if result is None else result & condition
    return result


class UnavailableOrder(ValueError):
    """The list was asked in an order no index of this deployment holds (the message says which)."""


class InvalidStartKey(ValueError):
    """A cursor position that is malformed, outside its query, or of a plan or placement not read now."""


@dataclass(frozen=True)
class ListCursor:
    """Where the next page of a list starts: the plan it was read with and each shard's place."""

    plan: Plan
    merge: MergeCursor

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.value, "merge": self.merge.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> ListCursor:
        """The cursor of `to_json`'s output; InvalidStartKey if it is not one."""
        if not isinstance(data, Mapping) or set(data) != {"plan", "merge"}:
            raise InvalidStartKey("not a list cursor")
        try:
            return cls(Plan(data["plan"]), MergeCursor.from_json(data["merge"]))
        except (ValueError, TypeError) as error:  # InvalidMergeCursorError is a ValueError
            raise InvalidStartKey(f"not a list cursor ({error})") from None


@dataclass(frozen=True)
class Page:
    """One page of a list: the items, the cursor of the next page (None: no more) and the read cost.

    `scanned_count` is what DynamoDB read (its ScannedCount, filtered items included), `request_count`
    the Queries made, `round_trips` how many of them ran one after the other (a round's shards run in
    parallel when the reader has an executor). `stopped_early`: the page reached its read bound before it
    was full.
    """

    items: list[dict[str, Any]]
    next_cursor: ListCursor | None
    scanned_count: int
    request_count: int
    ordered_by: Plan
    stopped_early: bool = False
    round_trips: int = 0  # Queries in sequence: rounds of the shards' Queries, each round in parallel
    _positions: tuple[Position, ...] = field(default=(), repr=False)
    _sources: tuple[int, ...] = field(default=(), repr=False)
    _start: MergeCursor | None = field(default=None, repr=False)

    def cursor_after(self, count: int) -> ListCursor:
        """The cursor just after the first `count` (at least one) items, for a page cut shorter: as bounded
        as the page's own (`shards.cursor_after`)."""
        if not 1 <= count <= len(self.items) or self._start is None:
            raise ValueError(f"a page of {len(self.items)} items has no cursor after {count}")
        end = None if self.next_cursor is None else self.next_cursor.merge
        merge = shards.cursor_after(self._start, self._sources, self._positions, count, end)
        return ListCursor(self.ordered_by, merge)


def public_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata fields of an item, numbers as int, absent fields omitted; the bucket and the user
    as they are, never a shard's partition value."""
    result: dict[str, Any] = {}
    for name in PUBLIC_ATTRIBUTES:
        value = item.get(name)
        if value is None:
            continue
        result[name] = int(value) if isinstance(value, Decimal) else value
    if isinstance(result.get(schema.BUCKET_NAME), str):
        result[schema.BUCKET_NAME] = ShardPlacement.public_bucket(result[schema.BUCKET_NAME])
    if isinstance(result.get(schema.UPLOAD_USER), str):
        user_shard = item.get(schema.USER_SHARD)
        result[schema.UPLOAD_USER] = ShardPlacement.public_user(
            result[schema.UPLOAD_USER], int(user_shard) if isinstance(user_shard, Decimal | int) else None
        )
    return result


@dataclass(frozen=True)
class _Partition:
    """One partition value a plan reads, and the filter that keeps only its own entries."""

    value: str
    shard_filter: ConditionBase | None


class ShardReader:
    """The fetcher of one partition (`shards.ShardFetch`): one Query per call.

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
        partition: _Partition,
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
        self._filter = _and(filter_condition, partition.shard_filter)
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
        sort_condition = _range(sort_key, low, high)
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
            "KeyConditionExpression": _and(
                Key(self._index.partition_key.name).eq(self._partition.value), sort_condition
            ),
            "ScanIndexForward": self._ascending,
            "Limit": limit,
        }
        if self._filter is not None:
            request["FilterExpression"] = self._filter
        if start_key is not None:
            request["ExclusiveStartKey"] = start_key
        response = self._client.query(**request)
        items: list[dict[str, Any]] = response.get("Items", [])
        self.requests += 1
        self.scanned += int(response.get("ScannedCount", len(items)))
        if self._keep is not None:
            # A condition DynamoDB cannot evaluate (words of a name): read like a filter, kept here.
            items = [item for item in items if self._keep(item)]
        self._kept += len(items)
        evaluated = response.get("LastEvaluatedKey")
        if evaluated is not None:
            resume = self._position(evaluated)
            if self._box is not None:
                landing = self._jump(str(resume.sort_value))
                if landing is None:
                    return ShardBatch(items, exhausted=True)  # nothing of the box lies further on
                if landing != resume.sort_value:
                    resume = shards.compact(landing)
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
        return shards.compact(format(value, f"0{zorder.ADDRESS_WIDTH}x"))


def _position_of(sort_attribute: str) -> Callable[[Mapping[str, Any]], Position]:
    def position_of(item: Mapping[str, Any]) -> Position:
        value = item[sort_attribute]
        return Position(
            int(value) if isinstance(value, Decimal) else str(value), str(item[schema.OBJECT_KEY])
        )

    return position_of


class FileReader:
    """Answers searches from a boto3 `Table` resource (`boto3.resource("dynamodb").Table(name)`).

    `placement` says which partition values hold a bucket or a user and whether the Z-order index exists;
    `executor`, when given, runs the Queries of a page's shards in parallel. Queries go through the
    table's client with their conditions built per request (`expressions.SharedClient`): the client is safe
    to share between threads, its condition builder is not, and a resource object is not.
    """

    # What reads one partition; `_merge` puts the partitions' pages together.
    _shard_reader_class: ClassVar[type[ShardReader]] = ShardReader

    def __init__(
        self,
        table: Any,
        placement: ShardPlacement | None = None,
        executor: Executor | None = None,
        *,
        bucket_time_index: bool = True,
        z_walk: ZWalk | None = None,
    ) -> None:
        """`bucket_time_index`: the table has `bucketName-uploadDate-index` (`bucketTimeIndex`); `z_walk`:
        how the Z-order plan walks a shard (`ZWalk()` unless told)."""
        self._table = table
        self._client = SharedClient(table.meta.client)  # the shard threads query through it at once
        self._placement = placement if placement is not None else ShardPlacement()
        self._executor = executor
        self._bucket_time_index = bucket_time_index
        self._z_walk = z_walk if z_walk is not None else ZWalk()

    @property
    def placement(self) -> ShardPlacement:
        return self._placement

    def get_file(self, object_key: str) -> dict[str, Any] | None:
        """The indexed file under `object_key` (URL-decoded), or None if absent or deleted."""
        item = self._table.get_item(Key={schema.OBJECT_KEY: object_key}).get("Item")
        if item is None or item.get(schema.DELETED):
            return None
        return public_item(item)

    def plans(self, query: FileQuery, *, z_order_ready: bool = True) -> list[Plan]:
        """The plans that can answer `query` here (each reads it exactly, in its own order).

        A user's list: `uploadDate`, or `size` when asked in that order. A bucket's list asked in an
        order: that order's plan (UnavailableOrder if no index holds it). Otherwise `size`, and with time
        bounds also the bucket's time index and the Z-order index where they exist and can answer.
        Without time bounds the size index reads exactly what it returns, so it is the only plan.
        """
        if isinstance(query, UserQuery):
            return [Plan.SIZE] if query.order_by == Plan.SIZE else [Plan.UPLOAD_DATE]
        if query.order_by == Plan.UPLOAD_DATE:
            if not self._bucket_time_index:
                raise UnavailableOrder(
                    "a bucket's files by upload time need the bucket's time index (bucketTimeIndex), "
                    "which this deployment does not have"
                )
            return [Plan.UPLOAD_DATE]
        if query.order_by == Plan.SIZE or not query.has_time_bounds:
            return [Plan.SIZE]
        found = [Plan.SIZE]
        if self._bucket_time_index:
            found.append(Plan.UPLOAD_DATE)
        if self._z_order_usable(query, z_order_ready=z_order_ready):
            found.append(Plan.Z_ORDER)
        return found

    def plan(
        self,
        query: FileQuery,
        *,
        z_order_ready: bool = True,
        statistics: cost.IndexStatistics | None = None,
        page: int = DEFAULT_PAGE,
    ) -> Plan:
        """The plan a new list of `query` reads: the cheapest in read units of `plans(query)`.

        Time bounds without size bounds: the bucket's time index, which reads what it returns. Otherwise,
        with `statistics` (the index state record's, `cost.IndexStatistics`) each plan's read units for
        the whole answer, in pages of `page` items, are estimated (`cost.estimate_plan`); without them,
        the Z-order index if it can answer, else the size index.
        `z_order_ready`: every entry has its Z-order address (the index state record's `zOrderPending`
        is not set), so the Z-order index answers exactly.
        """
        candidates = self.plans(query, z_order_ready=z_order_ready)
        if len(candidates) == 1:
            return candidates[0]
        assert isinstance(query, BucketQuery)
        if Plan.UPLOAD_DATE in candidates and not query.has_size_bounds:
            return Plan.UPLOAD_DATE  # the time range is the answer: it reads what it returns
        if statistics is not None:
            # Equal read units (small boxes: a Query a shard either way): the plan that reads fewer items.
            estimates = {plan: self.estimate(query, plan, statistics, page) for plan in candidates}
            return min(candidates, key=lambda plan: (estimates[plan].read_units, estimates[plan].read))
        return Plan.Z_ORDER if Plan.Z_ORDER in candidates else Plan.SIZE

    def estimate(
        self, query: BucketQuery, plan: Plan, statistics: cost.IndexStatistics, page: int = DEFAULT_PAGE
    ) -> cost.PlanCost:
        """The estimated cost of all of `query` on `plan`, in pages of `page` (`cost.estimate_plan`)."""
        box = query.box() or zorder.Box(min_size=query.min_size, max_size=query.max_size)
        shard_count = len(self._placement.bucket_partitions(query.bucket))
        return cost.estimate_plan(plan.value, statistics, box, shards=shard_count, page=page)

    def _z_order_usable(self, query: BucketQuery, *, z_order_ready: bool) -> bool:
        return self._placement.multi_attribute_index and z_order_ready and query.box() is not None

    def list_files(
        self,
        query: FileQuery,
        *,
        limit: int,
        start: ListCursor | None = None,
        z_order_ready: bool = True,
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
        statistics: cost.IndexStatistics | None = None,
        plan: Plan | None = None,
    ) -> Page:
        """Up to `limit` items of `query` in its plan's order, from `start` on (a new list: the plan of
        `plan(query, z_order_ready=...)`; a continued one: the cursor's plan, if it can still be read).

        InvalidStartKey if `start` does not belong to `query` or names more shards than are read now.
        `keep`, when given, is one more condition on the items read, checked here (a filter DynamoDB
        cannot express): items it refuses are read, counted and skipped as a FilterExpression's are.
        """
        if start is None:
            if plan is None:
                plan = self.plan(query, z_order_ready=z_order_ready, statistics=statistics, page=limit)
            elif plan not in self.plans(query, z_order_ready=z_order_ready):
                raise ValueError(f"the {plan.value} plan cannot read this query here")
            if _holds_no_time(query):
                # A box between two stored milliseconds: nothing to read (DynamoDB refuses lo > hi).
                return Page(items=[], next_cursor=None, scanned_count=0, request_count=0, ordered_by=plan)
            cursor = None
        else:
            plan = start.plan
            self._check_plan(query, plan, z_order_ready=z_order_ready)
            cursor = start.merge
        fetchers, sort_attribute = self._fetchers(query, plan, keep)
        if cursor is not None:
            self._check_cursor(query, plan, cursor, len(fetchers))
        position_of = _position_of(sort_attribute)
        merged = self._merge(
            fetchers, position_of=position_of, limit=limit, ascending=query.ascending, cursor=cursor
        )
        return Page(
            items=[public_item(item) for item in merged.items],
            next_cursor=None if merged.cursor is None else ListCursor(plan, merged.cursor),
            scanned_count=sum(fetcher.scanned for fetcher in fetchers),
            request_count=sum(fetcher.requests for fetcher in fetchers),
            ordered_by=plan,
            stopped_early=merged.stopped_early,
            round_trips=merged.rounds,
            _positions=tuple(position_of(item) for item in merged.items),
            _sources=tuple(merged.sources),
            _start=merged.start,
        )

    def _merge(
        self,
        fetchers: Sequence[ShardFetch[dict[str, Any]]],
        *,
        position_of: Callable[[dict[str, Any]], Position],
        limit: int,
        ascending: bool,
        cursor: MergeCursor | None,
    ) -> MergedPage[dict[str, Any]]:
        """One page of the shards' items in order (`shards.merge_page`): each shard asked for its fair
        share, shards topped up as they run low, at most `PAGE_ROUNDS` rounds of Queries."""
        return shards.merge_page(
            fetchers,
            position_of=position_of,
            limit=limit,
            ascending=ascending,
            cursor=cursor,
            batch_size=shards.fair_share(limit, len(fetchers)),
            executor=self._executor if len(fetchers) > 1 else None,
            max_rounds=PAGE_ROUNDS,
            top_up=True,
        )

    def _check_plan(self, query: FileQuery, plan: Plan, *, z_order_ready: bool) -> None:
        """InvalidStartKey unless a cursor made on `plan` can go on reading `query` here."""
        if plan is Plan.UPLOAD_DATE and isinstance(query, BucketQuery) and not self._bucket_time_index:
            raise InvalidStartKey(
                "made with the bucket's time index, which this deployment does not have: start the list again"
            )
        if (
            plan is Plan.Z_ORDER
            and isinstance(query, BucketQuery)
            and query.has_time_bounds
            and query.order_by is None
            and not self._z_order_usable(query, z_order_ready=z_order_ready)
        ):
            raise InvalidStartKey(
                "made with the Z-order index, which cannot answer now (switched off or being "
                "migrated): start the list again"
            )
        try:
            valid = plan in self.plans(query, z_order_ready=z_order_ready)
        except UnavailableOrder:
            valid = False
        if not valid:
            raise InvalidStartKey(f"made with the {plan.value} plan, which does not read this query")

    def _fetchers(
        self, query: FileQuery, plan: Plan, keep: Callable[[Mapping[str, Any]], bool] | None = None
    ) -> tuple[list[ShardReader], str]:
        box: zorder.Box | None = None
        if isinstance(query, UserQuery):
            index = schema.USER_DATE_INDEX
            bounds: tuple[Any, Any] = query.key_bounds()
            filter_condition = _range(Attr(schema.SIZE), query.min_size, query.max_size)
            if plan is Plan.SIZE:
                index = schema.USER_SIZE_INDEX
                bounds = (query.min_size, query.max_size)
                low, high = query.key_bounds()
                filter_condition = (
                    Attr(schema.UPLOAD_DATE).begins_with(query.day_prefix)
                    if query.day_prefix is not None
                    else _range(Attr(schema.UPLOAD_DATE), low, high)
                )
            user_shards = self._placement.user_shards(query.user)
            partitions = [
                _Partition(
                    value,
                    Attr(schema.USER_SHARD).not_exists() if shard == 0 else Attr(schema.USER_SHARD).eq(shard),
                )
                for shard, value in enumerate(self._placement.user_partitions(query.user))
            ]
            assert len(partitions) == user_shards
            ranges = None
        else:
            partitions = [
                _Partition(value, None) for value in self._placement.bucket_partitions(query.bucket)
            ]
            if plan is Plan.UPLOAD_DATE:
                index = schema.BUCKET_DATE_INDEX
                ranges = None
                bounds = (query.start, query.end)
                filter_condition = _range(Attr(schema.SIZE), query.min_size, query.max_size)
            elif plan is Plan.Z_ORDER:
                box = query.box()
                assert box is not None  # _check_plan / plan() chose Z only for a box it can represent
                index = schema.Z_ORDER_INDEX
                ranges = zorder.z_ranges(box, self._z_walk.max_ranges)
                bounds = (None, None)
                filter_condition = _and(
                    _range(Attr(schema.SIZE), query.min_size, query.max_size),
                    _range(Attr(schema.UPLOAD_DATE), query.start, query.end),
                )
            else:
                index = schema.BUCKET_SIZE_INDEX
                ranges = None
                bounds = (query.min_size, query.max_size)
                filter_condition = _range(Attr(schema.UPLOAD_DATE), query.start, query.end)
        fetchers = [
            self._shard_reader_class(
                self._client,
                self._table.name,
                index=index,
                partition=partition,
                bounds=bounds,
                filter_condition=filter_condition,
                ranges=ranges,
                ascending=query.ascending,
                box=box,
                walk=self._z_walk if ranges is not None else None,
                keep=keep,
            )
            for partition in partitions
        ]
        return fetchers, index.sort_key.name

    def _check_cursor(self, query: FileQuery, plan: Plan, cursor: MergeCursor, shard_count: int) -> None:
        """InvalidStartKey unless every position of `cursor` lies inside `query` on `plan`."""
        try:
            cursor.widened(shard_count)
        except InvalidMergeCursorError:
            raise InvalidStartKey(
                f"made for {len(cursor.shards)} shards, more than the {shard_count} read now"
            ) from None
        positions = [shard.after for shard in cursor.shards if shard.after is not None]
        if cursor.last is not None:
            positions.append(cursor.last)
        for position in positions:
            if not _inside(query, plan, position):
                raise InvalidStartKey("a position is outside the query")


def _inside(query: FileQuery, plan: Plan, position: Position) -> bool:
    value, key = position.sort_value, position.object_key
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        return False
    if plan is Plan.Z_ORDER:
        # A position past a range has no key; only a real item's may start a Query.
        if not isinstance(value, str):
            return False
        try:
            zorder.address_value(value)
        except zorder.ZOrderError:
            return False
        return True
    # An empty key is a compact position (from that sort value on); the value must lie inside the query.
    if plan is Plan.SIZE:
        return isinstance(value, int) and value >= 0 and _has_size(query, value)
    return isinstance(value, str) and query.has_time(value)
