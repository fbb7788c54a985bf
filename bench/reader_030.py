"""Release 0.3.0's reader, the comparison of measure 13: the deployed reader with 0.3.0's walk and merge.

`Reader030` is `file_index.read.reader.FileReader` (the same plans, planner, Queries and checks) except where
0.3.0 read differently:

- the Z-order walk reads the box's `zorder.DEFAULT_MAX_RANGES` (32) z-ranges, each at least one Query
  per shard, and never jumps: a Query that stops outside the box goes on with the next item of its range;
  a Query asks for the page's need grown by what the shard's filter dropped (the read-ahead of the
  filtered plans), not the walk's least `Z_WALK_MIN_LIMIT`;
- a page is bounded by Queries (`page_request_budget`), not rounds: a page that reaches the bound ends
  with only the items it took before it stopped; shards are not topped up before they run dry;
- a cursor holds every shard's last returned item (its object key included), not the next item's sort
  value.

Its pages' `cursor_after` (a page cut short) is the deployed reader's; the bench does not cut pages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from file_index.read.file_queries import FileQuery, Plan, ZWalk
from file_index.read.reader import FileReader
from file_index.read.shard_reader import ShardReader
from file_index.rules import zorder
from file_index.rules.placement import ShardPlacement
from file_index.rules.shard_merge import (
    Descending,
    MergeCursor,
    MergedPage,
    MergingShard,
    Position,
    ShardCursor,
    ShardFetch,
    fetch_round,
    take_next,
)
from file_index.rules.shards import fair_share

# The Queries one page makes at most: at least PAGE_REQUESTS, or two per shard when there are more
# shards (the first round asks every shard once); on the Z-order index, its 32 ranges plus two a shard.
PAGE_REQUESTS = 32
Z_ORDER_PAGE_REQUESTS_PER_SHARD = zorder.DEFAULT_MAX_RANGES + 2


def page_request_budget(shard_count: int, plan: Plan) -> int:
    """The most Queries one page of a list over `shard_count` partitions makes on `plan`."""
    if plan is Plan.Z_ORDER:
        return Z_ORDER_PAGE_REQUESTS_PER_SHARD * shard_count
    return max(PAGE_REQUESTS, 2 * shard_count)


class _ShardReader030(ShardReader):
    """The deployed fetcher of one partition, walking 0.3.0's way: no jumps, read-ahead Limits."""

    def _query_limit(self, count: int) -> int:
        return self._limit(count)

    def _jump(self, address: str) -> str | None:
        return address  # goes on where the Query stopped, inside the box or not


class Reader030(FileReader):
    """0.3.0's reader over a table (see the module docstring); not safe to share between threads."""

    _shard_reader_class = _ShardReader030

    def __init__(
        self,
        table: Any,
        placement: ShardPlacement | None = None,
        executor: Executor | None = None,
        *,
        bucket_time_index: bool = True,
    ) -> None:
        super().__init__(
            table,
            placement,
            executor,
            bucket_time_index=bucket_time_index,
            z_walk=ZWalk(max_ranges=zorder.DEFAULT_MAX_RANGES),
        )
        self._budget = 1

    def _fetchers(
        self, query: FileQuery, plan: Plan, keep: Callable[[Mapping[str, Any]], bool] | None = None
    ) -> tuple[list[ShardReader], str]:
        fetchers, sort_attribute = super()._fetchers(query, plan, keep)
        # The page about to be merged (`_merge`, right after) is bounded by its plan's Queries.
        self._budget = page_request_budget(len(fetchers), plan)
        return fetchers, sort_attribute

    def _merge(
        self,
        fetchers: Sequence[ShardFetch[dict[str, Any]]],
        *,
        position_of: Callable[[dict[str, Any]], Position],
        limit: int,
        ascending: bool,
        cursor: MergeCursor | None,
    ) -> MergedPage[dict[str, Any]]:
        return merge_page(
            fetchers,
            position_of=position_of,
            limit=limit,
            ascending=ascending,
            cursor=cursor,
            batch_size=fair_share(limit, len(fetchers)),
            executor=self._executor if len(fetchers) > 1 else None,
            max_fetches=self._budget,
        )


def merge_page[T](
    fetchers: Sequence[ShardFetch[T]],
    *,
    position_of: Callable[[T], Position],
    limit: int,
    ascending: bool,
    cursor: MergeCursor | None = None,
    batch_size: int | None = None,
    executor: Executor | None = None,
    max_fetches: int | None = None,
) -> MergedPage[T]:
    """0.3.0's merge: the next `limit` items of a sharded read in global order, and where the next page
    starts (`file_index.rules.shard_merge.merge_page` without top-ups, bounded by fetches instead of rounds).

    A round fetches the shards that need their next item (on `executor`, when given), each asked for
    what the page may still need, capped by `batch_size`. Once `max_fetches` fetches were made and a
    shard still needs one, the page ends with the items taken so far (perhaps none); the first round
    always asks every shard, so a page makes at most max(`max_fetches`, shards) fetches. The cursor holds,
    for each shard, its last returned item, or how far it read when nothing it read is left over.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if max_fetches is not None and max_fetches < 1:
        raise ValueError(f"max_fetches must be at least 1, not {max_fetches}")
    start = MergeCursor.start(len(fetchers)) if cursor is None else cursor.widened(len(fetchers))
    shards: list[MergingShard[T]] = [MergingShard(shard_cursor) for shard_cursor in start.shards]
    last = start.last
    items: list[T] = []
    sources: list[int] = []
    fetches = rounds = items_read = 0
    stopped_early = False

    def rank(position: Position) -> Position | Descending:
        return position if ascending else Descending(position)

    heap: list[tuple[Position | Descending, int]] = []
    while len(items) < limit:
        needing = [index for index, shard in enumerate(shards) if shard.needs_fetch]
        if needing:
            if max_fetches is not None and fetches > 0:
                if fetches >= max_fetches:
                    stopped_early = True
                    break
                needing = needing[: max_fetches - fetches]
            wanted = limit - len(items)
            if batch_size is not None:
                wanted = min(wanted, batch_size)
            items_read += fetch_round(
                fetchers, shards, needing, wanted, executor, heap, rank, position_of, ascending, start.last
            )
            fetches += len(needing)
            rounds += 1
            continue
        if not heap:
            break
        _, last = take_next(shards, heap, rank, items, sources)

    next_cursor = MergeCursor(
        tuple(
            ShardCursor(shard.returned) if shard.buffer else ShardCursor(shard.read_to, shard.exhausted)
            for shard in shards
        ),
        last,
    )
    return MergedPage(
        items=items,
        cursor=None if next_cursor.finished else next_cursor,
        fetches=fetches,
        items_read=items_read,
        sources=sources,
        start=start,
        stopped_early=stopped_early,
        rounds=rounds,
    )
