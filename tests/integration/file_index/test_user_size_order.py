"""A person's files by size (`uploadUser-size-index`): both directions, merged across a hot user's shards,
reading the size range asked for, not the person's whole list; time bounds filter."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws

from bench import reading
from bench.entries import create_event, entry
from file_index.read.file_queries import ListCursor, Plan, UserQuery
from file_index.read.reader import FileReader
from file_index.rules.placement import ShardPlacement

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("user-size-order")

PLACEMENT = ShardPlacement(bucket_shards=4, hot_users={"HOT": 3})
BUCKET = "fileupload.a"
START = datetime(2017, 8, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def files() -> Iterator[tuple[FileReader, list[dict[str, Any]]]]:
    rng = random.Random(7)
    events = []
    for number in range(300):
        user = ("HOT", "COLD")[number % 2]
        events.append(
            create_event(
                bucket=BUCKET,
                key=f"{user}/f{number:04d}.bin",
                user=user,
                size=rng.choice((5, 50, 500, 5000, 50_000)) + number,
                moment=START + timedelta(hours=number),
                sequence=number,
            )
        )
    items = [entry(event, None, PLACEMENT) for event in events]
    with mock_aws():
        table = reading.load("FileMetaData", items, multi_attribute_index=False)
        yield FileReader(table, PLACEMENT), items


def read_all(reader: FileReader, query: UserQuery, limit: int) -> tuple[list[dict[str, Any]], int]:
    found: list[dict[str, Any]] = []
    scanned = 0
    start: ListCursor | None = None
    while True:
        page = reader.list_files(query, limit=limit, start=start)
        assert page.ordered_by is Plan(query.order_by or Plan.UPLOAD_DATE)
        found.extend(page.items)
        scanned += page.scanned_count
        start = page.next_cursor
        if start is None:
            return found, scanned


@pytest.mark.parametrize("user", ["HOT", "COLD"])
@pytest.mark.parametrize("ascending", [True, False])
def test_a_users_files_by_size_come_in_size_order_across_shards(
    files: tuple[FileReader, list[dict[str, Any]]], user: str, ascending: bool
) -> None:
    reader, _ = files
    found, _ = read_all(reader, UserQuery(user, order_by="size", ascending=ascending), limit=7)
    sizes = [item["size"] for item in found]
    assert len(found) == 150
    assert sizes == sorted(sizes, reverse=not ascending)
    assert {item["uploadUser"] for item in found} == {user}
    # No filter: in one page it reads what it returns (small pages over shards read ahead, as by time).
    assert read_all(reader, UserQuery(user, order_by="size", ascending=ascending), limit=1000)[1] == 150


def test_size_bounds_read_only_their_range_and_time_bounds_filter(
    files: tuple[FileReader, list[dict[str, Any]]],
) -> None:
    reader, items = files
    mine = [item for item in items if item["objectKey"].startswith("HOT/")]
    in_range = [item for item in mine if 5000 <= item["size"] <= 5400]
    query = UserQuery("HOT", order_by="size", min_size=5000, max_size=5400, ascending=False)
    found, scanned = read_all(reader, query, limit=100)
    assert sorted(item["objectKey"] for item in found) == sorted(item["objectKey"] for item in in_range)
    assert scanned == len(in_range) < len(mine)  # the key range, not the whole list
    # One day: a filter on upload time, in size order.
    day = UserQuery("HOT", order_by="size", day_prefix="2017-08-02T", ascending=True)
    found, _ = read_all(reader, day, limit=5)
    expected = sorted(item["size"] for item in mine if item["uploadDate"].startswith("2017-08-02T"))
    assert [item["size"] for item in found] == expected
    assert expected


def test_a_cursor_of_the_size_order_does_not_continue_the_time_order(
    files: tuple[FileReader, list[dict[str, Any]]],
) -> None:
    from file_index.read.reader import InvalidStartKey

    reader, _ = files
    page = reader.list_files(UserQuery("HOT", order_by="size"), limit=5)
    assert page.next_cursor is not None
    with pytest.raises(InvalidStartKey):
        reader.list_files(UserQuery("HOT"), limit=5, start=page.next_cursor)
