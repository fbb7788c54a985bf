"""Measure 10's cost model: a backfill writes each entry (the table and its indexes) and, with the name
index, the entry's name items (its key item and term items, each in the name table and its user GSI)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.backfill_batch import PRICES, WRITE_UNITS_WITH_USER, model, name_units_per_entry
from bench.entries import create_event, entry
from file_index.rules import name_items, schema
from file_index.rules.name_terms import name_terms
from file_index.rules.placement import ShardPlacement

PRICE = PRICES.dynamodb_per_million_write_units


def test_the_name_index_writes_are_priced_beside_the_entries() -> None:
    without = model(10_000_000, batch_seconds=0.5)
    assert without.name_index_usd == 0
    assert without.dynamodb_usd == pytest.approx(10 * WRITE_UNITS_WITH_USER * PRICE)

    with_names = model(10_000_000, batch_seconds=0.5, name_units=50.0)
    assert with_names.dynamodb_usd == without.dynamodb_usd
    assert with_names.name_index_usd == pytest.approx(10 * 50 * PRICE)  # 500 M write units
    assert with_names.total_usd == pytest.approx(without.total_usd + with_names.name_index_usd)
    assert with_names.hours == without.hours  # the price only: the measured batch writes no name item


def test_name_units_per_entry_are_what_a_backfill_puts_in_the_name_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    placement = ShardPlacement(bucket_shards=16)
    # One file, whose items are counted by hand: the key item and one term item per term of its name.
    event = create_event(
        bucket="fileupload.bench",
        key="user0001/quarterly_report_2024.pdf",
        user="user0001",
        size=1000,
        moment=datetime(2024, 5, 1, tzinfo=UTC),
        sequence=1,
    )
    one = entry(event, event.order_key, placement)
    monkeypatch.setattr("bench.name_checks.file_entry", lambda file, placement, n: one)
    units, items = name_units_per_entry(placement, files=50)  # each of the 50 is that file
    terms = len(name_terms("quarterly_report_2024.pdf"))
    assert items == 1 + terms
    put = name_items.entry_items(one, "")
    assert all(schema.NAME_USER in item for item in put)
    assert units == 2 * items  # every item under 1 KB, written in the table and in the user GSI


def test_name_units_per_entry_over_measure_16s_names() -> None:
    units, items = name_units_per_entry(ShardPlacement(bucket_shards=16), files=300)
    # People's names have one or two dozen terms; each item small, in the table and the user GSI.
    assert 12 < items < 30
    assert units == pytest.approx(2 * items)
