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
`user_partitions`) and merges them (`shard_merge.merge_page`): by (sort value, objectKey) across shards, in
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

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, ClassVar

from boto3.dynamodb.conditions import Attr

from file_index.read.file_queries import (
    BucketQuery,
    FileQuery,
    InvalidStartKey,
    ListCursor,
    Page,
    Plan,
    UnavailableOrder,
    UserQuery,
    ZWalk,
    has_size,
    holds_no_time,
    public_item,
)
from file_index.read.shard_reader import (
    Partition,
    ShardReader,
    all_of,
    key_range,
    position_getter,
)
from file_index.rules import cost, schema, shard_merge, shards, zorder
from file_index.rules.objects import MAX_KEY_BYTES
from file_index.rules.placement import ShardPlacement
from file_index.rules.shard_merge import (
    InvalidMergeCursorError,
    MergeCursor,
    MergedPage,
    Position,
    ShardFetch,
)
from file_index.store import queries
from file_index.store.expressions import SharedClient

# Round trips a page makes at most: each round reads the shards that need it in parallel, so a page
# answers in at most this many Query latencies, and makes at most this many Queries of a shard.
PAGE_ROUNDS = 4
# The page size the planner assumes when it is not told (the API's default `limit`).
DEFAULT_PAGE = 100


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
        item = queries.item_of(self._table, {schema.OBJECT_KEY: object_key})
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
            if holds_no_time(query):
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
        position_of = position_getter(sort_attribute)
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
        """One page of the shards' items in order (`shard_merge.merge_page`): each shard asked for its fair
        share, shards topped up as they run low, at most `PAGE_ROUNDS` rounds of Queries."""
        return shard_merge.merge_page(
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
            filter_condition = key_range(Attr(schema.SIZE), query.min_size, query.max_size)
            if plan is Plan.SIZE:
                index = schema.USER_SIZE_INDEX
                bounds = (query.min_size, query.max_size)
                low, high = query.key_bounds()
                filter_condition = (
                    Attr(schema.UPLOAD_DATE).begins_with(query.day_prefix)
                    if query.day_prefix is not None
                    else key_range(Attr(schema.UPLOAD_DATE), low, high)
                )
            user_shards = self._placement.user_shards(query.user)
            partitions = [
                Partition(
                    value,
                    Attr(schema.USER_SHARD).not_exists() if shard == 0 else Attr(schema.USER_SHARD).eq(shard),
                )
                for shard, value in enumerate(self._placement.user_partitions(query.user))
            ]
            assert len(partitions) == user_shards
            ranges = None
        else:
            partitions = [Partition(value, None) for value in self._placement.bucket_partitions(query.bucket)]
            if plan is Plan.UPLOAD_DATE:
                index = schema.BUCKET_DATE_INDEX
                ranges = None
                bounds = (query.start, query.end)
                filter_condition = key_range(Attr(schema.SIZE), query.min_size, query.max_size)
            elif plan is Plan.Z_ORDER:
                box = query.box()
                assert box is not None  # _check_plan / plan() chose Z only for a box it can represent
                index = schema.Z_ORDER_INDEX
                ranges = zorder.z_ranges(box, self._z_walk.max_ranges)
                bounds = (None, None)
                filter_condition = all_of(
                    key_range(Attr(schema.SIZE), query.min_size, query.max_size),
                    key_range(Attr(schema.UPLOAD_DATE), query.start, query.end),
                )
            else:
                index = schema.BUCKET_SIZE_INDEX
                ranges = None
                bounds = (query.min_size, query.max_size)
                filter_condition = key_range(Attr(schema.UPLOAD_DATE), query.start, query.end)
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
        return isinstance(value, int) and value >= 0 and has_size(query, value)
    return isinstance(value, str) and query.has_time(value)
