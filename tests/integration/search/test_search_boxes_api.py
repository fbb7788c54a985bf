"""Box queries and sharded entries through the search handler: `orderedBy`, the Z-order flag, cursors
that keep their plan, public buckets and users, downloads, and pages cut to fit the response.

The handler runs with a placement in its environment (3 bucket shards, a hot user, the Z-order index) over a
table that has the third index; entries are written by the real writer under that placement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote

import boto3
import pytest

from file_index.read.name_query import NameQuery
from file_index.read.reader import FileReader
from file_index.rules import cost, schema
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.state import IndexStateStore, Operation, State
from file_index.write.entry_items import entry_item
from search import composition
from search.dal import ObjectStore
from search.queries import ListParameters, build_query
from search.service import FileSearch
from search.status import IndexStateView
from tests.integration.search.conftest import BUCKET, CURSOR_KEY, REGION, MotoStack, SearchApi

PLACEMENT = ShardPlacement(bucket_shards=3, hot_users={"bot": 4}, multi_attribute_index=True)
Z_TABLE = "FileMetaData-z"
B = f"/files?bucket={BUCKET}"


def _put(table: Any, key: str, size: int, date: str, placement: ShardPlacement = PLACEMENT) -> None:
    user, file_id = key.split("/", 1)
    event = ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=BUCKET,
        key=key,
        event_time=datetime.fromisoformat(date.replace("Z", "+00:00")),
        sequencer="0055AED6DCD90281E5",
        size=size,
        e_tag=None,
        version_id=None,
        upload_user=user,
        file_id=file_id,
    )
    table.put_item(Item=entry_item(event, event.order_key, placement))


@pytest.fixture
def z_api(
    moto_stack: MotoStack,
    search_env: dict[str, str],
    state_clock: Any,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[SearchApi]:
    """The handler with PLACEMENT in its environment, over a fresh table with the Z-order index."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(**schema.create_table_request(Z_TABLE, multi_attribute_index=True))
    monkeypatch.setenv("TABLE_NAME", Z_TABLE)
    for name, value in PLACEMENT.to_env().items():
        monkeypatch.setenv(name, value)
    composition.file_search.cache_clear()
    try:
        yield moto_stack.api(boto3.resource("dynamodb", region_name=REGION).Table(Z_TABLE), lambda_context)
    finally:
        composition.file_search.cache_clear()
        client.delete_table(TableName=Z_TABLE)


def _fill(api: SearchApi) -> None:
    for n in range(40):
        _put(
            api.table,
            f"{('alice', 'bot', 'bot#3')[n % 3]}/f{n:02d}",
            10 * (n % 8),
            f"2017-08-{10 + n % 15}T09:00:00.000Z",
        )


def _pages(api: SearchApi, path: str) -> tuple[list[dict[str, Any]], set[str]]:
    items: list[dict[str, Any]] = []
    orders: set[str] = set()
    cursor = None
    for _ in range(100):
        body = api.get(path + (f"&cursor={quote(cursor)}" if cursor else "")).json
        items.extend(body["items"])
        orders.add(body["orderedBy"])
        cursor = body["nextCursor"]
        if cursor is None:
            return items, orders
    raise AssertionError("paging does not end")


def test_each_list_says_the_order_its_plan_gives(z_api: SearchApi) -> None:
    _fill(z_api)
    box = f"{B}&from=2017-08-12&to=2017-08-20&minSize=20&maxSize=50&limit=4"
    items, orders = _pages(z_api, box)
    assert orders == {"zAddress"}
    expected = {
        f"{('alice', 'bot', 'bot#3')[n % 3]}/f{n:02d}"
        for n in range(40)
        if 20 <= 10 * (n % 8) <= 50 and 12 <= 10 + n % 15 <= 20
    }
    assert sorted(item["objectKey"] for item in items) == sorted(expected)
    assert {item["bucketName"] for item in items} == {BUCKET}
    assert _pages(z_api, f"{B}&minSize=20&limit=7")[1] == {"size"}
    assert _pages(z_api, "/files?user=bot&minSize=20&limit=3")[1] == {"uploadDate"}


def test_a_hot_user_and_a_user_named_like_its_shard_are_told_apart(z_api: SearchApi) -> None:
    _fill(z_api)
    bot, _ = _pages(z_api, "/files?user=bot&limit=5")
    named, _ = _pages(z_api, f"/files?user={quote('bot#3')}&limit=5")
    assert {item["uploadUser"] for item in bot} == {"bot"}
    assert {item["uploadUser"] for item in named} == {"bot#3"}
    assert len(bot) == len(named) == 13
    assert all(item["objectKey"].startswith("bot#3/") for item in named)


def test_while_the_z_order_index_is_filled_boxes_use_the_size_index_and_its_cursors_keep_working(
    z_api: SearchApi, state_clock: Any
) -> None:
    _fill(z_api)
    store = IndexStateStore(boto3.client("dynamodb", region_name=REGION), Z_TABLE)
    box = f"{B}&from=2017-08-12&minSize=1&limit=5"  # time and size: the Z-order index
    z_cursor = z_api.get(box).json["nextCursor"]
    store.mark_z_order_pending(BUCKET)
    state_clock.advance(10)
    assert z_api.get("/status").json["buckets"][0]["zOrderPending"] is True
    first = z_api.get(box).json
    assert first["orderedBy"] == "size"
    refused = z_api.get(f"{box}&cursor={quote(z_cursor)}")
    assert refused.status == 400
    assert "Z-order index, which cannot answer now" in refused.json["message"]
    # The migration ends: the list started on the size index goes on there, exactly.
    store.clear_z_order_pending(BUCKET)
    state_clock.advance(10)
    items, orders = list(first["items"]), set()
    cursor = first["nextCursor"]
    while cursor is not None:
        body = z_api.get(f"{box}&cursor={quote(cursor)}").json
        orders.add(body["orderedBy"])
        items.extend(body["items"])
        cursor = body["nextCursor"]
    assert orders == {"size"}
    assert (
        len(items)
        == len({item["objectKey"] for item in items})
        == sum(1 for n in range(40) if 10 + n % 15 >= 12 and n % 8)
    )
    assert z_api.get(box).json["orderedBy"] == "zAddress"


def test_a_file_in_a_shard_is_shown_and_downloaded_under_its_bucket(z_api: SearchApi) -> None:
    key = next(f"bot/d{n}" for n in range(50) if PLACEMENT.bucket_partition(BUCKET, f"bot/d{n}") != BUCKET)
    _put(z_api.table, key, 5, "2017-08-20T09:00:00.000Z")
    z_api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"12345")
    stored = z_api.table.get_item(Key={"objectKey": key})["Item"]
    assert stored["bucketName"] != BUCKET
    assert z_api.get(f"/files/{quote(key, safe='')}").json["bucketName"] == BUCKET
    assert z_api.get(f"/download/{quote(key, safe='')}").status == 302


def test_a_sharded_page_cut_to_fit_the_response_continues_after_its_last_item(z_api: SearchApi) -> None:
    _fill(z_api)
    reader = FileReader(z_api.table, PLACEMENT)
    state = IndexStateView(
        IndexStateStore(boto3.client("dynamodb", region_name=REGION), Z_TABLE), BUCKET, State.READY
    )
    search = FileSearch(
        reader=reader,
        index_state=state,
        backlog=None,  # type: ignore[arg-type]  # not used by lists
        objects=ObjectStore(None, BUCKET),
        cursor_secret=CURSOR_KEY.encode(),
        download_url_expiry_seconds=60,
        page_budget_bytes=900,  # a few items per page, fewer than the limit
    )
    for query in (
        build_query(ListParameters(bucket=BUCKET, from_="2017-08-11")),
        build_query(ListParameters(user="bot")),
    ):
        assert not isinstance(query, NameQuery)
        items: list[dict[str, Any]] = []
        cursor = None
        cut = False
        while True:
            page = search.list_files(query, limit=20, cursor=cursor)
            cut = cut or (0 < len(page.items) < 20 and page.next_cursor is not None)
            items.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        # The same list uncut: long pages, each bounded in reads (a box may end a page early).
        whole: list[dict[str, Any]] = []
        start = None
        while True:
            uncut = reader.list_files(query, limit=1000, start=start)
            whole.extend(uncut.items)
            start = uncut.next_cursor
            if start is None:
                break
        assert cut
        assert [item["objectKey"] for item in items] == [item["objectKey"] for item in whole]


def test_a_migration_of_a_never_backfilled_bucket_keeps_its_index_state(z_api: SearchApi) -> None:
    _fill(z_api)
    # The stack created the bucket, so there is no state record: READY. Marking the Z-order flag creates
    # a record holding only the flag, which must not make every answer say BUILDING for hours.
    IndexStateStore(boto3.client("dynamodb", region_name=REGION), Z_TABLE).mark_z_order_pending(BUCKET)
    status = z_api.get("/status").json
    assert (status["indexState"], status["buckets"][0]["zOrderPending"]) == ("READY", True)
    body = z_api.get(f"{B}&from=2017-08-12&minSize=1").json
    assert (body["indexState"], body["orderedBy"]) == ("READY", "size")


def test_a_time_range_inside_one_millisecond_is_an_empty_box_and_a_reversed_one_is_refused(
    z_api: SearchApi,
) -> None:
    _fill(z_api)
    inside = "from=2017-08-12T09:00:00.000200Z&to=2017-08-12T09:00:00.000800Z"
    for path in (f"{B}&{inside}", f"/files?user=bot&{inside}"):
        answer = z_api.get(path)
        assert answer.status == 200, answer.json
        assert (answer.json["items"], answer.json["nextCursor"]) == ([], None)
    reversed_ = z_api.get(f"{B}&from=2017-08-12T09:00:00.000800Z&to=2017-08-12T09:00:00.000200Z")
    assert (reversed_.status, reversed_.json["message"]) == (400, "from must not be after to")


def test_a_bucket_name_with_the_shard_separator_is_a_clear_400(z_api: SearchApi) -> None:
    for path in (f"/files?bucket={quote(BUCKET + '#1')}", f"/files?bucket={quote('#')}&from=2017-08-01"):
        answer = z_api.get(path)
        assert answer.status == 400
        assert "is not an S3 bucket name" in answer.json["message"]


def test_time_bounds_beyond_the_addresses_keep_the_z_order_index(z_api: SearchApi) -> None:
    _fill(z_api)
    items, orders = _pages(z_api, f"{B}&from=1900-01-01&to=2200-01-01&minSize=20&limit=50")
    assert orders == {"zAddress"}
    assert len(items) == sum(1 for n in range(40) if 10 * (n % 8) >= 20)


def test_a_bucket_by_upload_time_reads_the_bucket_time_index_newest_first(z_api: SearchApi) -> None:
    _fill(z_api)
    dates = {f"{('alice', 'bot', 'bot#3')[n % 3]}/f{n:02d}": f"2017-08-{10 + n % 15}" for n in range(40)}
    # A time range without size bounds: the bucket's time index, newest first, each item once.
    items, orders = _pages(z_api, f"{B}&from=2017-08-12&to=2017-08-20&limit=4")
    assert orders == {"uploadDate"}
    assert [item["objectKey"] for item in items] != []
    assert {item["objectKey"] for item in items} == {
        key for key, day in dates.items() if "2017-08-12" <= day <= "2017-08-20"
    }
    assert len(items) == len({item["objectKey"] for item in items})
    shown = [item["uploadDate"] for item in items]
    assert shown == sorted(shown, reverse=True)
    # Asked for: the newest files of the whole bucket, oldest first with order=asc; size bounds filter.
    newest, orders = _pages(z_api, f"{B}&sort=uploadDate&limit=6")
    assert orders == {"uploadDate"}
    assert len(newest) == 40
    assert [item["uploadDate"] for item in newest] == sorted(
        (item["uploadDate"] for item in newest), reverse=True
    )
    oldest, _ = _pages(z_api, f"{B}&sort=uploadDate&order=asc&minSize=30&limit=6")
    assert [item["uploadDate"] for item in oldest] == sorted(item["uploadDate"] for item in oldest)
    assert {item["size"] for item in oldest} <= {30, 40, 50, 60, 70}
    assert len(oldest) == sum(1 for n in range(40) if 10 * (n % 8) >= 30)
    # sort=size keeps the size index even with time bounds.
    assert _pages(z_api, f"{B}&from=2017-08-12&sort=size&limit=9")[1] == {"size"}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "/files?bucket=fileupload.a&sort=name",
            "query parameter sort: Input should be 'uploadDate' or 'size'",
        ),
        (
            "/files?bucket=fileupload.a&q=report&sort=uploadDate",
            "sort applies to a list of a user or a bucket",
        ),
    ],
)
def test_a_sort_the_list_cannot_take_is_a_clear_400(z_api: SearchApi, query: str, message: str) -> None:
    response = z_api.get(query)
    assert response.status == 400, response.body
    assert message in response.json["message"]


def test_without_the_bucket_time_index_a_time_range_filters_and_sort_by_time_is_a_400(
    z_api: SearchApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bucketTimeIndex: false (0.3.0's table): as 0.3.0 read it; asking for the order it lacks says why."""
    _fill(z_api)
    monkeypatch.setenv("BUCKET_TIME_INDEX", "false")
    monkeypatch.setenv("MULTI_ATTRIBUTE_INDEX", "false")
    composition.file_search.cache_clear()
    assert _pages(z_api, f"{B}&from=2017-08-12&limit=9")[1] == {"size"}
    refused = z_api.get(f"{B}&sort=uploadDate")
    assert refused.status == 400
    assert refused.json["message"] == (
        "a bucket's files by upload time need the bucket's time index (bucketTimeIndex), which this "
        "deployment does not have"
    )


def test_with_the_statistics_of_a_complete_run_a_box_reads_the_cheapest_plan(
    z_api: SearchApi, state_clock: Any
) -> None:
    """One day and a size bound: 0.3.0's rule (and this one without statistics) reads the Z-order index;
    the statistics a backfill leaves show the day holds few entries, so the bucket's time index is
    cheaper (a Query a shard, reading about what it returns)."""
    _fill(z_api)
    # minSize=1, a real bound (minSize=0 bounds nothing: the time index would answer at once).
    day = f"{B}&from=2017-08-12&to=2017-08-12T23:59:59.999Z&minSize=1&limit=50"
    assert z_api.get(day).json["orderedBy"] == "zAddress"
    store = IndexStateStore(boto3.client("dynamodb", region_name=REGION), Z_TABLE)
    store.start(BUCKET, Operation.BACKFILL, "run-1")
    counts: Counter[str] = Counter()
    for n in range(40):
        moment = datetime.fromisoformat(f"2017-08-{10 + n % 15}T09:00:00+00:00")
        counts.update(cost.entry_counts(10 * (n % 8), int(moment.timestamp() * 1000), 300))
    store.add_progress(BUCKET, "run-1", {"listed": 40}, statistics=counts)
    state_clock.advance(10)
    # A run still going: its statistics are partial, the rule holds.
    assert z_api.get(day).json["orderedBy"] == "zAddress"
    store.finish(BUCKET, "run-1")
    state_clock.advance(10)
    body = z_api.get(day).json
    assert body["orderedBy"] == "uploadDate"
    assert sorted(item["objectKey"] for item in body["items"]) == sorted(
        f"{('alice', 'bot', 'bot#3')[n % 3]}/f{n:02d}" for n in range(40) if 10 + n % 15 == 12 and n % 8
    )
    shown = z_api.get("/status").json["buckets"][0]["statistics"]
    assert (shown["entries"], shown["source"]) == (40, "run")
