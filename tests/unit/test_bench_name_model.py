"""Measure 16's model of name searches: its stand-in Query, its sampled streams, the pages it counts against
the data they come from, and the write units of the name items."""

from __future__ import annotations

import functools
import random
from datetime import UTC, datetime

import pytest

from bench import name_reads
from bench.entries import create_event, entry
from bench.name_data import USER, make_files
from bench.name_terms_model import ListStream, SampledStream, TermItem, TermTable, split, terms_list
from bench.name_writes import Written, busiest, name_item_writes, units
from file_index.read.reader import PAGE_ROUNDS
from file_index.rules import name_terms, schema
from file_index.rules.name_items import term_scope, time_term
from file_index.rules.placement import ShardPlacement

PLACEMENT = ShardPlacement(bucket_shards=16)


@pytest.fixture(scope="module")
def data() -> tuple[list, str, dict[str, list[int]]]:
    files, rare = make_files(3000)
    terms = name_reads.term_index(files, {name_reads.lookup(shape, rare)[1] for shape in name_reads.SHAPES})
    return files, rare, terms


def _items(count: int) -> list[TermItem]:
    dates = [f"2017-01-01T00:00:{second:02d}.000Z" for second in range(count)]
    return [TermItem(time_term(date, f"k{n}"), f"k{n}", f"report {n}.pdf", n) for n, date in enumerate(dates)]


def _query(table: TermTable, limit: int, *, low: str | None = None) -> dict:
    from boto3.dynamodb.conditions import Key

    condition = Key(schema.NAME_SCOPE).eq(term_scope("b", "r"))
    if low is not None:
        condition &= Key(schema.NAME_SORT).gte(low)
    return table.query(KeyConditionExpression=condition, ScanIndexForward=True, Limit=limit)


def test_the_stand_in_query_stops_on_its_limit_as_dynamodb_does_and_as_moto_does() -> None:
    items = _items(4)
    aws = TermTable({term_scope("b", "r"): ListStream(items)})
    moto = TermTable({term_scope("b", "r"): ListStream(items)}, moto=True)
    assert [i[schema.OBJECT_KEY] for i in _query(aws, 2)["Items"]] == ["k0", "k1"]
    # Resumed from an item's sort value: that item is read again (the reader drops it).
    resumed = _query(aws, 2, low=items[1].sort_value)
    assert [i[schema.OBJECT_KEY] for i in resumed["Items"]] == ["k1", "k2"]
    assert resumed["ScannedCount"] == 2
    # Its Limit reached on the partition's last item: DynamoDB says there may be more, moto does not.
    assert "LastEvaluatedKey" in _query(aws, 4)
    assert "LastEvaluatedKey" not in _query(moto, 4)
    # ... unless the partition holds items past the list's time bounds.
    beyond = TermTable({term_scope("b", "r"): ListStream(items, beyond=True)}, moto=True)
    assert "LastEvaluatedKey" in _query(beyond, 4)
    assert "LastEvaluatedKey" not in _query(aws, 5)


def test_the_stand_in_query_refuses_what_the_model_data_never_needs() -> None:
    table = TermTable({term_scope("b", "r"): ListStream(_items(2))})
    with pytest.raises(NotImplementedError, match="two shards"):
        table.query(KeyConditionExpression=None, Limit=1, ExclusiveStartKey={})


@pytest.mark.parametrize("ascending", [False, True])
def test_a_sampled_stream_is_in_read_order_inside_its_bounds_and_as_long_as_asked(ascending: bool) -> None:
    low, high = 1_483_228_800_000, 1_485_907_200_000  # January 2017
    stream = SampledStream(
        500, low, high, [("a.pdf", 1)], ascending=ascending, rng=random.Random(1), label="b"
    )
    items = [stream.get(n) for n in range(501)]
    assert items[-1] is None
    values = [item.sort_value for item in items[:-1] if item is not None]
    assert len(values) == 500
    assert values == sorted(values, reverse=not ascending)
    assert min(values) >= "2017-01-01"
    assert max(values) < "2017-02-01"
    assert stream.index_at(values[7]) == 7
    assert stream.index_at("a bound of the list's own") == 0


def test_split_spreads_every_item() -> None:
    shares = split(10_000, 16, random.Random(3))
    assert sum(shares) == 10_000
    assert len(shares) == 16
    assert all(500 < share < 750 for share in shares)


@pytest.mark.parametrize("shape", name_reads.SHAPES, ids=lambda shape: shape.name)
def test_the_terms_model_read_to_its_end_returns_every_match_once_in_bounded_pages(data, shape) -> None:
    files, rare, terms = data
    term = name_reads.lookup(shape, rare)[1]
    search = name_reads.search(shape, rare)
    table = name_reads.exact_table(files, terms[term], shape, PLACEMENT, term)
    cost = terms_list(
        lambda: table,
        name_reads.partitions(PLACEMENT, shape),
        search,
        limit=name_reads.LIMIT,
        max_pages=10_000,
    )
    expected = [
        file
        for file in files
        if (not shape.user or file.user == USER)
        and name_terms.matches(file.name, search.query_words)
        and shape.in_time(file.upload_date)
        and shape.in_sizes(file.size)
    ]
    assert cost.complete
    assert cost.returned == len(expected)
    assert cost.deepest <= PAGE_ROUNDS
    assert cost.peak_held <= 3 * name_reads.LIMIT + 16 * name_reads.LIMIT


def test_a_sampled_bucket_reads_as_the_materialised_one_does(data) -> None:
    files, rare, terms = data
    for shape in (name_reads.SHAPES[1], name_reads.SHAPES[13]):  # "report"; "i", 1-2 MB
        term = name_reads.lookup(shape, rare)[1]
        search = name_reads.search(shape, rare)
        values = name_reads.partitions(PLACEMENT, shape)
        exact = terms_list(
            functools.partial(name_reads.exact_table, files, terms[term], shape, PLACEMENT, term),
            values,
            search,
            limit=name_reads.LIMIT,
            max_pages=50,
        )
        sampled = terms_list(
            name_reads.sampled_table(files, terms[term], shape, PLACEMENT, term, len(files)),
            values,
            search,
            limit=name_reads.LIMIT,
            max_pages=50,
        )
        assert exact.per_item_returned is not None
        assert sampled.per_item_returned is not None
        assert sampled.per_item_returned == pytest.approx(exact.per_item_returned, rel=0.25), shape.name
        assert sampled.returned == pytest.approx(exact.returned, rel=0.25), shape.name


def _entry(name: str, user: str = "u1") -> dict:
    event = create_event(
        bucket="b",
        key=f"{user}/{name}",
        user=user,
        size=5,
        moment=datetime(2017, 3, 1, tzinfo=UTC),
        sequence=1,
    )
    return entry(event, event.order_key, PLACEMENT)


def test_write_units_of_the_name_items() -> None:
    written = Written.of(_entry("Invoice_March_2017.pdf"))
    assert len(written.terms) == len(name_terms.name_terms("Invoice_March_2017.pdf"))
    assert len(written.key) == 1
    new = name_item_writes([written])
    term_units = sum(units(item) for item in written.terms)
    assert new.overwrite == 2 * term_units
    assert new.new == new.delete == term_units + sum(units(item) for item in written.key)
    # Every item is written in the table and again in the user GSI.
    assert all(units(item) == 2 for item in written.terms)


def test_the_busiest_partition_counts_every_item_of_a_key_value() -> None:
    written = [Written.of(_entry(f"report {n}.pdf", user=f"u{n}")) for n in range(40)]
    items = [item for one in written for item in one.terms]
    once, twice = busiest(items), busiest(items, 2)
    per_shard: dict[str, int] = {}
    for one in written:
        value = str(one.key[0][schema.OBJECT_KEY])
        shard = PLACEMENT.bucket_partition("b", value)
        per_shard[shard] = per_shard.get(shard, 0) + 1
    assert once.table_units == max(per_shard.values())  # every term of "report" in the fullest shard
    assert twice.table_units == 2 * once.table_units
    assert once.user_units == 1
