"""The reader over a sharded, boxed index, on moto and DynamoDB Local: every plan against brute force.

One table per engine (with the Z-order index) holds entries written by the real writer
(`entry_items.entry_item`) under several placements: bucket `one` with 1 shard, `three` with 3, `sixteen` with
16; the hot user `bot` (4 shards) beside a user whose own name is `bot#3`; sizes and times drawn from
small pools, so many entries tie. Hypothesis draws the query, the page size and the order; following
the cursors must give the brute-force answer, each item once, in the plan's order.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from random import Random
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from bench import reader_030
from bench.reader_030 import Reader030
from file_index.read.file_queries import (
    BucketQuery,
    FileQuery,
    InvalidStartKey,
    ListCursor,
    Plan,
    UnavailableOrder,
    UserQuery,
    ZWalk,
)
from file_index.read.reader import PAGE_ROUNDS, FileReader
from file_index.rules import cost, schema, zorder
from file_index.rules.objects import ObjectEvent, iso_utc_millis
from file_index.rules.placement import ShardPlacement
from file_index.rules.shard_merge import MergeCursor, Position, ShardCursor
from file_index.write.entry_items import entry_item
from search.cursor import MAX_CURSOR_LENGTH, decode_cursor, encode_cursor
from tests.integration.conftest import DynamoDBLocal

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("search-sharded-reads")

REGION = "us-east-1"
HOT = {"bot": 4}
BUCKET_SHARDS = {"one": 1, "three": 3, "sixteen": 16}
USERS = ("alice", "bot", "bot#3")
_EPOCH = datetime(2017, 1, 1, tzinfo=UTC)
_rng = Random(20170820)
# Pools with repeats: many entries share a size or an upload time.
TIMES = sorted(
    iso_utc_millis(_EPOCH + timedelta(milliseconds=_rng.randrange(365 * 86_400_000))) for _ in range(24)
)
SIZES = sorted({0, 1, *(int(10 ** _rng.uniform(0, 10)) for _ in range(18))})
# Hypothesis examples per property (moto evaluates every Query in Python: keep them few).
EXAMPLES = int(os.environ.get("SHARDED_READ_EXAMPLES", "8"))


@dataclass(frozen=True)
class Truth:
    key: str
    bucket: str
    user: str
    size: int
    date: str


def _event(bucket: str, key: str, size: int, date: str) -> ObjectEvent:
    # The default key pattern: the user is everything before the first "/".
    user, file_id = key.split("/", 1)
    moment = datetime.fromisoformat(date.replace("Z", "+00:00"))
    return ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=bucket,
        key=key,
        event_time=moment,
        sequencer="0055AED6DCD90281E5",
        size=size,
        e_tag="d41d8cd98f00b204e9800998ecf8427e",
        version_id=None,
        upload_user=user,
        file_id=file_id,
    )


def _dataset() -> list[Truth]:
    rng = Random(7)
    truth = []
    for bucket in BUCKET_SHARDS:
        for n in range(60):
            user = USERS[n % len(USERS)]
            truth.append(
                Truth(f"{user}/{bucket}-{n:03d}", bucket, user, rng.choice(SIZES), rng.choice(TIMES))
            )
    return truth


DATA = _dataset()
WALK_SHARDS = 4


def _walk_dataset() -> list[Truth]:
    """Bucket `walk`: 400 entries spread over 2017 and over sizes from 1 B to 10 GB, so a box's z-range
    holds many entries outside it, in stretches the Z-order walk must jump over."""
    rng = Random(11)
    return [
        Truth(
            f"walker/walk-{n:03d}",
            "walk",
            "walker",
            int(10 ** rng.uniform(0, 10)),
            iso_utc_millis(_EPOCH + timedelta(milliseconds=rng.randrange(365 * 86_400_000))),
        )
        for n in range(400)
    ]


WALK_DATA = _walk_dataset()


def _write(table: Any, truth: list[Truth]) -> None:
    with table.batch_writer() as batch:
        for entry in truth:
            shard_count = WALK_SHARDS if entry.bucket == "walk" else BUCKET_SHARDS.get(entry.bucket, 1)
            placement = ShardPlacement(shard_count, HOT, multi_attribute_index=True)
            event = _event(entry.bucket, entry.key, entry.size, entry.date)
            batch.put_item(Item=entry_item(event, event.order_key, placement))


@pytest.fixture(
    scope="module", params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)]
)
def table(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A table with the Z-order index holding DATA, on each engine, made once per module."""
    name = "FileMetaData-sharded"
    if request.param == "moto":
        with mock_aws():
            dynamodb = boto3.resource("dynamodb", region_name=REGION)
            dynamodb.create_table(**schema.create_table_request(name, multi_attribute_index=True))
            table = dynamodb.Table(name)
            _write(table, DATA + WALK_DATA)
            yield table
        return
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    dynamodb = boto3.resource(
        "dynamodb",
        endpoint_url=local.endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    dynamodb.meta.client.create_table(**schema.create_table_request(name, multi_attribute_index=True))
    dynamodb.meta.client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
    table = dynamodb.Table(name)
    _write(table, DATA + WALK_DATA)
    yield table
    dynamodb.meta.client.delete_table(TableName=name)


def _read_all(
    reader: FileReader, query: FileQuery, *, limit: int, z_order_ready: bool = True, plan: Plan | None = None
) -> tuple[list[dict[str, Any]], list[int], set[Plan]]:
    """Every page of `query`. A page of the production reader waits for at most PAGE_ROUNDS Query latencies;
    the bench's 0.3.0 reader is bounded by its Query budget instead (checked by the caller)."""
    rounds_bounded = not isinstance(reader, Reader030)
    items: list[dict[str, Any]] = []
    requests: list[int] = []
    plans: set[Plan] = set()
    start: ListCursor | None = None
    for _ in range(len(DATA) + len(WALK_DATA) + 5):
        page = reader.list_files(
            query, limit=limit, start=start, z_order_ready=z_order_ready, plan=None if start else plan
        )
        assert len(page.items) <= limit
        assert not rounds_bounded or page.round_trips <= PAGE_ROUNDS
        items.extend(page.items)
        requests.append(page.request_count)
        plans.add(page.ordered_by)
        if page.next_cursor is None:
            return items, requests, plans
        # The cursor travels as JSON, as inside the signed cursor.
        start = ListCursor.from_json(json.loads(json.dumps(page.next_cursor.to_json())))
    raise AssertionError("paging does not end")


def _sort_value(plan: Plan, item: dict[str, Any]) -> Any:
    if plan is Plan.SIZE:
        return item["size"]
    if plan is Plan.UPLOAD_DATE:
        return item["uploadDate"]
    return zorder.encode(zorder.epoch_millis(item["uploadDate"]), item["size"])


def _check_answer(items: list[dict[str, Any]], expected: list[Truth], plan: Plan, ascending: bool) -> None:
    keys = [item["objectKey"] for item in items]
    assert len(keys) == len(set(keys)), "an item came twice"
    assert set(keys) == {t.key for t in expected}
    by_key = {t.key: t for t in expected}
    for item in items:
        truth = by_key[item["objectKey"]]
        # The public item names the bucket and the user, never a shard value.
        assert (item["bucketName"], item["uploadUser"], item["size"], item["uploadDate"]) == (
            truth.bucket,
            truth.user,
            truth.size,
            truth.date,
        )
    values = [_sort_value(plan, item) for item in items]
    assert values == sorted(values, reverse=not ascending)


def _in_box(t: Truth, query: FileQuery) -> bool:
    if query.min_size is not None and t.size < query.min_size:
        return False
    if query.max_size is not None and t.size > query.max_size:
        return False
    if isinstance(query, UserQuery) and query.day_prefix is not None:
        return t.date.startswith(query.day_prefix)
    return (query.start is None or t.date >= query.start) and (query.end is None or t.date <= query.end)


sizes = st.one_of(st.none(), st.sampled_from(SIZES), st.integers(0, 2 * 10**10))
times = st.one_of(
    st.none(), st.sampled_from(TIMES), st.sampled_from([t[:10] + "T00:00:00.000Z" for t in TIMES])
)
HYPOTHESIS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@HYPOTHESIS
@given(
    bucket=st.sampled_from(sorted(BUCKET_SHARDS)),
    raise_to_sixteen=st.booleans(),
    limit=st.integers(3, 40),
    ascending=st.booleans(),
    low=sizes,
    high=sizes,
)
def test_sharded_bucket_lists_give_every_entry_once_in_size_order(
    table: Any,
    bucket: str,
    raise_to_sixteen: bool,
    limit: int,
    ascending: bool,
    low: int | None,
    high: int | None,
) -> None:
    if low is not None and high is not None and low > high:
        low, high = high, low
    shards = 16 if raise_to_sixteen else BUCKET_SHARDS[bucket]
    reader = FileReader(table, ShardPlacement(shards, HOT))
    query = BucketQuery(bucket=bucket, min_size=low, max_size=high, ascending=ascending)
    items, _requests, plans = _read_all(reader, query, limit=limit)
    assert plans == {Plan.SIZE}
    _check_answer(items, [t for t in DATA if t.bucket == bucket and _in_box(t, query)], Plan.SIZE, ascending)
    # Paging does not change the order: one long page gives the same sequence.
    whole = reader.list_files(query, limit=1000)
    assert whole.items == items


@HYPOTHESIS
@given(
    user=st.sampled_from(USERS),
    limit=st.integers(3, 40),
    ascending=st.booleans(),
    start=times,
    end=times,
    low=sizes,
    day=st.booleans(),
)
def test_user_lists_of_a_hot_user_and_of_a_user_named_like_its_shard_stay_apart(
    table: Any,
    user: str,
    limit: int,
    ascending: bool,
    start: str | None,
    end: str | None,
    low: int | None,
    day: bool,
) -> None:
    if start is not None and end is not None and start > end:
        start, end = end, start
    if day and start is not None:
        query = UserQuery(user=user, day_prefix=start[:11], min_size=low, ascending=ascending)
    else:
        query = UserQuery(user=user, start=start, end=end, min_size=low, ascending=ascending)
    reader = FileReader(table, ShardPlacement(16, HOT))
    items, _, plans = _read_all(reader, query, limit=limit)
    assert plans == {Plan.UPLOAD_DATE}
    _check_answer(
        items, [t for t in DATA if t.user == user and _in_box(t, query)], Plan.UPLOAD_DATE, ascending
    )


@HYPOTHESIS
@given(
    bucket=st.sampled_from(sorted(BUCKET_SHARDS)),
    mode=st.sampled_from(["z", "z pending", "z off", "no time index"]),
    order_by=st.sampled_from([None, None, "uploadDate", "size"]),
    limit=st.sampled_from([1, 2, 3, 7, 30]),
    ascending=st.booleans(),
    start=times,
    end=st.sampled_from(TIMES),
    low=sizes,
    high=sizes,
    walk=st.sampled_from([ZWalk(), ZWalk(min_limit=1), ZWalk(max_ranges=4, min_limit=2), None]),
)
def test_bucket_boxes_on_every_plan_equal_brute_force(
    table: Any,
    bucket: str,
    mode: str,
    order_by: str | None,
    limit: int,
    ascending: bool,
    start: str | None,
    end: str,
    low: int | None,
    high: int | None,
    walk: ZWalk | None,
) -> None:
    """Every plan a bucket's box may take, chosen or asked for (`order_by`): exact, in its order, bounded.
    Modes: the Z-order index on, being filled, off (with the bucket's time index), and a table without the
    bucket's time index (`bucketTimeIndex: false`, Z-order off). Every other plan that can read the box
    gives the same entries in its order; the Z-order walk jumps (small Query limits make it jump at almost
    every Query). `walk=None`: the bench's 0.3.0 reader (`bench.reader_030`), exact too, its pages bounded
    by its own budget."""
    if start is not None and start > end:
        start, end = end, start
    if low is not None and high is not None and low > high:
        low, high = high, low
    time_index = mode != "no time index"
    placement = ShardPlacement(BUCKET_SHARDS[bucket], HOT, multi_attribute_index=mode in ("z", "z pending"))
    reader = (
        Reader030(table, placement, bucket_time_index=time_index)
        if walk is None
        else FileReader(table, placement, bucket_time_index=time_index, z_walk=walk)
    )

    def budget(plan: Plan) -> int:
        shard_count = BUCKET_SHARDS[bucket]
        return (
            reader_030.page_request_budget(shard_count, plan) if walk is None else PAGE_ROUNDS * shard_count
        )

    query = BucketQuery(
        bucket=bucket,
        min_size=low,
        max_size=high,
        start=start,
        end=end,
        ascending=ascending,
        order_by=order_by,
    )
    if order_by == "uploadDate" and not time_index:
        with pytest.raises(UnavailableOrder, match=r"need the bucket's time index \(bucketTimeIndex\)"):
            reader.list_files(query, limit=limit)
        return
    items, requests, plans = _read_all(reader, query, limit=limit, z_order_ready=mode != "z pending")
    sized = low is not None or high is not None
    if order_by is not None:
        plan = Plan(order_by)
    elif time_index and not sized:
        plan = Plan.UPLOAD_DATE
    else:
        plan = Plan.Z_ORDER if mode == "z" else Plan.SIZE
    assert plans == {plan}
    expected = [t for t in DATA if t.bucket == bucket and _in_box(t, query)]
    _check_answer(items, expected, plan, ascending)
    assert all(count <= budget(plan) for count in requests)
    ready = mode != "z pending"
    for other in reader.plans(query, z_order_ready=ready):
        if other is not plan:
            items, requests, plans = _read_all(reader, query, limit=limit, z_order_ready=ready, plan=other)
            assert plans == {other}
            _check_answer(items, expected, other, ascending)
            assert all(count <= budget(other) for count in requests)


@HYPOTHESIS
@given(
    days=st.tuples(st.integers(0, 364), st.integers(1, 120)),
    octaves=st.tuples(st.integers(0, 33), st.integers(1, 12)),
    limit=st.sampled_from([1, 4, 25, 400]),
    ascending=st.booleans(),
    walk=st.sampled_from([ZWalk(), ZWalk(min_limit=1)]),
)
def test_the_z_order_walk_jumps_over_what_lies_outside_the_box_and_misses_nothing(
    table: Any,
    days: tuple[int, int],
    octaves: tuple[int, int],
    limit: int,
    ascending: bool,
    walk: ZWalk,
) -> None:
    """Many entries in every box's z-range lie outside the box: the walk jumps over them (it reads fewer
    than 0.3.0's 32 ranges do, or no more than the box holds plus a read unit per Query) and still gives
    every entry of the box once, in z-order."""
    start = _EPOCH + timedelta(days=days[0])
    query = BucketQuery(
        bucket="walk",
        start=iso_utc_millis(start),
        end=iso_utc_millis(start + timedelta(days=days[1])),
        min_size=2 ** octaves[0],
        max_size=2 ** (octaves[0] + octaves[1]),
        ascending=ascending,
    )
    placement = ShardPlacement(WALK_SHARDS, HOT, multi_attribute_index=True)
    expected = [t for t in WALK_DATA if _in_box(t, query)]
    items, requests, plans = _read_all(FileReader(table, placement, z_walk=walk), query, limit=limit)
    assert plans == {Plan.Z_ORDER}
    _check_answer(items, expected, Plan.Z_ORDER, ascending)
    assert all(count <= PAGE_ROUNDS * WALK_SHARDS for count in requests)


def test_the_z_order_walk_reads_less_than_0_3_0_and_an_empty_region_costs_one_query_a_shard(
    table: Any,
) -> None:
    """The deployed walk against the bench's 0.3.0 reader (32 ranges, no jumps), as measure 13 compares."""
    placement = ShardPlacement(WALK_SHARDS, HOT, multi_attribute_index=True)
    adaptive = FileReader(table, placement)
    legacy = Reader030(table, placement)
    # One week of 2017 and 1-2 MB: few entries inside, many around it in the box's z-range.
    week = BucketQuery(
        bucket="walk",
        start="2017-08-20T00:00:00.000Z",
        end="2017-08-27T00:00:00.000Z",
        min_size=1 << 20,
        max_size=2 << 20,
    )
    new, old = adaptive.list_files(week, limit=1000), legacy.list_files(week, limit=1000)
    assert new.items == old.items
    assert new.next_cursor is None
    assert old.next_cursor is None
    assert new.request_count < old.request_count / 4
    # No entry was uploaded in 2030: the walk's one Query a shard finds its z-range empty.
    empty = BucketQuery(
        bucket="walk", start="2030-01-01T00:00:00.000Z", end="2030-01-02T00:00:00.000Z", min_size=1
    )
    page = adaptive.list_files(empty, limit=10)
    assert (page.items, page.next_cursor, page.request_count, page.scanned_count) == (
        [],
        None,
        WALK_SHARDS,
        0,
    )
    assert legacy.list_files(empty, limit=10).request_count == WALK_SHARDS * zorder.DEFAULT_MAX_RANGES


def test_a_time_range_of_a_bucket_reads_what_it_returns_on_the_time_index(table: Any) -> None:
    """No size bounds: the bucket's time index keys on the range, so a page reads its own items (plus the
    shards' read-ahead), where a table without it filters the whole bucket by time on the size index."""
    query = BucketQuery(bucket="sixteen", start=TIMES[1], end=TIMES[2])
    expected = [t for t in DATA if t.bucket == "sixteen" and _in_box(t, query)]
    assert expected
    placement = ShardPlacement(BUCKET_SHARDS["sixteen"], HOT)
    timed = _read_all(FileReader(table, placement), query, limit=1000)
    legacy = _read_all(FileReader(table, placement, bucket_time_index=False), query, limit=1000)
    assert (timed[2], legacy[2]) == ({Plan.UPLOAD_DATE}, {Plan.SIZE})
    assert {item["objectKey"] for item in timed[0]} == {item["objectKey"] for item in legacy[0]}
    timed_read = FileReader(table, placement).list_files(query, limit=1000).scanned_count
    legacy_read = (
        FileReader(table, placement, bucket_time_index=False).list_files(query, limit=1000).scanned_count
    )
    assert timed_read == len(expected)
    assert legacy_read == sum(1 for t in DATA if t.bucket == "sixteen")


def test_one_shard_reads_what_it_returns_in_one_query_per_page(table: Any) -> None:
    reader = FileReader(table, ShardPlacement())
    page = reader.list_files(BucketQuery(bucket="one"), limit=25)
    assert (len(page.items), page.scanned_count, page.request_count) == (25, 25, 1)
    page = reader.list_files(UserQuery(user="alice"), limit=10)
    assert (len(page.items), page.scanned_count, page.request_count) == (10, 10, 1)


def test_sixteen_shards_cost_about_one_query_per_shard_per_page(table: Any) -> None:
    reader = FileReader(table, ShardPlacement(16))
    page = reader.list_files(BucketQuery(bucket="sixteen"), limit=50)
    assert len(page.items) == 50
    assert 16 <= page.request_count <= 20
    assert page.scanned_count <= 3 * 50


def test_a_raise_of_the_shard_count_mid_list_loses_nothing_and_repeats_nothing(table: Any) -> None:
    old = [Truth(f"alice/raise-{n:03d}", "raise", "alice", n % 9, TIMES[0]) for n in range(60)]
    for shards, part in ((1, old[:30]), (4, old[30:])):
        with table.batch_writer() as batch:
            for t in part:
                event = _event(t.bucket, t.key, t.size, t.date)
                batch.put_item(Item=entry_item(event, event.order_key, ShardPlacement(shards)))
    query = BucketQuery(bucket="raise", ascending=True)
    first = FileReader(table, ShardPlacement(4)).list_files(query, limit=25)
    assert first.next_cursor is not None
    # Raised to 16: new uploads land in all sixteen shards, every one after the cursor's place.
    new = [Truth(f"alice/raise-new-{n:03d}", "raise", "alice", 100 + n, TIMES[1]) for n in range(40)]
    with table.batch_writer() as batch:
        for t in new:
            event = _event(t.bucket, t.key, t.size, t.date)
            batch.put_item(Item=entry_item(event, event.order_key, ShardPlacement(16)))
    reader = FileReader(table, ShardPlacement(16))
    items = list(first.items)
    start: ListCursor | None = ListCursor.from_json(first.next_cursor.to_json())
    while start is not None:
        page = reader.list_files(query, limit=7, start=start)
        items.extend(page.items)
        start = page.next_cursor
    _check_answer(items, old + new, Plan.SIZE, ascending=True)
    # A cursor naming more shards than are read now is refused, never half-read.
    with pytest.raises(InvalidStartKey, match="made for 16 shards, more than the 4 read now"):
        FileReader(table, ShardPlacement(4)).list_files(
            query, limit=5, start=ListCursor(Plan.SIZE, MergeCursor.start(16))
        )


def test_a_cursor_keeps_its_plan_and_a_z_order_cursor_is_refused_while_the_index_cannot_answer(
    table: Any,
) -> None:
    reader = FileReader(table, ShardPlacement(16, HOT, multi_attribute_index=True))
    # Time and size bounds (no size bounds would take the bucket's time index; minSize=0 is none).
    query = BucketQuery(bucket="sixteen", start=TIMES[0], end=TIMES[-1], min_size=1)
    fallback = reader.list_files(query, limit=5, z_order_ready=False)
    assert fallback.ordered_by is Plan.SIZE
    assert fallback.next_cursor is not None
    # The migration finished meanwhile: the list goes on in the order it started with.
    start: ListCursor | None = fallback.next_cursor
    items = list(fallback.items)
    while start is not None:
        page = reader.list_files(query, limit=9, start=start, z_order_ready=True)
        assert page.ordered_by is Plan.SIZE
        items.extend(page.items)
        start = page.next_cursor
    _check_answer(items, [t for t in DATA if t.bucket == "sixteen" and _in_box(t, query)], Plan.SIZE, False)

    z_page = reader.list_files(query, limit=5)
    assert z_page.ordered_by is Plan.Z_ORDER
    assert z_page.next_cursor is not None
    with pytest.raises(InvalidStartKey, match="Z-order index, which cannot answer now"):
        reader.list_files(query, limit=5, start=z_page.next_cursor, z_order_ready=False)
    with pytest.raises(InvalidStartKey, match="Z-order index, which cannot answer now"):
        FileReader(table, ShardPlacement(16, HOT)).list_files(query, limit=5, start=z_page.next_cursor)
    # A plan that does not read the query, or a position outside it, is refused before any read.
    size_only = BucketQuery(bucket="sixteen")
    with pytest.raises(InvalidStartKey, match="zAddress plan"):
        reader.list_files(size_only, limit=5, start=z_page.next_cursor)
    outside = ListCursor(Plan.SIZE, MergeCursor((ShardCursor(Position(5, "k")),)))
    with pytest.raises(InvalidStartKey, match="outside the query"):
        reader.list_files(BucketQuery(bucket="one", min_size=10), limit=5, start=outside)


def test_a_time_index_cursor_is_refused_once_the_index_is_gone_and_an_asked_order_is_kept(table: Any) -> None:
    placement = ShardPlacement(16, HOT)
    query = BucketQuery(bucket="sixteen", start=TIMES[0])
    page = FileReader(table, placement).list_files(query, limit=5)
    assert page.ordered_by is Plan.UPLOAD_DATE
    assert page.next_cursor is not None
    with pytest.raises(InvalidStartKey, match="bucket's time index, which this deployment does not have"):
        FileReader(table, placement, bucket_time_index=False).list_files(
            query, limit=5, start=page.next_cursor
        )
    # A cursor of one order is no cursor of a list asked in another.
    by_size = BucketQuery(bucket="sixteen", start=TIMES[0], order_by="size")
    with pytest.raises(InvalidStartKey, match="uploadDate plan"):
        FileReader(table, placement).list_files(by_size, limit=5, start=page.next_cursor)
    newest = FileReader(table, placement).list_files(
        BucketQuery(bucket="sixteen", order_by="uploadDate"), limit=5
    )
    assert newest.ordered_by is Plan.UPLOAD_DATE
    dates = [item["uploadDate"] for item in newest.items]
    assert dates == sorted(dates, reverse=True)
    assert dates[0] == max(t.date for t in DATA if t.bucket == "sixteen")


def test_items_of_a_hot_users_shard_show_the_user_and_the_bucket(table: Any) -> None:
    reader = FileReader(table, ShardPlacement(16, HOT))
    hot = [t for t in DATA if t.user == "bot" and t.bucket == "sixteen"]
    stored = {t.key: table.get_item(Key={"objectKey": t.key})["Item"] for t in hot}
    # The entries really are spread over the shards of both indexes.
    assert len({item["uploadUser"] for item in stored.values()}) > 1
    assert len({item["bucketName"] for item in stored.values()}) > 1
    for t in hot:
        assert reader.get_file(t.key) == {
            "objectKey": t.key,
            "bucketName": "sixteen",
            "fileId": t.key.split("/", 1)[1],
            "size": t.size,
            "uploadUser": "bot",
            "uploadDate": t.date,
            "sequencer": "0055AED6DCD90281E5",
            "eTag": "d41d8cd98f00b204e9800998ecf8427e",
        }


def _walk_statistics() -> cost.IndexStatistics:
    counts: Counter[str] = Counter()
    for t in WALK_DATA:
        counts.update(cost.entry_counts(t.size, zorder.epoch_millis(t.date), 300))
    statistics = cost.statistics_from_counts(counts, as_of_ms=zorder.epoch_millis("2018-01-01T00:00:00.000Z"))
    assert statistics is not None
    return statistics


def test_with_statistics_the_planner_takes_the_plan_that_keys_on_the_narrow_bound(table: Any) -> None:
    """Without statistics the planner reads every box with time and size bounds on the size index (the
    Z-order index when on); with the bucket's statistics a box narrow in time reads the time index and one
    narrow in size the size index. Time bounds alone always read the time index."""
    statistics = _walk_statistics()
    reader = FileReader(table, ShardPlacement(WALK_SHARDS, HOT))
    day = BucketQuery(
        bucket="walk", start="2017-08-20T00:00:00.000Z", end="2017-08-20T23:59:59.999Z", min_size=1
    )
    year = BucketQuery(
        bucket="walk",
        start="2017-01-01T00:00:00.000Z",
        end="2017-12-31T23:59:59.999Z",
        min_size=10**6,
        max_size=2 * 10**6,
    )
    assert reader.plan(day) is Plan.SIZE
    assert reader.plan(day, statistics=statistics) is Plan.UPLOAD_DATE
    assert reader.plan(year, statistics=statistics) is Plan.SIZE
    since = BucketQuery(bucket="walk", start="2017-12-20T00:00:00.000Z")
    assert reader.plan(since, statistics=statistics) is Plan.UPLOAD_DATE
    assert (
        FileReader(table, ShardPlacement(WALK_SHARDS, HOT, multi_attribute_index=True)).plan(
            since, statistics=statistics
        )
        is Plan.UPLOAD_DATE
    )
    for query in (day, year, since):
        page = reader.list_files(query, limit=500, statistics=statistics)
        assert page.next_cursor is None
        _check_answer(page.items, [t for t in WALK_DATA if _in_box(t, query)], page.ordered_by, False)


def _long_key(n: int) -> str:
    """A 1,024-byte key unlike every other (S3's longest), its user first."""
    body = Random(n).choices("abcdefghijklmnopqrstuvwxyz0123456789", k=1024 - len("wide/") - 6)
    return f"wide/{n:05d}-" + "".join(body)


@pytest.mark.slow
@pytest.mark.parametrize("plan", [Plan.SIZE, Plan.UPLOAD_DATE, Plan.Z_ORDER])
def test_a_cursor_of_256_shards_with_1024_byte_keys_stays_within_the_apis_limit(
    table: Any, plan: Plan
) -> None:
    """Each shard resumes at its next item's sort value (no key) unless that ties with its last returned
    item, so a cursor carries about one key (the last item's), not one per shard: a cursor of 256 such
    keys would take about 238,000 characters, far past the API's 8,192. So does the cursor of a page cut
    short (to fit a response), wherever it is cut."""
    placement = ShardPlacement(256, HOT, multi_attribute_index=True)
    rng = Random(256)
    sizes = rng.sample(range(1, 10**9), 600)
    truth = [
        Truth(
            _long_key(n),
            "wide",
            "wide",
            sizes[n],
            iso_utc_millis(_EPOCH + timedelta(milliseconds=rng.randrange(365 * 86_400_000))),
        )
        for n in range(600)
    ]
    with table.batch_writer() as batch:
        for t in truth:
            event = _event(t.bucket, t.key, t.size, t.date)
            batch.put_item(Item=entry_item(event, event.order_key, placement))
    query = BucketQuery(bucket="wide", start="2017-01-01T00:00:00.000Z", min_size=1)
    reader = FileReader(table, placement)
    items: list[dict[str, Any]] = []
    start: ListCursor | None = None
    longest = 0
    for _ in range(50):
        page = reader.list_files(query, limit=100, start=start, plan=None if start else plan)
        items.extend(page.items)
        if page.next_cursor is None:
            break
        encoded = encode_cursor(b"k" * 32, query, page.next_cursor.to_json())
        longest = max(longest, len(encoded))
        for cut in (1, len(page.items) // 2, len(page.items) - 1):
            if 1 <= cut < len(page.items):
                cut_cursor = encode_cursor(b"k" * 32, query, page.cursor_after(cut).to_json())
                longest = max(longest, len(cut_cursor))
        start = ListCursor.from_json(decode_cursor(b"k" * 32, query, encoded))
    else:
        pytest.fail("paging does not end")
    _check_answer(items, truth, plan, False)
    assert 0 < longest <= MAX_CURSOR_LENGTH
