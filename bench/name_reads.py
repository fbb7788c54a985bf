"""Measure 16: finding files by name: items read per item returned, Queries per page, and write cost.

The data: `objects` uploads to one bucket by `USERS` uploaders, named as people's files are: camera
files (`IMG_20170412_093015.jpg`), documents of two or three words drawn from a vocabulary of
`VOCABULARY` words with Zipf frequencies and a year (`invoice_march_2017.pdf`), screenshots
(`Screenshot 2017-04-12 at 09.30.15.png`) and opaque ids (`3f9a0c12be77.bin`). Each name's items are
the real `file_index.names.name_items` of the writer's own entry (`bench.entries.entry`) under the
default layout (its bucket shards).

A words-plan page (`file_index.name_reader`) reads, whatever its `limit`: every item of the looked-up
word in every shard (a key condition: exactly the items whose word starts with it), then the entries of
the distinct keys whose name has every query word (BatchGetItem). So its reads are counted from the data,
exactly: `items read` = those items + those entries; `per item returned` divides the reads of all the
pages of the list (each page reads the same) by the files it returns. Queries per page: one per shard
per 1 MB of items (at their mean stored size), plus one BatchGetItem per 100 entries. Read units: half a
unit per started 4 KB of a Query's items, half a unit per entry (each rounded up to 4 KB).

`cross_check` compares the model with the real reader on moto: for each query, the reader's
`scanned_count` of one page must equal the model's items read.

Write cost: a new key writes one item per distinct word of its name and one for the key, each again in
the user GSI (the key has a user); write units at DynamoDB's 1 KB rule. An overwrite writes none.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import aws, deployment
from bench.backfill_batch import PRICES
from bench.entries import create_event, entry, item_bytes, log_uniform_size
from bench.report import Row, progress
from file_index import schema
from file_index.name_reader import MAX_WORD_CANDIDATES, ORDER_UPLOAD_DATE, NameQuery, NameReader
from file_index.names import MAX_INDEXED_WORD, NameIndex, indexed_words, matches_words, name_items, words
from file_index.placement import ShardPlacement
from file_index.reader import BucketQuery, UserQuery

USERS = 100
USER = "user0007"
VOCABULARY = 3000
LIMIT = 100
PAGE_BYTES = 1024 * 1024
READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024
PER_MILLION = 1_000_000
_SYLLABLES = [
    "in",
    "vo",
    "ice",
    "re",
    "port",
    "mar",
    "ch",
    "bud",
    "get",
    "con",
    "tract",
    "no",
    "tes",
    "de",
    "sign",
    "pla",
    "n",
    "ta",
    "x",
    "me",
    "et",
    "ing",
    "pho",
    "to",
    "sca",
    "le",
    "da",
    "ta",
    "fi",
    "nal",
]
_COMMON = ["report", "invoice", "notes", "final", "draft", "budget", "contract", "meeting", "plan", "scan"]


@dataclass(frozen=True)
class NamedFile:
    key: str
    user: str
    name: str
    size: int
    upload_date: str


@dataclass(frozen=True)
class NameShape:
    name: str
    q: str
    user: bool = False
    recent: bool = False  # uploaded in the last 30 days of the year


SHAPES = (
    NameShape("rare word", "{rare}"),
    NameShape("common word", "report"),
    NameShape("very common word (img)", "img"),
    NameShape("prefix, 1 letter", "i"),
    NameShape("prefix, 2 letters", "in"),
    NameShape("prefix, 3 letters", "inv"),
    NameShape("prefix, 4 letters", "invo"),
    NameShape("two words", "invoice {year}"),
    NameShape("rare word, last 30 days", "{rare}", recent=True),
    NameShape("common word, user", "report", user=True),
    NameShape("prefix, 3 letters, user", "inv", user=True),
)


def vocabulary(rng: random.Random) -> list[str]:
    found: list[str] = list(_COMMON)
    seen = set(found)
    while len(found) < VOCABULARY:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen and len(word) > 3:
            seen.add(word)
            found.append(word)
    return found


def make_files(objects: int, seed: int = 15) -> tuple[list[NamedFile], str]:
    """`objects` files and a rare word of their names (in about 0.05% of them, at least one)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    weights = [1 / rank for rank in range(1, len(vocab) + 1)]
    start = datetime(2017, 1, 1, tzinfo=UTC)
    files: list[NamedFile] = []
    keys: set[str] = set()
    for n in range(objects):
        moment = start + timedelta(seconds=rng.randrange(365 * 86400))
        roll = rng.random()
        if roll < 0.35:
            name = f"IMG_{moment:%Y%m%d_%H%M%S}.jpg"
        elif roll < 0.75:
            chosen = rng.choices(vocab, weights, k=rng.randint(2, 3))
            name = "_".join(chosen) + f"_{moment:%Y}.{rng.choice(['pdf', 'docx', 'xlsx', 'txt'])}"
        elif roll < 0.9:
            name = f"Screenshot {moment:%Y-%m-%d} at {moment:%H.%M.%S}.png"
        else:
            name = f"{rng.getrandbits(48):012x}.bin"
        user = f"user{rng.randrange(USERS):04d}"
        key = f"{user}/{name}"
        if key in keys:
            key = f"{user}/{n}-{name}"
            name = key.split("/", 1)[1]
        keys.add(key)
        upload_date = moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        files.append(NamedFile(key, user, name, log_uniform_size(rng), upload_date))
    used: dict[str, int] = {}
    for file in files:
        for word in set(words(file.name)):
            used[word] = used.get(word, 0) + 1
    target = max(1, objects // 2000)  # about 0.05% of the files
    rare = min((word for word in vocab if word in used), key=lambda word: (abs(used[word] - target), word))
    return files, rare


@dataclass
class WordIndex:
    """Every (indexed word, file number) of the files, sorted: a word prefix is one bisect range."""

    pairs: list[tuple[str, int]]

    @classmethod
    def of(cls, files: Sequence[NamedFile]) -> WordIndex:
        pairs = [(word, number) for number, file in enumerate(files) for word in indexed_words(file.name)]
        pairs.sort()
        return cls(pairs)

    def starting_with(self, prefix: str) -> list[int]:
        start = bisect_left(self.pairs, (prefix, -1))
        found = []
        for word, number in self.pairs[start:]:
            if not word.startswith(prefix):
                break
            found.append(number)
        return found


@dataclass(frozen=True)
class NameCost:
    items: int  # name items the page reads (the looked-up word's, every shard)
    entries: int  # entries read (candidates whose name has every word)
    matches: int  # files the whole list returns
    queries: int  # DynamoDB requests of one page
    read_units: float  # of one page
    scanned: int | None = None  # the scan plan: entries of the user's upload-time index read by the list

    @property
    def plan(self) -> str:
        return "words" if self.scanned is None else "scan"

    @property
    def per_page(self) -> int:
        return self.items + self.entries

    @property
    def per_item_returned(self) -> float | None:
        if self.matches == 0:
            return None
        if self.scanned is not None:
            return (self.items + self.scanned) / self.matches
        pages = max(1, math.ceil(self.matches / LIMIT))
        return pages * self.per_page / self.matches


def model(
    files: Sequence[NamedFile], index: WordIndex, shape: NameShape, rare: str, shards: int, item_size: float
) -> NameCost:
    query_words = words(shape.q.format(rare=rare, year="2017"))
    lookup = max(query_words, key=len)[:MAX_INDEXED_WORD]
    numbers = index.starting_with(lookup)
    if shape.user:
        numbers = [number for number in numbers if files[number].user == USER]
    candidates = sorted({number for number in numbers if matches_words(files[number].name, query_words)})
    matches = [
        number for number in candidates if not shape.recent or files[number].upload_date >= "2017-12-02"
    ]
    if shape.user and len(numbers) > MAX_WORD_CANDIDATES:
        # The scan plan: the capped read of the word's items, then the user's upload-time index in order,
        # each entry read once over the whole list (a bounded page may read a little ahead).
        user_files = sum(
            1
            for file in files
            if file.user == USER and (not shape.recent or file.upload_date >= "2017-12-02")
        )
        return NameCost(MAX_WORD_CANDIDATES + 1, 0, len(matches), 1, 0.0, scanned=user_files)
    item_pages = max(shards, math.ceil(len(numbers) * item_size / PAGE_BYTES) + shards - 1)
    gets = math.ceil(len(candidates) / 100)
    read_units = 0.5 * max(shards, math.ceil(len(numbers) * item_size / READ_UNIT_BYTES)) + 0.5 * len(
        candidates
    )
    return NameCost(len(numbers), len(candidates), len(matches), item_pages + gets, read_units)


def _entry(file: NamedFile, layout: ShardPlacement, sequence: int) -> dict[str, Any]:
    event = create_event(
        bucket=aws.BUCKET,
        key=file.key,
        user=file.user,
        size=file.size,
        moment=datetime.fromisoformat(file.upload_date.replace("Z", "+00:00")),
        sequence=sequence,
    )
    return entry(event, event.order_key, layout)


def write_cost(files: Sequence[NamedFile], layout: ShardPlacement) -> tuple[float, float]:
    """Mean name items and write units per new key."""
    items = units = 0
    for number, file in enumerate(files):
        made = name_items(_entry(file, layout, number), "")
        items += len(made)
        for item in made:
            size = math.ceil(item_bytes(item) / WRITE_UNIT_BYTES)
            units += size * (2 if schema.NAME_USER in item else 1)
    return items / len(files), units / len(files)


def busiest_partitions(
    files: Sequence[NamedFile], layout: ShardPlacement, rate: int
) -> tuple[float, str, float]:
    """Write units per second on the busiest name partition of the table and of the user GSI, when the
    `files` arrive at `rate` new keys a second (each partition value's share of the items, times the rate)."""
    table: dict[str, int] = {}
    users: dict[str, int] = {}
    for number, file in enumerate(files):
        for item in name_items(_entry(file, layout, number), ""):
            units = math.ceil(item_bytes(item) / WRITE_UNIT_BYTES)
            table[item[schema.NAME_SCOPE]] = table.get(item[schema.NAME_SCOPE], 0) + units
            if schema.NAME_USER in item:
                users[item[schema.NAME_USER]] = users.get(item[schema.NAME_USER], 0) + units
    scope, units = max(table.items(), key=lambda pair: pair[1])
    return units * rate / len(files), scope, max(users.values()) * rate / len(files)


def cross_check(files: Sequence[NamedFile], rare: str, layout: ShardPlacement) -> int:
    """Shapes whose reader count equals the model's (AssertionError otherwise)."""
    import boto3
    from moto import mock_aws

    index = WordIndex.of(files)
    with aws.fake_credentials(), mock_aws():
        client = boto3.client("dynamodb", region_name=aws.REGION)
        client.create_table(**schema.create_table_request(schema.TABLE_NAME))
        client.create_table(**schema.create_name_table_request(schema.NAME_TABLE_NAME))
        table = boto3.resource("dynamodb", region_name=aws.REGION).Table(schema.TABLE_NAME)
        names = NameIndex(client, schema.NAME_TABLE_NAME)
        with table.batch_writer() as writer:
            for number, file in enumerate(files):
                item = _entry(file, layout, number)
                writer.put_item(Item=item)
                names.put_entry(item, "")
        reader = NameReader(table.meta.client, schema.TABLE_NAME, schema.NAME_TABLE_NAME, layout=layout)
        checked = 0
        for shape in SHAPES:
            scope: UserQuery | BucketQuery
            start = "2017-12-02T00:00:00.000Z" if shape.recent else None
            scope = (
                UserQuery(user=USER, start=start)
                if shape.user
                else BucketQuery(bucket=aws.BUCKET, start=start)
            )
            query = NameQuery(
                scope=scope,
                words=tuple(words(shape.q.format(rare=rare, year="2017"))),
                order_by=ORDER_UPLOAD_DATE,
            )
            page = reader.list_files(query, limit=LIMIT)
            expected = model(files, index, shape, rare, layout.bucket_shards, 1.0)
            assert page.scanned_count == expected.per_page, (shape.name, page.scanned_count, expected)
            assert len(page.items) == min(LIMIT, expected.matches), (shape.name, len(page.items), expected)
            checked += 1
        return checked


def run(*, sizes: Sequence[int], check_objects: int) -> list[Row]:
    layout = deployment.shard_placement()
    rows: list[Row] = []
    if check_objects:
        progress(f"name reads: cross-check of the model with the reader on moto, {check_objects} files")
        files, rare = make_files(check_objects)
        checked = cross_check(files, rare, layout)
        rows.append(Row("16. name reads: model = reader (moto)", "shapes", checked, None, "", note="exact"))
    for objects in sizes:
        progress(f"name reads: {objects:,} files")
        files, rare = make_files(objects)
        index = WordIndex.of(files)
        sample = [_entry(file, layout, n) for n, file in enumerate(files[:2000])]
        item_size = sum(item_bytes(item) for e in sample for item in name_items(e, "")) / sum(
            len(name_items(e, "")) for e in sample
        )
        for shape in SHAPES:
            cost = model(files, index, shape, rare, layout.bucket_shards, item_size)
            per_item = cost.per_item_returned
            if cost.scanned is not None:
                note = (
                    f"{cost.matches:,} matches; scan plan: {cost.items:,} name items, then "
                    f"{cost.scanned:,} entries of the user's upload-time index over the whole list"
                )
            else:
                note = (
                    f"{cost.matches:,} matches; words plan: a page reads {cost.items:,} name items + "
                    f"{cost.entries:,} entries in {cost.queries} requests, {cost.read_units:,.1f} RCU"
                )
            # A list with no match still reads: its figure is the items its one page reads.
            unit = "items read/item returned" if per_item is not None else "items read (no match)"
            ours = round(per_item, 2) if per_item is not None else cost.per_page + (cost.scanned or 0)
            rows.append(
                Row(
                    f"16. name '{shape.q.format(rare=rare, year='2017')}' ({shape.name}), {objects:,} files",
                    unit,
                    ours,
                    None,
                    "",
                    note=note,
                )
            )
    files, _ = make_files(5000)
    rate = 10_000
    busiest, scope, busiest_user = busiest_partitions(files, layout, rate)
    rows.append(
        Row(
            f"16. name index: busiest partition at {rate:,} new keys/s",
            "WCU/s",
            round(busiest),
            1000,
            "one partition's limit",
            note=f"{scope!r}; the user GSI's busiest: {busiest_user:,.0f} WCU/s (one uploader of {USERS}); "
            f"{layout.bucket_shards} bucket shards",
        )
    )
    items, units = write_cost(files, layout)
    dollars = units * PRICES.dynamodb_per_million_write_units
    rows.append(
        Row(
            "16. name index writes per million new keys",
            "WCU/million",
            units * PER_MILLION,
            None,
            "",
            note=f"{items:.2f} items per new key (distinct words + the key), each in the table and the user "
            f"GSI; ${dollars:,.2f} per million new keys; an overwrite writes none",
        )
    )
    return rows
