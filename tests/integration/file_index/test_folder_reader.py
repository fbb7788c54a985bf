"""Folder lists read from the key items (`FolderReader`), on moto and on DynamoDB Local.

Entries are written as the writer makes them (`entry_items.entry_item`) with the key items of their names
(`names.key_item`), in the shards the placement gives them. Every list is followed to its end and compared
with the brute-force truth of the live entries: each file and each sub-folder once, in key order, in
both orders; a sub-folder of 20,000 keys is jumped over, read by one Query per shard.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from bench.entries import create_event
from file_index.read import name_reader
from file_index.read.file_queries import BucketQuery, InvalidStartKey, UserQuery
from file_index.read.folder_keys import key_after, key_before, top_key
from file_index.read.folder_reader import FolderPage, FolderReader
from file_index.read.name_query import NameQuery
from file_index.read.name_reader import NameReader
from file_index.read.reader import PAGE_ROUNDS
from file_index.rules import schema
from file_index.rules.name_items import key_item
from file_index.rules.placement import ShardPlacement
from file_index.write.entry_items import entry_item
from tests.integration.conftest import DynamoDBLocal

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("folder-reader")

START = datetime(2024, 5, 1, 10, tzinfo=UTC)
BIG = 20_000


@dataclass
class Tables:
    dynamodb: Any
    table: str
    name_table: str
    live: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (bucket, key): entry

    def put(
        self,
        bucket: str,
        keys: Sequence[str],
        placement: ShardPlacement,
        *,
        user: str = "u",
        entries: bool = True,
        size: int = 10,
    ) -> None:
        """Entries of `keys` (unless not `entries`: key items left without an entry) and their key items."""
        resource = boto3.resource("dynamodb", endpoint_url=self.dynamodb.meta.endpoint_url)
        with (
            resource.Table(self.table).batch_writer() as table,
            resource.Table(self.name_table).batch_writer() as names,
        ):
            for number, key in enumerate(keys):
                event = create_event(
                    bucket=bucket, key=key, user=user, size=size, moment=START, sequence=number
                )
                entry = entry_item(event, None, placement)
                if entries:
                    table.put_item(Item=entry)
                    self.live[(bucket, key)] = entry
                names.put_item(Item=key_item(entry, ""))

    def reader(self, placement: ShardPlacement, executor: ThreadPoolExecutor | None = None) -> FolderReader:
        # A resource's client: it takes boto3's condition objects, as the search's does.
        client = boto3.resource("dynamodb", endpoint_url=self.dynamodb.meta.endpoint_url).meta.client
        return FolderReader(
            NameReader(client, self.table, self.name_table, placement=placement, executor=executor)
        )


def follow(
    reader: FolderReader, query: NameQuery, limit: int
) -> tuple[list[str], list[str], list[FolderPage]]:
    """Every key and sub-folder of `query` in the order answered, and the pages."""
    keys: list[str] = []
    folders: list[str] = []
    pages: list[FolderPage] = []
    position = None
    for _ in range(10_000):
        page = reader.list_files(query, limit=limit, position=position)
        pages.append(page)
        assert len(page.items) + len(page.common_prefixes or []) <= limit
        assert page.round_trips <= PAGE_ROUNDS
        keys += [item[schema.OBJECT_KEY] for item in page.items]
        folders += page.common_prefixes or []
        position = page.next_position
        if position is None:
            return keys, folders, pages
    raise AssertionError("the list never ended")


def truth(keys: Sequence[str], prefix: str, delimiter: str | None, ascending: bool) -> tuple[list, list]:
    files: list[str] = []
    folders: list[str] = []
    for key in sorted(keys, reverse=not ascending):
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :]
        if delimiter is not None and delimiter in rest:
            folder = prefix + rest[: rest.index(delimiter) + 1]
            if folder not in folders:
                folders.append(folder)
        else:
            files.append(key)
    return files, folders


@pytest.fixture(
    scope="module", params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)]
)
def engine(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "dynamodb_local":
        local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        yield local.endpoint_url
    else:
        yield None


@pytest.fixture
def tables(engine: str | None) -> Iterator[Tables]:
    suffix = uuid.uuid4().hex[:8]
    table, name_table = f"FileMetaData-{suffix}", f"FileNameIndex-{suffix}"
    with mock_aws():
        dynamodb = boto3.client("dynamodb", endpoint_url=engine, region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(table))
        dynamodb.create_table(**schema.create_name_table_request(name_table))
        for name in (table, name_table):
            dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
        try:
            yield Tables(dynamodb, table, name_table)
        finally:
            dynamodb.delete_table(TableName=table)
            dynamodb.delete_table(TableName=name_table)


# -- a sub-folder of 20,000 keys ---------------------------------------------------------------------

BIG_KEYS = [
    "top/a.txt",
    "top/b.txt",
    *(f"top/big/{number:05d}.txt" for number in range(BIG)),
    "top/c.txt",
    "top/d.txt",
]


@pytest.mark.slow
@pytest.mark.parametrize("shard_count", [1, 4])
def test_a_page_jumps_over_a_big_sub_folder(tables: Tables, shard_count: int) -> None:
    """A page of the folder answers its files and the 20,000-key sub-folder in one page, each shard
    reading the sub-folder once (one Query's worth), in each order."""
    placement = ShardPlacement(bucket_shards=shard_count)
    tables.put("bucket", BIG_KEYS, placement)
    with ThreadPoolExecutor(4) as executor:
        reader = tables.reader(placement, executor)
        for ascending in (True, False):
            query = NameQuery(
                listing=BucketQuery(bucket="bucket"), prefix="top/", delimiter="/", ascending=ascending
            )
            keys, folders, pages = follow(reader, query, 100)
            assert (keys, folders) == truth(BIG_KEYS, "top/", "/", ascending)
            assert len(pages) == 1
            page = pages[0]
            # The page plus one Query's worth (at most the page) per shard and round.
            assert page.keys_read <= 5 + 100 * shard_count * PAGE_ROUNDS
            assert page.keys_read < 1000
            assert page.round_trips <= 3  # a round, the jump's round, the entries


def test_a_page_reads_the_page_and_one_query_per_shard_and_round(tables: Tables) -> None:
    """Pages of 10 over the big sub-folder's neighbours: each page reads no more than its bound."""
    placement = ShardPlacement(bucket_shards=2)
    keys = [f"top/f{number:03d}.txt" for number in range(40)] + [f"top/sub/{n:04d}" for n in range(1500)]
    tables.put("bucket", keys, placement)
    reader = tables.reader(placement)
    for ascending in (True, False):
        query = NameQuery(
            listing=BucketQuery(bucket="bucket"), prefix="top/", delimiter="/", ascending=ascending
        )
        found, folders, pages = follow(reader, query, 10)
        assert (found, folders) == truth(keys, "top/", "/", ascending)
        for page in pages:
            answered = len(page.items) + len(page.common_prefixes or [])
            assert page.keys_read <= answered + 10 * 2 * PAGE_ROUNDS


# -- random trees, several shards, both orders: brute force -----------------------------------------

SEGMENTS = ["a", "b", "ab", "a b", "ä", "z", "a.txt", "b.txt", "x.pdf"]


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """(live keys, keys whose entries are gone, keys of a second user) under one root."""
    paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join)
    extra = st.sampled_from(["", "/"])  # folder placeholders end with "/"
    keys = draw(st.lists(st.tuples(paths, extra).map("".join), min_size=0, max_size=30, unique=True))
    flags = draw(
        st.lists(
            st.sampled_from(["live", "live", "live", "dead", "other"]), min_size=len(keys), max_size=len(keys)
        )
    )
    pick = lambda flag: [key for key, f in zip(keys, flags, strict=True) if f == flag]  # noqa: E731
    return pick("live"), pick("dead"), pick("other")


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tree=trees(),
    prefix=st.sampled_from(["", "a/", "a", "a/b/", "ä/"]),
    delimiter=st.sampled_from([None, "/"]),
    limit=st.sampled_from([1, 2, 3, 7, 100]),
    shard_count=st.sampled_from([1, 3, 8]),
    by_user=st.booleans(),
    ext=st.sampled_from([None, None, "txt"]),
)
def test_random_trees_page_to_the_brute_force_truth(
    tables: Tables,
    tree: tuple[list[str], list[str], list[str]],
    prefix: str,
    delimiter: str | None,
    limit: int,
    shard_count: int,
    by_user: bool,
    ext: str | None,
) -> None:
    live, dead, other = tree
    root = f"r{uuid.uuid4().hex[:8]}/"
    bucket = f"b-{root[1:-1]}"
    user = f"u{root[1:-1]}"
    placement = ShardPlacement(bucket_shards=shard_count, hot_users={user: 2})
    tables.put(bucket, [root + key for key in live], placement, user=user)
    tables.put(bucket, [root + key for key in dead], placement, user=user, entries=False)
    tables.put(bucket, [root + key for key in other], placement, user=f"{user}x")
    # A stale key item in a second shard (left by a shard move): answered once.
    if live:
        tables.put(bucket, [root + live[0]], ShardPlacement(bucket_shards=1), user=user, entries=False)
    scope = UserQuery(user=user) if by_user else BucketQuery(bucket=bucket)
    expected_keys = [root + key for key in live] + ([] if by_user else [root + key for key in other])
    if ext is not None:
        expected_keys = [key for key in expected_keys if key.rsplit("/", 1)[-1].endswith("." + ext)]
    reader = tables.reader(placement)
    for ascending in (True, False):
        query = NameQuery(
            listing=scope, prefix=root + prefix, delimiter=delimiter, ext=ext, ascending=ascending
        )
        keys, folders, _ = follow(reader, query, limit)
        assert (keys, folders) == truth(expected_keys, root + prefix, delimiter, ascending)


def test_a_key_equal_to_the_prefix_ends_the_list_in_either_order(tables: Tables) -> None:
    """A key that is the prefix itself (a folder marker, `f/ä/`) is the list's lowest: read last going
    down, the shard is done. It resumed below the prefix, a cursor the next page refused as outside the
    query (found by the random trees above)."""
    placement = ShardPlacement(bucket_shards=1)
    for files in range(1, 9):
        bucket = f"bucket{files}"
        keys = ["f/ä/", *(f"f/ä/{chr(ord('a') + n)}" for n in range(files))]
        # Keys of the bucket just below the prefix, so that a Query stopping at it says more follow.
        tables.put(bucket, [*keys, "f/ä", "f/a/1", "e"], placement)
        reader = tables.reader(placement)
        for ascending in (True, False):
            query = NameQuery(listing=BucketQuery(bucket=bucket), prefix="f/ä/", ascending=ascending)
            for limit in (1, 2, 3):
                found, folders, _ = follow(reader, query, limit)
                assert (found, folders) == truth(keys, "f/ä/", None, ascending)


# -- cursors ---------------------------------------------------------------------------------------


def test_a_cursor_after_any_count_goes_on_from_there(tables: Tables) -> None:
    """`cursor_after(n)` of a page continues just after its n-th item: the rest of the list follows."""
    placement = ShardPlacement(bucket_shards=3)
    keys = [f"f/{name}" for name in ("a", "b/1", "b/2", "c", "d/x/y", "e", "g", "h/", "i")]
    tables.put("bucket", keys, placement)
    reader = tables.reader(placement)
    for ascending in (True, False):
        query = NameQuery(
            listing=BucketQuery(bucket="bucket"), prefix="f/", delimiter="/", ascending=ascending
        )
        all_files, all_folders = truth(keys, "f/", "/", ascending)
        page = reader.list_files(query, limit=100)
        assert [item[schema.OBJECT_KEY] for item in page.items] == all_files
        for count in range(1, len(page.items) + 1):
            kept = [item[schema.OBJECT_KEY] for item in page.items[:count]]
            folders = page.prefixes_before(count)
            position = page.cursor_after(count)
            rest, rest_folders = follow_from(reader, query, position)
            assert kept + rest == all_files
            assert folders + rest_folders == all_folders
        with pytest.raises(ValueError, match="no cursor after"):
            page.cursor_after(0)


def follow_from(reader: FolderReader, query: NameQuery, position: dict[str, Any]) -> tuple[list, list]:
    keys: list[str] = []
    folders: list[str] = []
    while position is not None:
        page = reader.list_files(query, limit=2, position=position)
        keys += [item[schema.OBJECT_KEY] for item in page.items]
        folders += page.common_prefixes or []
        position = page.next_position  # type: ignore[assignment]
    return keys, folders


@pytest.mark.parametrize(
    "position",
    [
        {"k": "elsewhere/a", "f": None},
        {"k": 5, "f": None},
        {"merge": {"shards": [None], "last": {"v": "elsewhere/a", "k": "elsewhere/a"}}},
        {"merge": {"shards": [[5]], "last": None}},
        {"merge": {"shards": [None] * 4, "last": None}},
    ],
)
def test_a_cursor_of_another_list_is_refused(tables: Tables, position: dict[str, Any]) -> None:
    reader = tables.reader(ShardPlacement(bucket_shards=2))
    query = NameQuery(listing=BucketQuery(bucket="bucket"), prefix="f/", delimiter="/")
    with pytest.raises(InvalidStartKey):
        reader.list_files(query, limit=10, position=position)


def test_a_delimiter_of_two_characters_is_refused(tables: Tables) -> None:
    reader = tables.reader(ShardPlacement())
    with pytest.raises(ValueError, match="one character"):
        reader.list_files(NameQuery(listing=BucketQuery(bucket="b"), delimiter="//"), limit=10)


# -- the key bounds ---------------------------------------------------------------------------------


@given(st.text(min_size=1, max_size=6))
def test_key_after_and_before_are_the_neighbours(key: str) -> None:
    following = key_after(key)
    assert following is not None
    assert following > key
    preceding = key_before(key)
    assert preceding is not None
    assert preceding < key
    assert top_key(key).startswith(key)
    assert len(top_key(key).encode("utf-8", "surrogatepass")) <= 1024


@pytest.mark.parametrize("limit", [1, 2, 100])
def test_a_sub_folder_is_answered_only_for_a_live_matching_key(tables: Tables, limit: int) -> None:
    """The keys a page probes first are gone (or do not match): the sub-folder is answered once a kept
    key is found further in; a sub-folder of gone keys only is not answered."""
    placement = ShardPlacement(bucket_shards=2)
    dead = [f"p/mixed/{number:02d}.txt" for number in (*range(9), *range(91, 100))]
    tables.put("bucket", [*dead, *(f"p/gone/{n}.txt" for n in range(5))], placement, entries=False)
    tables.put("bucket", ["p/mixed/50.txt", "p/z.txt"], placement)
    tables.put("bucket", ["p/mixed/51.bin", "p/mixed/52.bin"], placement)
    reader = tables.reader(placement)
    for ascending in (True, False):
        for ext in (None, "txt"):
            query = NameQuery(
                listing=BucketQuery(bucket="bucket"), prefix="p/", delimiter="/", ext=ext, ascending=ascending
            )
            assert follow(reader, query, limit)[:2] == (["p/z.txt"], ["p/mixed/"])


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_keys_plan_position_goes_on_where_it_stopped(tables: Tables, limit: int) -> None:
    """A position the `NameReader` keys plan made (a list begun before) is continued to the list's end,
    each file and sub-folder once."""
    placement = ShardPlacement(bucket_shards=3)
    keys = [f"f/{name}" for name in ("a", "b/1", "b/2", "c", "d/x/y", "d/z", "e", "h/", "i")]
    tables.put("bucket", keys, placement)
    reader = tables.reader(placement)
    names = NameReader(reader._names.client, tables.table, tables.name_table, placement=placement)
    for ascending in (True, False):
        query = NameQuery(
            listing=BucketQuery(bucket="bucket"), prefix="f/", delimiter="/", ascending=ascending
        )
        # 0.4's keys plan (what answered folder lists before FolderReader), as it left a list begun then.
        first = names._list_keys(query, limit, None, name_reader._Counter())
        assert first.next_position is not None
        assert set(first.next_position) == {"k", "f"}
        rest, rest_folders = follow_from(reader, query, first.next_position)
        found = [item[schema.OBJECT_KEY] for item in first.items] + rest
        assert (found, (first.common_prefixes or []) + rest_folders) == truth(keys, "f/", "/", ascending)
