"""The merge that reads a sharded index back in order (the shards: `file_index.rules.shards`).

Merge
-----
`merge_page` reads one page of a sharded index in global order. Each shard is a callable that returns
the next batch of its items after a position, in the index's order (by sort value; how equal sort
values are ordered inside one shard is the shard's business, e.g. DynamoDB's own order). The merge
returns the first `limit` items in order of (sort value, objectKey), reversed for a descending read,
each item exactly once, and a `MergeCursor` holding, for each shard, where it resumes: the sort value
of its next item, inclusive (a `compact` position, no object key), or the position of its last *returned*
item when the next one ties with it (never the last item read ahead), or that it is exhausted.
Resuming from the cursor continues exactly where the page ended: paging through all pages gives the same
sequence as one long page.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from file_index.rules.shards import MAX_SHARD_COUNT, check_count

T = TypeVar("T")
SortValue = int | str


class ShardContractError(RuntimeError):
    """A shard's fetcher broke its contract: an empty batch that is not the end, or items out of order."""


class InvalidMergeCursorError(ValueError):
    """A merge cursor that is malformed, or has more shards than the read it is used with."""


@dataclass(frozen=True, order=True)
class Position:
    """Where an item sits in the merged order: its index sort value, then its objectKey.

    The sort values of one merge are all int or all str.
    """

    sort_value: SortValue
    object_key: str

    def to_json(self) -> dict[str, Any]:
        return {"v": self.sort_value, "k": self.object_key}

    @classmethod
    def from_json(cls, data: Any) -> Position:
        if not isinstance(data, Mapping) or set(data) != {"v", "k"}:
            raise InvalidMergeCursorError("a position is {'v': sort value, 'k': objectKey}")
        value, key = data["v"], data["k"]
        if isinstance(value, bool) or not isinstance(value, int | str) or not isinstance(key, str):
            raise InvalidMergeCursorError("a position's sort value is an int or a str, its objectKey a str")
        return cls(value, key)


@dataclass(frozen=True)
class ShardCursor:
    """One shard's place in a merged read: after `after` (None: from its start), or exhausted."""

    after: Position | None = None
    exhausted: bool = False


@dataclass(frozen=True)
class MergeCursor:
    """Where the next page of a merged read starts: one `ShardCursor` per shard.

    `last` is the last item returned overall; a shard that the cursor does not know (the shard count
    was raised since) starts after it, so a page never goes back before what was already returned.
    """

    shards: tuple[ShardCursor, ...]
    last: Position | None = None

    @classmethod
    def start(cls, shard_count: int) -> MergeCursor:
        check_count(shard_count)
        return cls(tuple(ShardCursor() for _ in range(shard_count)))

    @property
    def finished(self) -> bool:
        return all(shard.exhausted for shard in self.shards)

    def widened(self, shard_count: int) -> MergeCursor:
        """This cursor for `shard_count` shards; new shards start after `last`. Fewer shards: refused."""
        check_count(shard_count)
        if shard_count < len(self.shards):
            raise InvalidMergeCursorError(
                f"the cursor has {len(self.shards)} shards, more than the {shard_count} read now"
            )
        extra = tuple(ShardCursor(after=self.last) for _ in range(shard_count - len(self.shards)))
        return MergeCursor(self.shards + extra, self.last)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, to be signed and sealed by the caller like any other cursor. A compact position is
        `[sort value]`, a full one `{"v": sort value, "k": objectKey}`."""
        return {
            "shards": [
                "exhausted"
                if shard.exhausted
                else None
                if shard.after is None
                else [shard.after.sort_value]
                if not shard.after.object_key
                else shard.after.to_json()
                for shard in self.shards
            ],
            "last": None if self.last is None else self.last.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any) -> MergeCursor:
        if not isinstance(data, Mapping) or set(data) != {"shards", "last"}:
            raise InvalidMergeCursorError("a merge cursor is {'shards': [...], 'last': ...}")
        entries = data["shards"]
        if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_SHARD_COUNT:
            raise InvalidMergeCursorError(f"a merge cursor has 1-{MAX_SHARD_COUNT} shards")
        shards = tuple(
            ShardCursor(exhausted=True)
            if entry == "exhausted"
            else ShardCursor(None if entry is None else _position_from_json(entry))
            for entry in entries
        )
        last = None if data["last"] is None else Position.from_json(data["last"])
        return cls(shards, last)


def _position_from_json(entry: Any) -> Position:
    if isinstance(entry, list):
        if len(entry) != 1:
            raise InvalidMergeCursorError("a compact position is [sort value]")
        return Position.from_json({"v": entry[0], "k": ""})
    return Position.from_json(entry)


@dataclass(frozen=True)
class ShardBatch[T]:
    """What one fetch of one shard returns: items in the shard's order, and whether nothing follows.

    `resume` is where the fetch stopped reading when that is past its last item: a filtered read
    (DynamoDB's FilterExpression, a box) reads items it does not keep, and the next fetch of the shard
    starts after `resume` rather than going over them again. None: after the last item.
    """

    items: Sequence[T]
    exhausted: bool
    resume: Position | None = None


# fetch(after, count): up to `count` items of the shard strictly after `after` (None: from its start), in
# the read's order; `after` with an empty objectKey (`compact`) means from its sort value on, inclusive.
# At least one item unless `exhausted` or `resume` moved past `after`; more than `count` is allowed (read
# ahead).
ShardFetch = Callable[[Position | None, int], ShardBatch[T]]


@dataclass(frozen=True)
class MergedPage[T]:
    """One page of a merged read, with the cursor of the next (None: every shard is exhausted)."""

    items: list[T]
    cursor: MergeCursor | None
    fetches: int  # calls made to the fetchers (requests, if each fetch is one query)
    items_read: int  # items the fetchers returned, read ahead included
    # The shard each item came from, and the cursor the page started from (widened): enough to make
    # the cursor of any shorter page (`cursor_after`), e.g. one cut to fit a response limit.
    sources: list[int] = field(default_factory=list)
    start: MergeCursor | None = None
    # True when the page stopped at `max_rounds` before it was full: it has a cursor, maybe no items.
    stopped_early: bool = False
    # Rounds of fetches made one after the other (the fetches of one round run together): the page's
    # round trips in sequence when each fetch is one query and the shards are read in parallel.
    rounds: int = 0


class Descending:
    """Reverses the order of a Position, so one min-heap serves both directions."""

    __slots__ = ("position",)

    def __init__(self, position: Position) -> None:
        self.position = position

    def __lt__(self, other: Descending) -> bool:
        return other.position < self.position


class MergingShard[T]:
    """One shard in a merge: the items fetched but not yet returned, and how far it was returned and read."""

    def __init__(self, cursor: ShardCursor) -> None:
        self.buffer: deque[tuple[Position, T]] = deque()
        self.exhausted = cursor.exhausted
        self.returned = cursor.after  # position of the last item returned from this shard
        self.read_to = cursor.after  # position of the last item fetched

    @property
    def needs_fetch(self) -> bool:
        return not self.buffer and not self.exhausted


def merge_page[T](
    fetchers: Sequence[ShardFetch[T]],
    *,
    position_of: Callable[[T], Position],
    limit: int,
    ascending: bool,
    cursor: MergeCursor | None = None,
    batch_size: int | None = None,
    executor: Executor | None = None,
    max_rounds: int | None = None,
    top_up: bool = False,
) -> MergedPage[T]:
    """The next `limit` items of a sharded read, in global order, and where the page after starts.

    A shard is fetched only when the merge needs its next item and has none buffered; each fetch asks
    for what the page may still need (`limit` minus items returned so far, capped by `batch_size`), so
    no shard is asked for more than the page could take from it. Shards that need a fetch at the same
    moment (all of them, at the start) are fetched together on `executor` if one is given.

    `max_rounds` bounds the work of one page (a filtered read may read much and keep little) in round
    trips: once that many rounds were made and a shard still needs a fetch, the page ends with a cursor;
    a shard that read past its kept items resumes after what it read. A round fetches each shard at most
    once, so a page makes at most `max_rounds` x shards fetches. A page that ends on the bound still
    returns every item it holds that no shard can precede any more: those before every waiting shard's
    read position (perhaps none).

    `cursor` resumes a previous page; a cursor from fewer shards is widened (`MergeCursor.widened`).
    An item ranked before the previous page's last sort value can only have been written since that
    page; it is skipped, as a single index's cursor skips writes behind it, so pages never go back.
    `top_up`: a round of fetches also fetches the shards whose buffer holds less than their even part of
    what the page still needs, so a sparse read (a fetch returning an item or none) does not make a round of
    its own for each shard in turn: fewer rounds, for a little read ahead.
    Raises `ShardContractError` if a fetcher returns an empty batch that is not the end and does not
    move on, or items whose sort values go against the read's order.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if max_rounds is not None and max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
    start = MergeCursor.start(len(fetchers)) if cursor is None else cursor.widened(len(fetchers))
    shards: list[MergingShard[T]] = [MergingShard(shard_cursor) for shard_cursor in start.shards]
    last = start.last
    items: list[T] = []
    sources: list[int] = []
    fetches = 0
    rounds = 0
    items_read = 0
    stopped_early = False

    def rank(position: Position) -> Position | Descending:
        return position if ascending else Descending(position)

    heap: list[tuple[Position | Descending, int]] = []
    while len(items) < limit:
        needing = [index for index, shard in enumerate(shards) if shard.needs_fetch]
        if needing:
            # Every shard must show its next item before the smallest can be taken: fetch first.
            # The first round asks every shard, whatever the bound: then each page moves every shard
            # that needs it on (or returns items), so following the cursors always ends.
            if max_rounds is not None and rounds >= max_rounds:
                stopped_early = True
                last = _drain(shards, heap, rank, limit, items, sources, ascending) or last
                break
            wanted = limit - len(items)
            if batch_size is not None:
                wanted = min(wanted, batch_size)
            # Shards about to run dry (less than their part of what the page still needs) are topped up in
            # the same round: a sparse read would otherwise make a round of its own for each, in turn.
            if top_up:
                active = sum(1 for shard in shards if not shard.exhausted)
                need = math.ceil((limit - len(items)) / max(1, active))
                needing += [
                    index
                    for index, shard in enumerate(shards)
                    if len(shard.buffer) < need and not shard.exhausted and index not in needing
                ]
            items_read += fetch_round(
                fetchers, shards, needing, wanted, executor, heap, rank, position_of, ascending, start.last
            )
            fetches += len(needing)
            rounds += 1
            continue
        if not heap:
            break
        _, last = take_next(shards, heap, rank, items, sources)

    next_cursor = MergeCursor(tuple(_resume(shard) for shard in shards), last)
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


def fetch_round[T](
    fetchers: Sequence[ShardFetch[T]],
    shards: list[MergingShard[T]],
    needing: list[int],
    wanted: int,
    executor: Executor | None,
    heap: list[tuple[Any, int]],
    rank: Callable[[Position], Any],
    position_of: Callable[[T], Position],
    ascending: bool,
    floor: Position | None,
) -> int:
    """Fetch each shard of `needing` (one fetch each, together on `executor` when there are several) for
    `wanted` items, buffer what it keeps (`_take`) and queue on `heap` the head of each shard whose buffer
    was empty. The items the fetchers returned."""
    requests = [(fetchers[index], shards[index].read_to) for index in needing]
    if executor is not None and len(requests) > 1:
        futures = [executor.submit(fetch, after, wanted) for fetch, after in requests]
        batches = [future.result() for future in futures]
    else:
        batches = [fetch(after, wanted) for fetch, after in requests]
    items_read = 0
    for index, batch in zip(needing, batches, strict=True):
        items_read += len(batch.items)
        queued = bool(shards[index].buffer)  # its head is in the heap already
        _take(shards[index], index, batch, position_of, ascending, floor)
        if shards[index].buffer and not queued:
            heapq.heappush(heap, (rank(shards[index].buffer[0][0]), index))
    return items_read


def _drain[T](
    shards: list[MergingShard[T]],
    heap: list[tuple[Any, int]],
    rank: Callable[[Position], Any],
    limit: int,
    items: list[T],
    sources: list[int],
    ascending: bool,
) -> Position | None:
    """Move to `items` the buffered items of a page that stops before it is full which no shard can still
    precede: those whose sort value comes strictly before every waiting shard's read position (a waiting
    shard, its buffer empty, has read up to there and kept nothing since; a shard the drain empties waits
    from then on). Strictly, because inside one shard equal sort values come in the shard's order, not by
    object key. The last item moved, if any."""
    frontier = [shard.read_to for shard in shards if shard.needs_fetch]
    last: Position | None = None
    while heap and len(items) < limit:
        position = shards[heap[0][1]].buffer[0][0]
        if not all(w is not None and _before(position.sort_value, w.sort_value, ascending) for w in frontier):
            return last  # a shard that has read nothing yet may hold anything
        index, last = take_next(shards, heap, rank, items, sources)
        if shards[index].needs_fetch:
            frontier.append(shards[index].read_to)  # it waits too now: nothing past what it read is known
    return last


def take_next[T](
    shards: list[MergingShard[T]],
    heap: list[tuple[Any, int]],
    rank: Callable[[Position], Any],
    items: list[T],
    sources: list[int],
) -> tuple[int, Position]:
    """Move the first buffered item in the merged order to `items`: its shard and its position."""
    _, index = heapq.heappop(heap)
    shard = shards[index]
    position, item = shard.buffer.popleft()
    items.append(item)
    sources.append(index)
    shard.returned = position
    if shard.buffer:
        heapq.heappush(heap, (rank(shard.buffer[0][0]), index))
    return index, position


def _resume[T](shard: MergingShard[T]) -> ShardCursor:
    """Where a shard's next page starts.

    A shard without buffered items has handed over everything it read: it resumes after that (past items
    a filter dropped). One with buffered items resumes at its next item's sort value, inclusive, when that
    is not the sort value of its last returned item (`compact`: no object key to carry, so a cursor stays
    small whatever the keys); on a tie, after its last returned item.
    """
    if not shard.buffer:
        return ShardCursor(shard.read_to, shard.exhausted)
    if shard.returned is None:
        return ShardCursor()  # it has handed over nothing: from its start again
    return _resume_before(shard.buffer[0][0], shard.returned)


def _resume_before(head: Position, stands: Position | None) -> ShardCursor:
    """A shard whose next item is at `head`, standing after `stands`: from `head`'s sort value on (no key),
    unless that ties with where it stands (equal sort values come in the shard's order, not by key)."""
    if stands is not None and stands.sort_value == head.sort_value:
        return ShardCursor(stands)
    return ShardCursor(compact(head.sort_value))


def compact(sort_value: SortValue) -> Position:
    """The position "from `sort_value` on, inclusive" (an empty object key): every item of the shard at
    that sort value and after it in the read's order is still to come."""
    return Position(sort_value, "")


def cursor_after(
    start: MergeCursor,
    sources: Sequence[int],
    positions: Sequence[Position],
    count: int,
    end: MergeCursor | None,
) -> MergeCursor:
    """The cursor just after the first `count` items of a page: `sources[i]` is the shard of the page's
    item at `positions[i]` (every item of the page, in its order), `start` the cursor the page started
    from, `end` the page's own next cursor (None: it read every shard to its end).

    Items leave the merge in order, so each shard stands after its last item among the first `count`
    (or where the page started it). A shard with items after the cut resumes at the sort value of the
    first of them (`compact`, no key) unless that ties with where it stands; a shard without resumes where
    the page left it (`end`): it returned nothing after the cut.
    """
    if len(sources) != len(positions) or not 0 <= count <= len(positions):
        raise ValueError("one shard per position, and a cut inside the page")
    after = [shard.after for shard in start.shards]
    for source, position in zip(sources[:count], positions[:count], strict=True):
        after[source] = position
    last = positions[count - 1] if count else start.last
    following: dict[int, Position] = {}
    for source, position in zip(sources[count:], positions[count:], strict=True):
        following.setdefault(source, position)
    resumes = []
    for index, stands in enumerate(after):
        head = following.get(index)
        if head is None:
            resumes.append(end.shards[index] if end is not None else ShardCursor(exhausted=True))
        else:
            resumes.append(_resume_before(head, stands))
    return MergeCursor(tuple(resumes), last)


def _before(value: SortValue, other: SortValue, ascending: bool) -> bool:
    return value < other if ascending else value > other  # type: ignore[operator]


def _take[T](
    shard: MergingShard[T],
    index: int,
    batch: ShardBatch[T],
    position_of: Callable[[T], Position],
    ascending: bool,
    floor: Position | None,
) -> None:
    previous = shard.read_to
    # A shard fetched with nothing buffered has handed over all it read so far (returned or filtered out),
    # so a cursor may resume it after that even if this batch's items are left unreturned.
    if previous is not None and not shard.buffer:
        shard.returned = previous
    # Inside one shard, equal sort values come in the shard's own order (DynamoDB's), not by object key,
    # so a resume position that differs from the last one is progress, wherever its key sorts.
    moved_on = batch.resume is not None and batch.resume != previous
    if not batch.items and not batch.exhausted and not moved_on:
        raise ShardContractError(f"shard {index} returned no items but is not exhausted")
    for item in batch.items:
        position = position_of(item)
        if previous is not None and _before(position.sort_value, previous.sort_value, ascending):
            raise ShardContractError(
                f"shard {index} returned sort value {position.sort_value!r} after {previous.sort_value!r}"
            )
        previous = position
        if floor is not None and _before(position.sort_value, floor.sort_value, ascending):
            # Every item before the previous page's last sort value was returned by then, so this one
            # was written since: like an unsharded index, a read does not go back for it.
            shard.returned = position
            continue
        shard.buffer.append((position, item))
    if batch.resume is not None:
        if previous is not None and _before(batch.resume.sort_value, previous.sort_value, ascending):
            raise ShardContractError(
                f"shard {index} resumes at sort value {batch.resume.sort_value!r}, "
                f"before {previous.sort_value!r}"
            )
        previous = batch.resume
    shard.read_to = previous
    shard.exhausted = batch.exhausted
