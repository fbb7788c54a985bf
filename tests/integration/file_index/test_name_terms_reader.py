"""The terms plan of a name list (`file_index.read.term_reader` through `NameReader`), on moto and DynamoDB
Local.

Random names (ASCII, accents, CJK) in a bucket of several shards and a hot user of several, overwritten,
deleted and re-created between pages: paging through shows every file that stayed live and matching exactly
once, each answer live when read, in the list's order. Before the bucket's name index is complete a list is
refused; cursors go on across a page cut short (`cursor_after`).
"""

from __future__ import annotations

import itertools
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from file_index.read.file_queries import BucketQuery, InvalidStartKey, UserQuery
from file_index.read.name_query import NameQuery
from file_index.rules import schema
from file_index.rules.name_items import term_items, time_term
from file_index.rules.name_terms import folded_words, query_words
from file_index.rules.placement import ShardPlacement
from file_index.store.name_index_flag import ALL_BUCKETS, TERMS_COMPLETE, NameIndexIncomplete, flag_key
from tests.integration.file_index.terms_world import Engine, World, engine, pages

__all__ = ["engine"]

PIECES = (
    "IMG",
    "img",
    "Café",
    "résumé",
    "請求書",
    "東京",
    "report",
    "Q3",
    "final",
    "Straße",
    "2024",
    "ß",
    "x",
)
SEPARATORS = ("_", "-", " ", ".", "")
EXTENSIONS = ("jpg", "pdf", "tar.gz", "TXT")
_buckets = itertools.count()
_executor = ThreadPoolExecutor(max_workers=4)


def world_of(engine: Engine, **extra: Any) -> World:
    """A bucket of 3 shards, and users of its own: anna, and bot, hot (2 shards)."""
    number = next(_buckets)
    users = (f"anna{number}", f"bot{number}")
    placement = ShardPlacement(bucket_shards=3, hot_users={users[1]: 2})
    return World(engine, f"bucket-{number}", placement, users=users, **extra)


@st.composite
def file_names(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3))
    joined = "".join(part + draw(st.sampled_from(SEPARATORS)) for part in parts[:-1]) + parts[-1]
    return f"{joined}.{draw(st.sampled_from(EXTENSIONS))}"


def key_of(user: str, index: int, name: str) -> str:
    return f"{user}/{index}/{name}"


def random_operations(rng: random.Random, keys: list[tuple[str, str]]) -> list[tuple[str, int, str | None]]:
    """Writes between pages: ("put", key index, new name or None for the same), ("delete", key index).

    Made from a seed the example draws once: a draw per page would make the number of draws depend on the
    page count, which the keys' shards change from run to run (hypothesis then calls the test flaky).
    """
    return [
        (
            rng.choice(["put", "put", "delete"]),
            rng.randrange(len(keys)),
            rng.choice([None, random_file_name(rng)]),
        )
        for _ in range(rng.randint(0, 4))
    ]


def random_file_name(rng: random.Random) -> str:
    parts = [rng.choice(PIECES) for _ in range(rng.randint(1, 3))]
    joined = "".join(part + rng.choice(SEPARATORS) for part in parts[:-1]) + parts[-1]
    return f"{joined}.{rng.choice(EXTENSIONS)}"


def apply(world: World, keys: list[tuple[str, str]], ops: list[tuple[str, int, str | None]]) -> set[str]:
    """Apply writes; the keys they touched (overwritten, deleted, re-created, or new)."""
    touched = set()
    for kind, index, name in ops:
        user, key = keys[index]
        if kind == "delete":
            if key in world.entries:
                world.delete(key)
        elif name is None or key not in world.entries:
            world.put(key, user=user, size=100 + index)
        else:
            # A new key under the same index: another name.
            key = key_of(user, index + 1000 * len(keys), name)
            keys.append((user, key))
            world.put(key, user=user, size=100 + index)
        touched.add(key)
    return touched


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_paging_shows_each_live_matching_file_once_in_order(engine: Engine, data: st.DataObject) -> None:
    world = world_of(engine)
    names = data.draw(st.lists(file_names(), min_size=1, max_size=25), label="names")
    keys: list[tuple[str, str]] = []
    for index, name in enumerate(names):
        user = data.draw(st.sampled_from(world.users))
        key = key_of(user, index, name)
        keys.append((user, key))
        # A tie now and then: files of one upload time are ordered by key digest.
        world.put(key, user=user, size=100 + 7 * index, date=world.now(same=data.draw(st.booleans())))
    known = sorted({word for name in names for word in folded_words(name)})
    word = data.draw(st.sampled_from(known), label="word")
    query_words: tuple[str, ...] = (word[: data.draw(st.integers(1, len(word)))],)
    if data.draw(st.booleans()):
        query_words += (data.draw(st.sampled_from(known)),)
    listing: UserQuery | BucketQuery
    if data.draw(st.booleans()):
        listing = UserQuery(user=data.draw(st.sampled_from(world.users)))
    else:
        listing = BucketQuery(bucket=world.bucket)
    if data.draw(st.booleans()):
        dates = sorted(entry[schema.UPLOAD_DATE] for entry in world.entries.values())
        listing = replace(listing, start=data.draw(st.sampled_from(dates)))
    ascending = data.draw(st.booleans())
    query = NameQuery(
        listing=listing,
        words=query_words,
        ext=data.draw(st.none() | st.sampled_from(["jpg", "gz"])),
        ascending=ascending,
    )
    limit = data.draw(st.sampled_from([1, 2, 3, 7, 100]))
    reader = world.reader(executor=_executor)

    stable = set(world.truth(query))  # live and matching from the start to the end, unless touched
    touched: set[str] = set()
    answered: list[tuple[str, str]] = []
    position = None
    writes_seed = data.draw(st.integers(0, 2**32 - 1), label="writes seed")
    for page_number in range(1000):
        page = reader.list_files(query, limit=limit, position=position)
        live_now = set(world.truth(query))
        assert len(page.items) <= limit
        assert page.round_trips <= 4
        for item in page.items:
            key = item[schema.OBJECT_KEY]
            assert key in live_now, "an answer is live and matching when its page is read"
            assert item[schema.UPLOAD_DATE] == world.entries[key][schema.UPLOAD_DATE]
            answered.append((time_term(item[schema.UPLOAD_DATE], key), key))
        position = page.next_position
        if position is None:
            break
        touched |= apply(world, keys, random_operations(random.Random(writes_seed + page_number), keys))
    else:
        raise AssertionError("the list never ended")
    order = [term for term, _ in answered]
    assert order == sorted(order, reverse=not ascending), "in the list's order, never going back"
    seen = [key for _, key in answered]
    for key in stable - touched:
        assert seen.count(key) == 1, f"{key} answered {seen.count(key)} times"
    for key in set(seen) - touched:
        assert seen.count(key) == 1


def test_an_unchanged_list_answers_exactly_the_truth_in_every_page_size(engine: Engine) -> None:
    world = world_of(engine)
    for index in range(40):
        user = world.users[index % 2]
        name = ["IMG_{:03d}.jpg", "Café {}.pdf", "請求書{}.txt", "report_Q3_{}.tar.gz"][index % 4].format(
            index
        )
        world.put(key_of(user, index, name), user=user, size=index, date=world.now(same=index % 5 == 1))
    for query in [
        NameQuery(listing=BucketQuery(bucket=world.bucket), words=("img",)),
        NameQuery(listing=BucketQuery(bucket=world.bucket), words=("cafe",), ascending=True),
        NameQuery(listing=UserQuery(user=world.users[1]), words=("請求",)),
        NameQuery(listing=UserQuery(user=world.users[0]), ext="jpg", ascending=True),
        NameQuery(listing=BucketQuery(bucket=world.bucket), ext="tar.gz"),
        NameQuery(listing=BucketQuery(bucket=world.bucket, min_size=10, max_size=30), words=("report", "q")),
        NameQuery(listing=BucketQuery(bucket=world.bucket, start=world.now(same=True)), words=("i",)),
    ]:
        for limit in (1, 3, 100):
            keys = [
                item[schema.OBJECT_KEY]
                for page in pages(world.reader(), query, limit=limit)
                for item in page.items
            ]
            assert keys == world.truth(query), (query, limit)


def test_a_page_cut_short_goes_on_just_after_its_last_item(engine: Engine) -> None:
    world = world_of(engine)
    for index in range(30):
        world.put(key_of(world.users[0], index, f"IMG_{index}.jpg"), user=world.users[0])
    query = NameQuery(listing=BucketQuery(bucket=world.bucket), words=("img",))
    reader = world.reader(executor=_executor)
    keys: list[str] = []
    position = None
    for cut in itertools.cycle([3, 1, 7]):
        page = reader.list_files(query, limit=10, position=position)
        if len(page.items) <= cut:
            keys += [item[schema.OBJECT_KEY] for item in page.items]
            position = page.next_position
        else:
            short = page.cut(cut)
            assert short.next_position == page.cursor_after(cut)
            keys += [item[schema.OBJECT_KEY] for item in short.items]
            position = short.next_position
        if position is None:
            break
    assert keys == world.truth(query)
    page = reader.list_files(query, limit=10)
    with pytest.raises(ValueError, match="no cursor after 0"):
        page.cursor_after(0)
    with pytest.raises(ValueError, match="no cursor after 11"):
        page.cursor_after(11)


def test_a_name_list_is_refused_until_the_name_index_is_complete(engine: Engine) -> None:
    """A bucket whose name index is not complete (a table of 0.3.0 before `index-names`): its name and
    folder lists are refused, not answered without the files indexed before; once its flag is set they
    answer, exactly."""
    world = world_of(engine)
    for index in range(12):
        world.put(key_of(world.users[0], index, f"IMG_{index}.jpg"), user=world.users[0])
    query = NameQuery(listing=BucketQuery(bucket=world.bucket), words=("img",))
    folder = NameQuery(listing=BucketQuery(bucket=world.bucket), prefix=f"{world.users[0]}/", delimiter="/")
    before = world.reader(terms=None, state_client=engine.client)
    for refused in (query, folder):
        with pytest.raises(NameIndexIncomplete, match=f"index-names --bucket {world.bucket}"):
            before.list_files(refused, limit=5)
    engine.client.put_item(
        TableName=engine.name_table,
        Item={
            **{name: {"S": value} for name, value in flag_key(world.bucket).items()},
            TERMS_COMPLETE: {"BOOL": True},
        },
    )
    # (A reader keeps an unset flag it read for a minute: this one is another.)
    after = world.reader(terms=None, state_client=engine.fresh_client())
    found = [item[schema.OBJECT_KEY] for page in pages(after, query, limit=5) for item in page.items]
    assert found == world.truth(query)
    assert after.list_files(folder, limit=100).common_prefixes


def test_the_table_flag_completes_a_users_list(engine: Engine) -> None:
    world = world_of(engine)
    world.put(key_of(world.users[0], 0, "IMG_0.jpg"), user=world.users[0])
    query = NameQuery(listing=UserQuery(user=world.users[0]), words=("img",))
    key = {name: {"S": value} for name, value in flag_key(ALL_BUCKETS).items()}
    engine.client.put_item(TableName=engine.name_table, Item={**key, TERMS_COMPLETE: {"BOOL": True}})
    try:
        reader = world.reader(terms=None, state_client=engine.fresh_client(), bucket=world.bucket)
        page = reader.list_files(query, limit=5)
    finally:
        engine.client.delete_item(TableName=engine.name_table, Key=key)
    assert [item[schema.OBJECT_KEY] for item in page.items] == world.truth(query)
    assert page.round_trips >= 2  # the terms plan counts its round trips: Queries, then the entries


def test_a_stale_item_is_not_answered(engine: Engine) -> None:
    world = world_of(engine)
    key = key_of(world.users[0], 0, "IMG_0.jpg")
    first = world.put(key, user=world.users[0])
    world.put(key, user=world.users[0], size=5)
    # The old upload time's items, as a writer that stopped between its writes leaves them.
    table = engine.resource.Table(engine.name_table)
    for item in term_items(first, ""):
        table.put_item(Item=item)
    query = NameQuery(listing=BucketQuery(bucket=world.bucket), words=("img",))
    found = [item for page in pages(world.reader(), query, limit=1) for item in page.items]
    assert [(item[schema.OBJECT_KEY], item[schema.SIZE]) for item in found] == [(key, 5)]


@pytest.mark.parametrize(
    "position",
    [
        {"terms": "x"},
        {"terms": {"shards": [None] * 9, "last": None}},
        {"terms": {"shards": [["1999-01-01T00:00:00.000Z"]], "last": None}},
        {"v": 3, "k": "a"},
        {"other": 1},
    ],
)
def test_a_cursor_that_is_not_the_lists_is_refused(engine: Engine, position: dict[str, Any]) -> None:
    world = world_of(engine)
    query = NameQuery(
        listing=BucketQuery(bucket=world.bucket, start="2000-01-01T00:00:00.000Z"), words=("img",)
    )
    with pytest.raises(InvalidStartKey):
        world.reader().list_files(query, limit=5, position=position)


@pytest.mark.parametrize(
    ("q", "found"),
    [
        ("mp3", {"song.mp3", "MP3_mix.wav"}),
        ("q3", {"reportQ3final.xlsx"}),
        ("資料", {"会議資料.pptx"}),
        ("告書", {"報告書2024.pdf"}),
        ("がっこう", {"がっこう.txt"}),
        ("ｶﾀｶﾅ", {"カタカナ.txt"}),
        ("ＡＢＣ", {"abc.txt"}),
        ("cafe", {"Café.txt"}),
    ],
)
def test_a_query_word_finds_its_pieces_consecutive_as_typed_in_every_script(
    engine: Engine, q: str, found: set[str]
) -> None:
    """`q` as the API reads it (`NameQuery.q`): `mp3` is one word, not `mp` and `3` anywhere in the name."""
    world = world_of(engine)
    every = [
        "song.mp3",
        "MP3_mix.wav",
        "MP4_clip_3.mov",
        "reportQ3final.xlsx",
        "Q1_report_30.pdf",
        "会議資料.pptx",
        "報告書2024.pdf",
        "がっこう.txt",
        "かっこう.txt",
        "カタカナ.txt",
        "abc.txt",
        "Café.txt",
    ]
    for index, name in enumerate(every):
        world.put(key_of(world.users[0], index, name), user=world.users[0])
    for scope in (BucketQuery(bucket=world.bucket), UserQuery(user=world.users[0])):
        query = NameQuery(listing=scope, words=tuple(query_words(q)), q=q)
        answered = [
            item[schema.OBJECT_KEY].rsplit("/", 1)[-1]
            for page in pages(world.reader(), query, limit=5)
            for item in page.items
        ]
        assert sorted(answered) == sorted(found), (q, scope)
