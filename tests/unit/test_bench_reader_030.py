"""The bench's 0.3.0 merge (`bench.reader_030.merge_page`): bounded by fetches, last items in cursors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import reader_030
from file_index.read.file_queries import Plan
from file_index.rules.shard_merge import MergeCursor, Position, ShardBatch, ShardContractError, ShardCursor
from tests.unit.file_index.test_shards import (
    MERGE_CASES,
    Entry,
    FakeShard,
    entries_strategy,
    filtered_shards,
    keeping,
    position_of,
    spread_entries,
)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(entries_strategy, spread_entries),
    *MERGE_CASES[1:],
    st.integers(1, 6),
    st.none() | st.integers(1, 4),
    st.none() | st.integers(1, 5),
    st.booleans(),
    st.booleans(),
)
def test_pages_bounded_by_fetches_give_every_kept_item_once_in_order(
    entries: list[Entry],
    shard_count: int,
    limit: int,
    ascending: bool,
    seed: int,
    modulus: int,
    max_fetches: int | None,
    batch_size: int | None,
    key_ties: bool,
    jumps: bool,
) -> None:
    keep = keeping(modulus)
    shards = filtered_shards(entries, shard_count, keep, ascending, seed, key_ties=key_ties, jumps=jumps)
    items: list[Entry] = []
    cursor: MergeCursor | None = None
    for _ in range(10 * len(entries) + 10):
        page = reader_030.merge_page(
            [s.fetch for s in shards],
            position_of=position_of,
            limit=limit,
            ascending=ascending,
            cursor=cursor,
            batch_size=batch_size,
            max_fetches=max_fetches,
        )
        if max_fetches is not None:
            assert page.fetches <= max(max_fetches, shard_count)
        assert len(page.items) <= limit
        if len(page.items) < limit and page.cursor is not None:
            assert page.stopped_early
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


def test_the_cursor_holds_each_shards_last_returned_item() -> None:
    entries = [Entry(size, f"k{size}") for size in range(10)]
    shard = FakeShard(entries, ascending=True, ties=lambda key: key, seed=0)

    def read_everything(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch(shard.order, exhausted=True)  # reads far ahead of what a page takes

    page = reader_030.merge_page([read_everything], position_of=position_of, limit=3, ascending=True)
    assert [e.size for e in page.items] == [0, 1, 2]
    assert page.cursor == MergeCursor((ShardCursor(Position(2, "k2")),), last=Position(2, "k2"))


def test_a_page_that_reaches_its_fetches_returns_only_what_it_took() -> None:
    """A page stopped by its bound hands over nothing more, even an item no shard can precede any more (the
    waiting shard has read up to 5): it stays for the next page, which starts that shard again."""
    waiting = iter([ShardBatch([Entry(1, "w")], exhausted=False, resume=Position(5, "z"))])
    ahead = iter([ShardBatch([Entry(2, "a")], exhausted=True)])
    page = reader_030.merge_page(
        [lambda after, count: next(waiting), lambda after, count: next(ahead)],
        position_of=position_of,
        limit=5,
        ascending=True,
        max_fetches=2,
    )
    assert page.stopped_early
    assert page.items == [Entry(1, "w")]
    assert page.cursor == MergeCursor(
        (ShardCursor(Position(5, "z")), ShardCursor(None)), last=Position(1, "w")
    )


def test_bad_bounds_and_broken_fetchers_are_refused() -> None:
    def stalls(after: Position | None, count: int) -> ShardBatch[Entry]:
        return ShardBatch([], exhausted=False)

    with pytest.raises(ShardContractError, match="no items"):
        reader_030.merge_page([stalls], position_of=position_of, limit=1, ascending=True)
    with pytest.raises(ValueError, match="limit"):
        reader_030.merge_page([stalls], position_of=position_of, limit=0, ascending=True)
    with pytest.raises(ValueError, match="batch_size"):
        reader_030.merge_page([stalls], position_of=position_of, limit=1, ascending=True, batch_size=0)
    with pytest.raises(ValueError, match="max_fetches"):
        reader_030.merge_page([stalls], position_of=position_of, limit=1, ascending=True, max_fetches=0)


def test_the_page_budget_is_0_3_0s() -> None:
    assert reader_030.page_request_budget(1, Plan.SIZE) == 32
    assert reader_030.page_request_budget(16, Plan.UPLOAD_DATE) == 32
    assert reader_030.page_request_budget(256, Plan.SIZE) == 512
    assert reader_030.page_request_budget(16, Plan.Z_ORDER) == 34 * 16
