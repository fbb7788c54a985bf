"""Write sharding: stable shard keys, live raises that lose nothing, and the ordered merge of shard pages."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.models import split_sharded_key
from file_index.rules.shard_merge import (
    InvalidMergeCursorError,
    MergeCursor,
    MergedPage,
    Position,
    ShardBatch,
    ShardContractError,
    ShardCursor,
    ShardFetch,
    compact,
    cursor_after,
    merge_page,
)
from file_index.rules.shards import (
    MAX_SHARD_COUNT,
    InvalidShardCountError,
    UnshardableValueError,
    fair_share,
    partition_key_for,
    partition_keys,
    shard_of,
    sharded_key,
)

# --- keys ------------------------------------------------------------------------------------------------


def test_shard_of_is_a_fixed_function_of_the_key() -> None:
    # Pinned: a different hash would move every entry written before it to the wrong shard.
    assert [shard_of(key, 16) for key in ("USER001_FILE001.txt", "a", "", "ü/x")] == [13, 15, 4, 10]
    assert shard_of("USER001_FILE001.txt", 256) == 29


def test_shard_of_spreads_keys_evenly() -> None:
    counts = Counter(shard_of(f"USER{n % 7:03d}/FILE{n:06d}.txt", 16) for n in range(16_000))
    assert set(counts) == set(range(16))
    assert max(counts.values()) < 1_150
    assert min(counts.values()) > 850


@given(st.text(min_size=1).filter(lambda value: "#" not in value), st.integers(0, MAX_SHARD_COUNT - 1))
def test_a_sharded_key_names_its_value_and_shard(value: str, shard: int) -> None:
    key = sharded_key(value, shard)
    assert split_sharded_key(key) == (value, shard)
    assert (key == value) == (shard == 0)


def test_one_shard_is_the_unsharded_key() -> None:
    assert partition_key_for("fileupload.a", "USER001_FILE001.txt", 1) == "fileupload.a"
    assert partition_keys("fileupload.a", 1) == ["fileupload.a"]
    assert partition_keys("b", 3) == ["b", "b#1", "b#2"]


@given(
    st.lists(st.text(max_size=20), min_size=1, max_size=50),
    st.integers(1, 32),
    st.integers(0, 32),
)
def test_raising_the_shard_count_keeps_every_entry_in_a_queried_shard(
    object_keys: list[str], old: int, more: int
) -> None:
    new = old + more
    queried = set(partition_keys("bucket", new))
    for count in (old, new):
        assert {partition_key_for("bucket", key, count) for key in object_keys} <= queried


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: shard_of("k", 0), InvalidShardCountError),
        (lambda: shard_of("k", MAX_SHARD_COUNT + 1), InvalidShardCountError),
        (lambda: sharded_key("b", -1), InvalidShardCountError),
        (lambda: sharded_key("b", MAX_SHARD_COUNT), InvalidShardCountError),
        (lambda: sharded_key("user#1", 0), UnshardableValueError),
        (lambda: partition_keys("b", 0), InvalidShardCountError),
        (lambda: split_sharded_key("b#01"), UnshardableValueError),
        (lambda: split_sharded_key("b#x"), UnshardableValueError),
        (lambda: split_sharded_key("#3"), UnshardableValueError),
        (lambda: MergeCursor.start(2).widened(1), InvalidMergeCursorError),
        (lambda: MergeCursor.from_json({"shards": []}), InvalidMergeCursorError),
        (lambda: MergeCursor.from_json({"shards": [], "last": None}), InvalidMergeCursorError),
        (
            lambda: MergeCursor.from_json({"shards": [{"v": True, "k": "a"}], "last": None}),
            InvalidMergeCursorError,
        ),
        (lambda: MergeCursor.from_json({"shards": [{"v": 1}], "last": None}), InvalidMergeCursorError),
        (lambda: MergeCursor.from_json([1]), InvalidMergeCursorError),
    ],
)
def test_bad_input_is_refused_with_its_own_error(call: Callable[[], object], error: type[Exception]) -> None:
    with pytest.raises(error):
        call()


# --- the merge ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    size: int
    key: str


def position_of(entry: Entry) -> Position:
    return Position(entry.size, entry.key)


def dynamodb_tiebreak(key: str) -> bytes:
    # An order of equal sizes that is not objectKey order, as a GSI may keep them.
    return hashlib.sha256(key.encode()).digest()


class FakeShard:
    """A shard of an index in memory: answers fetches in its order, a random number of items at a time."""

    def __init__(
        self, entries: list[Entry], *, ascending: bool, ties: Callable[[str], object], seed: int
    ) -> None:
        self.ascending = ascending
        self.ties = ties
        self.order = sorted(entries, key=self.rank, reverse=not ascending)
        self.random = Random(seed)
        self.asked: list[int] = []

    def rank(self, entry: Entry | Position) -> tuple[int, object]:
        if isinstance(entry, Position):
            return int(entry.sort_value), self.ties(entry.object_key)
        return entry.size, self.ties(entry.key)

    def after(self, after: Position | None) -> list[Entry]:
        """The shard's entries after `after` in its order; a compact position (no key) keeps its value."""
        if after is None:
            return self.order
        if not after.object_key:
            value = int(after.sort_value)
            return [e for e in self.order if (e.size >= value if self.ascending else e.size <= value)]
        bound = self.rank(after)
        return [e for e in self.order if (self.rank(e) > bound if self.ascending else self.rank(e) < bound)]

    def fetch(self, after: Position | None, count: int) -> ShardBatch[Entry]:
        self.asked.append(count)
        rest = self.after(after)
        taken = rest[: self.random.randint(1, max(count, 1))]
        return ShardBatch(taken, exhausted=len(taken) == len(rest))


def split_into_shards(entries: list[Entry], count: int) -> list[list[Entry]]:
    """`entries` by the shard their key hashes to, shard 0 first."""
    return [[e for e in entries if shard_of(e.key, count) == shard] for shard in range(count)]


def shards_of(
    entries: list[Entry], count: int, *, ascending: bool, ties: Callable[[str], object], seed: int
) -> list[FakeShard]:
    return [
        FakeShard(part, ascending=ascending, ties=ties, seed=seed + shard)
        for shard, part in enumerate(split_into_shards(entries, count))
    ]


def read_all(
    fetchers: Sequence[ShardFetch[Entry]],
    *,
    limit: int,
    ascending: bool,
    cursor: MergeCursor | None = None,
    batch_size: int | None = None,
    executor: Executor | None = None,
    top_up: bool = False,
) -> tuple[list[Entry], list[MergedPage[Entry]]]:
    items: list[Entry] = []
    pages: list[MergedPage[Entry]] = []
    while True:
        page = merge_page(
            fetchers,
            position_of=position_of,
            limit=limit,
            ascending=ascending,
            cursor=cursor,
            batch_size=batch_size,
            executor=executor,
            top_up=top_up,
        )
        pages.append(page)
        items.extend(page.items)
        assert len(page.items) <= limit
        if page.cursor is None:
            return items, pages
        assert len(page.items) == limit  # a short page is the last one
        # The cursor travels as JSON between pages.
        cursor = MergeCursor.from_json(page.cursor.to_json())


entries_strategy = st.lists(
    st.builds(Entry, st.integers(0, 6), st.text("abcd/_", min_size=1, max_size=4)),
    max_size=60,
    unique_by=lambda e: e.key,
)


@settings(max_examples=150, deadline=None)
@given(entries_strategy, st.integers(1, 9), st.integers(1, 12), st.booleans(), st.integers(0, 2**16))
def test_pages_in_objectkey_tie_order_concatenate_to_the_sorted_truth(
    entries: list[Entry], shard_count: int, limit: int, ascending: bool, seed: int
) -> None:
    shards = shards_of(entries, shard_count, ascending=ascending, ties=lambda key: key, seed=seed)
    items, pages = read_all([s.fetch for s in shards], limit=limit, ascending=ascending)
    assert items == sorted(entries, key=position_of, reverse=not ascending)
    assert sum(len(page.items) for page in pages) == len(entries)
    # No shard is asked for more than the page can still take.
    assert all(1 <= asked <= limit for shard in shards for asked in shard.asked)


@settings(max_examples=100, deadline=None)
@given(entries_strategy, st.integers(1, 9), st.integers(1, 12), st.booleans(), st.integers(0, 2**16))
def test_resuming_from_any_cursor_gives_the_rest(
    entries: list[Entry], shard_count: int, limit: int, ascending: bool, seed: int
) -> None:
    fetchers = [
        s.fetch for s in shards_of(entries, shard_count, ascending=ascending, ties=lambda key: key, seed=seed)
    ]
    items, pages = read_all(fetchers, limit=limit, ascending=ascending)
    done = 0
    for page in pages:
        done += len(page.items)
        if page.cursor is not None:
            rest, _ = read_all(fetchers, limit=limit + 3, ascending=ascending, cursor=page.cursor)
            assert rest == items[done:]


# entries, shard count, page limit, ascending, seed: what every merge property draws.
MERGE_CASES = (entries_strategy, st.integers(1, 9), st.integers(1, 12), st.booleans(), st.integers(0, 2**16))


@settings(max_examples=100, deadline=None)
@given(*MERGE_CASES, st.booleans())
def test_any_tie_order_inside_a_shard_still_gives_every_item_once_in_size_order(
    entries: list[Entry], shard_count: int, limit: int, ascending: bool, seed: int, top_up: bool
) -> None:
    """Also with `top_up` (shards fetched again before they run dry): the same answer."""
    fetchers = [
        s.fetch
        for s in shards_of(entries, shard_count, ascending=ascending, ties=dynamodb_tiebreak, seed=seed)
    ]
    items, _ = read_all(fetchers, limit=limit, ascending=ascending, top_up=top_up)
    assert sorted(items, key=position_of) == sorted(entries, key=position_of)
    sizes = [item.size for item in items]
    assert sizes == sorted(sizes, reverse=not ascending)
    # Paging does not change the order: one long page gives the same sequence.
    whole, _ = read_all(fetchers, limit=len(entries) + 1, ascending=ascending)
    assert whole == items


def test_batch_size_and_an_executor_change_the_requests_not_the_answer() -> None:
    rng = Random(7)
    entries = [Entry(rng.randrange(5), f"U/{n:04d}") for n in range(300)]
    expected = sorted(entries, key=position_of, reverse=True)
    with ThreadPoolExecutor(max_workers=4) as pool:
        for batch_size, executor in ((None, None), (3, None), (None, pool), (2, pool)):
            shards = shards_of(entries, 8, ascending=False, ties=lambda key: key, seed=1)
            items, pages = read_all(
                [s.fetch for s in shards], limit=40, ascending=False, batch_size=batch_size, executor=executor
            )
            assert items == expected
            if batch_size is not None:
                assert all(asked <= batch_size for s in shards for asked in s.asked)
            assert sum(page.fetches for page in pages) == sum(len(s.asked) for s in shards)


def test_the_cursor_holds_the_last_returned_item_not_the_read_ahead() -> None:
    entries = [Entry(size, f"k{size}") for size in range(10)]
    shard = FakeShard(entries, ascending=True, ties=lambda key: key, seed=0)

    def read_everything(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch(shard.order, exhausted=True)  # reads far ahead of what a page takes

    page = merge_page([read_everything], position_of=position_of, limit=3, ascending=True)
    assert [e.size for e in page.items] == [0, 1, 2]
    assert page.items_read == 10
    assert page.fetches == 1
    # The shard resumes at its next item's size, 3, not after what it read ahead; without an object key.
    assert page.cursor == MergeCursor((ShardCursor(compact(3)),), last=Position(2, "k2"))
    assert page.cursor.to_json() == {"shards": [[3]], "last": {"v": 2, "k": "k2"}}
    # On a tie with its last returned item, it keeps that item's place.
    tied = [Entry(1, "a"), Entry(1, "b"), Entry(1, "c")]
    tie_shard = FakeShard(tied, ascending=True, ties=lambda key: key, seed=0)
    page = merge_page(
        [lambda after, count: ShardBatch(tie_shard.order, exhausted=True)],
        position_of=position_of,
        limit=2,
        ascending=True,
    )
    assert page.cursor == MergeCursor((ShardCursor(Position(1, "b")),), last=Position(1, "b"))


def test_a_compact_position_travels_as_its_sort_value_and_a_malformed_one_is_refused() -> None:
    cursor = MergeCursor(
        (ShardCursor(compact("2017-08-20")), ShardCursor(Position(5, "k"))), last=Position(5, "k")
    )
    assert MergeCursor.from_json(cursor.to_json()) == cursor
    with pytest.raises(InvalidMergeCursorError, match="compact position"):
        MergeCursor.from_json({"shards": [[1, 2]], "last": None})


def test_exhausted_shards_are_not_asked_again() -> None:
    calls: list[Position | None] = []

    def empty(after: Position | None, count: int) -> ShardBatch[Entry]:
        calls.append(after)
        return ShardBatch([], exhausted=True)

    full = FakeShard([Entry(n, f"k{n}") for n in range(6)], ascending=True, ties=lambda key: key, seed=3)
    items, pages = read_all([empty, full.fetch], limit=2, ascending=True)
    assert [e.size for e in items] == list(range(6))
    assert calls == [None]
    assert all(page.cursor is None or page.cursor.shards[0].exhausted for page in pages)


def test_a_live_raise_of_the_shard_count_loses_nothing_and_never_goes_back() -> None:
    table: dict[str, list[Entry]] = {}

    def write(entry: Entry, shard_count: int) -> None:
        table.setdefault(partition_key_for("bucket", entry.key, shard_count), []).append(entry)

    def fetchers(shard_count: int) -> list[ShardFetch[Entry]]:
        return [
            FakeShard(table.get(pk, []), ascending=True, ties=lambda key: key, seed=n).fetch
            for n, pk in enumerate(partition_keys("bucket", shard_count))
        ]

    before = [Entry(n % 50, f"old/{n:03d}") for n in range(200)]
    for entry in before:
        write(entry, 2)
    first = merge_page(fetchers(2), position_of=position_of, limit=60, ascending=True)
    assert first.cursor is not None
    # The shard count goes from 2 to 5; new uploads land in all five shards, old entries stay where they are.
    after = [Entry(n % 50, f"new/{n:03d}") for n in range(200)]
    for entry in after:
        write(entry, 5)
    assert {pk for pk in table if table[pk]} == set(partition_keys("bucket", 5))
    rest, _ = read_all(fetchers(5), limit=45, ascending=True, cursor=first.cursor)
    seen = first.items + rest
    assert len(seen) == len(set(seen))
    assert set(before) <= set(seen)  # nothing written before the raise is lost
    assert all(e.size >= first.items[-1].size for e in rest)  # never goes back
    # A fresh read after the raise finds every entry, whichever count wrote it.
    everything, _ = read_all(fetchers(5), limit=64, ascending=True)
    assert everything == sorted(before + after, key=position_of)


def test_a_fetcher_that_breaks_its_contract_is_reported() -> None:
    def stalls(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch([], exhausted=False)

    def unordered(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch([Entry(5, "a"), Entry(3, "b")], exhausted=True)

    with pytest.raises(ShardContractError, match="no items"):
        merge_page([stalls], position_of=position_of, limit=1, ascending=True)
    with pytest.raises(ShardContractError, match="sort value 3 after 5"):
        merge_page([unordered], position_of=position_of, limit=1, ascending=True)
    with pytest.raises(ValueError, match="limit"):
        merge_page([unordered], position_of=position_of, limit=0, ascending=True)


def test_an_entry_written_behind_the_last_page_is_not_returned_out_of_order() -> None:
    first_shard = [Entry(0, "a"), Entry(10, "b")]
    second_shard = [Entry(5, "c"), Entry(6, "d"), Entry(7, "e")]

    def fetchers() -> list[ShardFetch[Entry]]:
        return [
            FakeShard(entries, ascending=True, ties=lambda key: key, seed=0).fetch
            for entries in (first_shard, second_shard)
        ]

    page = merge_page(fetchers(), position_of=position_of, limit=3, ascending=True)
    assert [e.size for e in page.items] == [0, 5, 6]
    first_shard.insert(1, Entry(3, "late"))  # sorts after the first shard's place, before the page's end
    rest, _ = read_all(fetchers(), limit=10, ascending=True, cursor=page.cursor)
    assert [e.size for e in rest] == [7, 10]


def test_fair_share_batches_keep_a_sixteen_shard_page_near_one_request_per_shard() -> None:
    rng = Random(3)
    entries = [Entry(rng.randrange(10**7), f"U{n % 50:03d}/F{n:06d}") for n in range(8_000)]

    class ExactShard(FakeShard):
        def fetch(self, after: Position | None, count: int) -> ShardBatch[Entry]:
            # What a DynamoDB Query with Limit=count returns: exactly `count` items while there are more.
            rest = self.order if after is None else [e for e in self.order if self.rank(e) < self.rank(after)]
            return ShardBatch(rest[:count], exhausted=len(rest) <= count)

    fetchers = [
        ExactShard(part, ascending=False, ties=lambda k: k, seed=s).fetch
        for s, part in enumerate(split_into_shards(entries, 16))
    ]
    assert fair_share(100, 16) == 13
    assert fair_share(5, 1) == 5
    cursor = None
    read = requests = 0
    for _ in range(10):
        page = merge_page(
            fetchers,
            position_of=position_of,
            limit=100,
            ascending=False,
            cursor=cursor,
            batch_size=fair_share(100, 16),
        )
        assert len(page.items) == 100
        read, requests, cursor = read + page.items_read, requests + page.fetches, page.cursor
    assert read / 1_000 < 2.5  # items read per item returned
    assert requests / 10 < 17  # requests per page: one per shard, rarely a top-up


# --- filtered reads: progress without items, bounded pages, cursors of shorter pages ----------------------


class FilteredShard(FakeShard):
    """A shard read through a filter: each fetch reads up to `count` items and returns those it keeps,
    with where it stopped reading (`resume`), as a DynamoDB Query with a FilterExpression does."""

    def __init__(
        self, entries: list[Entry], *, keep: Callable[[Entry], bool], jumps: bool = False, **kwargs: object
    ) -> None:
        super().__init__(entries, **kwargs)  # type: ignore[arg-type]
        self.keep = keep
        self.jumps = jumps

    def fetch(self, after: Position | None, count: int) -> ShardBatch[Entry]:
        self.asked.append(count)
        rest = self.after(after)
        read = rest[: self.random.randint(1, max(count, 1))]
        kept = [e for e in read if self.keep(e)]
        if len(read) == len(rest):
            return ShardBatch(kept, exhausted=True)
        if self.jumps:
            # As the Z-order walk does: go on from a landing (a compact position) somewhere after the last
            # item read and at or before the next one kept, or stop if none is kept further on.
            ahead = [e for e in rest[len(read) :] if self.keep(e)]
            if not ahead:
                return ShardBatch(kept, exhausted=True)
            last, target = read[-1].size, ahead[0].size
            if target != last:
                step = 1 if self.ascending else -1
                return ShardBatch(
                    kept,
                    exhausted=False,
                    resume=compact(self.random.randint(min(last + step, target), max(last + step, target))),
                )
        return ShardBatch(kept, exhausted=False, resume=position_of(read[-1]))


def keeping(modulus: int) -> Callable[[Entry], bool]:
    """A filter that keeps about one entry in `modulus`, fixed by the entry's key."""
    return lambda entry: sum(map(ord, entry.key)) % modulus == 0


def filtered_shards(
    entries: list[Entry],
    shard_count: int,
    keep: Callable[[Entry], bool],
    ascending: bool,
    seed: int,
    *,
    key_ties: bool,
    jumps: bool,
) -> list[FilteredShard]:
    """`entries` in their shards, each read through `keep`; ties in objectKey order or another."""
    return [
        FilteredShard(
            part,
            keep=keep,
            ascending=ascending,
            ties=(lambda key: key) if key_ties else dynamodb_tiebreak,
            seed=seed + shard,
            jumps=jumps,
        )
        for shard, part in enumerate(split_into_shards(entries, shard_count))
    ]


# Sizes spread wide, so few tie and a stopped page has items it can still return.
spread_entries = st.lists(
    st.builds(Entry, st.integers(0, 400), st.text("abcd/_", min_size=1, max_size=4)),
    max_size=80,
    unique_by=lambda e: e.key,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(entries_strategy, spread_entries),
    *MERGE_CASES[1:],
    st.integers(1, 6),
    st.none() | st.integers(1, 4),
    st.booleans(),
    st.none() | st.integers(1, 5),
    st.booleans(),
    st.booleans(),
)
def test_bounded_filtered_pages_give_every_kept_item_once_in_order(
    entries: list[Entry],
    shard_count: int,
    limit: int,
    ascending: bool,
    seed: int,
    modulus: int,
    max_rounds: int | None,
    top_up: bool,
    batch_size: int | None,
    key_ties: bool,
    jumps: bool,
) -> None:
    """Bounded by rounds (a page that stops returns what no shard can precede), in objectKey order or
    another inside a shard: every kept item once, in order."""
    keep = keeping(modulus)
    shards = filtered_shards(entries, shard_count, keep, ascending, seed, key_ties=key_ties, jumps=jumps)
    items: list[Entry] = []
    cursor: MergeCursor | None = None
    for _ in range(10 * len(entries) + 10):
        page = merge_page(
            [s.fetch for s in shards],
            position_of=position_of,
            limit=limit,
            ascending=ascending,
            cursor=cursor,
            batch_size=batch_size,
            max_rounds=max_rounds,
            top_up=top_up,
        )
        if max_rounds is not None:
            assert page.rounds <= max_rounds
            assert page.fetches <= max_rounds * shard_count
        assert len(page.items) <= limit
        if len(page.items) < limit and page.cursor is not None:
            assert page.stopped_early  # a short page with a cursor says why
        items.extend(page.items)
        if page.cursor is None:
            break
        cursor = MergeCursor.from_json(page.cursor.to_json())
    else:
        pytest.fail("paging does not end")
    expected = sorted(filter(keep, entries), key=position_of, reverse=not ascending)
    if key_ties:
        assert items == expected
    else:
        assert sorted(items, key=position_of) == sorted(expected, key=position_of)
        assert [e.size for e in items] == [e.size for e in expected]
    for shard in shards:  # and each shard's items in its own order
        assert [e for e in items if e in shard.order] == [e for e in shard.order if keep(e)]


def test_a_filtered_page_with_nothing_kept_still_moves_on() -> None:
    entries = [Entry(n, f"k{n:02d}") for n in range(30)]
    shard = FilteredShard(entries, keep=lambda e: e.size == 29, ascending=True, ties=lambda k: k, seed=0)
    page = merge_page([shard.fetch], position_of=position_of, limit=5, ascending=True, max_rounds=2)
    assert page.items == []
    assert page.stopped_early
    assert page.cursor is not None
    assert page.cursor.shards[0].after is not None
    # The next page starts after what was read, not from the beginning.
    assert page.cursor.shards[0].after.sort_value in range(1, 30)  # two fetches read two items or more


def test_an_empty_batch_that_does_not_move_on_is_a_broken_contract() -> None:
    def stuck(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch([], exhausted=False, resume=after or Position(0, "a"))

    def backwards(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch([Entry(5, "a")], exhausted=False, resume=Position(4, "z"))

    merge_page([stuck], position_of=position_of, limit=1, ascending=True, max_rounds=1)  # first: moved
    with pytest.raises(ShardContractError, match="no items"):
        merge_page(
            [stuck],
            position_of=position_of,
            limit=1,
            ascending=True,
            cursor=MergeCursor((ShardCursor(Position(0, "a")),)),
        )
    with pytest.raises(ShardContractError, match="resumes at sort value 4, before 5"):
        merge_page([backwards], position_of=position_of, limit=1, ascending=True)
    with pytest.raises(ValueError, match="max_rounds"):
        merge_page([backwards], position_of=position_of, limit=1, ascending=True, max_rounds=0)


@settings(max_examples=60, deadline=None)
@given(entries_strategy, st.integers(1, 9), st.integers(1, 12), st.booleans(), st.integers(0, 2**16))
def test_the_cursor_after_the_first_items_of_a_page_continues_right_after_them(
    entries: list[Entry], shard_count: int, limit: int, ascending: bool, seed: int
) -> None:
    fetchers = [
        s.fetch for s in shards_of(entries, shard_count, ascending=ascending, ties=lambda key: key, seed=seed)
    ]
    everything, _ = read_all(fetchers, limit=len(entries) + 1, ascending=ascending)
    page = merge_page(fetchers, position_of=position_of, limit=limit, ascending=ascending)
    assert page.start is not None
    for cut in range(1, len(page.items) + 1):
        # A page cut to its first `cut` items (to fit a response) continues after the last of them.
        positions = [position_of(e) for e in page.items]
        cursor = cursor_after(page.start, page.sources, positions, cut, page.cursor)
        rest, _ = read_all(fetchers, limit=limit, ascending=ascending, cursor=cursor)
        assert page.items[:cut] + rest == everything


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(entries_strategy, spread_entries),
    *MERGE_CASES[1:],
    st.integers(1, 4),
    st.none() | st.integers(1, 3),
    st.booleans(),
    st.booleans(),
)
def test_a_cut_bounded_filtered_page_continues_right_after_its_cut(
    entries: list[Entry],
    shard_count: int,
    limit: int,
    ascending: bool,
    seed: int,
    modulus: int,
    max_rounds: int | None,
    key_ties: bool,
    jumps: bool,
) -> None:
    """Filtered shards (resuming past what they read, or at jump landings), a page bounded by rounds and
    topped up, cut anywhere: the cut cursor continues with exactly the rest."""
    keep = keeping(modulus)

    def fetchers() -> list[ShardFetch[Entry]]:
        shards = filtered_shards(entries, shard_count, keep, ascending, seed, key_ties=key_ties, jumps=jumps)
        return [shard.fetch for shard in shards]

    expected = sorted(filter(keep, entries), key=position_of, reverse=not ascending)
    page = merge_page(
        fetchers(),
        position_of=position_of,
        limit=limit,
        ascending=ascending,
        max_rounds=max_rounds,
        top_up=True,
    )
    assert page.start is not None
    positions = [position_of(e) for e in page.items]
    for cut in range(1, len(page.items) + 1):
        cursor = cursor_after(page.start, page.sources, positions, cut, page.cursor)
        rest, _ = read_all(fetchers(), limit=limit, ascending=ascending, cursor=cursor)
        got = page.items[:cut] + rest
        assert sorted(got, key=position_of) == sorted(expected, key=position_of)
        assert [e.size for e in got] == [e.size for e in expected]


def test_a_cut_cursor_carries_a_key_only_for_a_shard_tied_where_it_stands() -> None:
    """Cut inside a page, shards with items after the cut resume at the first one's sort value (no key),
    shards without where the page left them: only the last returned item's key travels."""
    entries = [Entry(n, f"{n:03d}-" + "k" * 200) for n in range(64)]
    shards = shards_of(entries, 8, ascending=True, ties=lambda key: key, seed=3)
    page = merge_page([s.fetch for s in shards], position_of=position_of, limit=40, ascending=True)
    positions = [position_of(e) for e in page.items]
    cursor = cursor_after(page.start or MergeCursor.start(8), page.sources, positions, 20, page.cursor)
    keyed = [shard.after for shard in cursor.shards if shard.after is not None and shard.after.object_key]
    assert keyed == []
    assert cursor.last == positions[19]
    rest, _ = read_all([s.fetch for s in shards], limit=40, ascending=True, cursor=cursor)
    assert page.items[:20] + rest == entries


def test_an_empty_batch_that_resumes_at_a_tie_with_a_smaller_key_moves_on() -> None:
    """Equal sort values come in the shard's own order, so a resume at the same size whose object key
    sorts before the previous position is still progress (DynamoDB Local orders ties so)."""
    answers = iter(
        [
            ShardBatch([], exhausted=False, resume=Position(7, "b")),
            ShardBatch([Entry(9, "c")], exhausted=True),
        ]
    )

    def tie_order(after: Position | None, count: int) -> ShardBatch[Entry]:
        return next(answers)

    page = merge_page(
        [tie_order],
        position_of=position_of,
        limit=1,
        ascending=True,
        cursor=MergeCursor((ShardCursor(Position(7, "x")),)),
    )
    assert page.items == [Entry(9, "c")]


def scripted(*batches: ShardBatch[Entry]) -> ShardFetch[Entry]:
    """A shard that answers its fetches with these batches, in turn."""
    queue = list(batches)
    return lambda after, count: queue.pop(0)


def test_a_page_stopped_by_its_rounds_returns_only_what_no_shard_can_precede() -> None:
    """A stopped page hands over buffered items before every waiting shard's read position; a shard it
    empties waits from then on, so nothing past its read position goes out before its unread items."""

    waiting = scripted(ShardBatch([Entry(1, "w")], exhausted=False, resume=Position(100, "w9")))
    emptied = scripted(ShardBatch([Entry(2, "a"), Entry(3, "a2")], exhausted=False))  # its 10 is unread
    ahead = scripted(ShardBatch([Entry(20, "b")], exhausted=False))
    page = merge_page(
        [waiting, emptied, ahead], position_of=position_of, limit=10, ascending=True, max_rounds=1
    )
    assert page.stopped_early
    assert page.rounds == 1
    assert page.items == [Entry(1, "w"), Entry(2, "a"), Entry(3, "a2")]
    assert page.cursor is not None
    assert page.cursor.last == Position(3, "a2")
    assert [shard.after for shard in page.cursor.shards] == [Position(100, "w9"), Position(3, "a2"), None]


@pytest.mark.parametrize("resume", [Position(3, "c"), compact(3)], ids=["after an item", "a jump landing"])
def test_a_stopped_page_keeps_back_an_item_tied_with_a_waiting_shards_read_position(resume: Position) -> None:
    """A waiting shard may still hold items of the sort value it stopped at (inside a shard, equal sort
    values come in the shard's order), so a buffered item of that same value stays for the next page."""
    waiting = scripted(ShardBatch([], exhausted=False, resume=resume))  # its (3, "d") is unread
    other = scripted(ShardBatch([Entry(3, "f")], exhausted=True))
    page = merge_page([waiting, other], position_of=position_of, limit=5, ascending=True, max_rounds=1)
    assert page.stopped_early
    assert page.items == []
