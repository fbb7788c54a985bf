"""Measure 16: finding files by name, before (the words plan) and after (the terms plan), and write cost.

The data is `bench.name_data`'s (Latin and CJK names). Every shape of `SHAPES` is counted at every size:

- **before**, the words plan of 0.4 (`file_index.name_reader`): every page reads every item of the
  looked-up word in every shard (a key condition: the items whose word starts with it), then the entries
  of every candidate whose name has every word, and sorts them. Its counts come from the data: `items
  read per item returned` is the whole list's reads (each page reads the same) over what it returns; a
  page's round trips are its longest shard's Queries (one per 1 MB of items) then the BatchGetItems
  (100 entries each, `read_threads` at once); it holds every candidate's entry at once. A user's word with
  more than `MAX_WORD_CANDIDATES` items takes the scan plan (the user's upload-time index, each entry read
  once over the list).
- **after**, the terms plan (`bench.name_terms_model`): pages read through their cursors, up to
  `MAX_PAGES` of them: items read per item returned over those pages, the deepest page in round trips,
  the most items a page holds.

Sizes up to `SAMPLE` files are counted on the materialised files, exactly. Larger ones are scaled from
the `SAMPLE`-file data set: the before counts multiplied by size / `SAMPLE`, the after pages read from
`SampledStream`s of the sample's term items (stated in each row).

`cross_check` runs the real reader on moto (or any DynamoDB endpoint) over a few thousand files and
checks that its `scanned_count` and items equal the model's, for the plan the reader runs: the terms plan
once `name_reader` reads terms, the words plan before.
"""

from __future__ import annotations

import functools
import math
import random
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bench import aws, deployment
from bench.name_data import USER, YEAR_END, YEAR_START, NamedFile, make_files
from bench.name_terms_model import (
    ListStream,
    SampledStream,
    Stream,
    TermItem,
    TermsCost,
    TermTable,
    split,
    terms_list,
)
from bench.report import Row, progress
from file_index import name_terms
from file_index.name_reader import MAX_WORD_CANDIDATES
from file_index.names import MAX_INDEXED_WORD, indexed_words, matches_words, term_scope, time_term, words
from file_index.placement import ShardPlacement
from file_index.reader import BucketQuery, UserQuery
from file_index.term_reader import TermSearch
from search.composition import read_threads

BUCKET = aws.BUCKET
LIMIT = 100
SAMPLE = 100_000
MAX_PAGES = 20
PAGE_BYTES = 1024 * 1024
MAX_BATCH_GET = 100
YEAR_MS = (int(YEAR_START.timestamp() * 1000), int(YEAR_END.timestamp() * 1000))


@dataclass(frozen=True)
class NameShape:
    name: str
    q: str
    user: bool = False
    start: str | None = None
    end: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    ascending: bool = False

    def query(self, rare: str) -> str:
        return self.q.format(rare=rare)

    def in_time(self, upload_date: str) -> bool:
        return (self.start is None or upload_date >= self.start) and (
            self.end is None or upload_date <= self.end
        )

    def in_sizes(self, size: int) -> bool:
        return (self.min_size is None or size >= self.min_size) and (
            self.max_size is None or size <= self.max_size
        )


MB, GB = 1_000_000, 1_000_000_000
DECEMBER_2 = "2017-12-02T00:00:00.000Z"
SHAPES = (
    NameShape("rare word", "{rare}"),
    NameShape("common word", "report"),
    NameShape("very common word", "img"),
    NameShape("prefix, 1 letter", "i"),
    NameShape("prefix, 2 letters", "in"),
    NameShape("prefix, 3 letters", "inv"),
    NameShape("prefix, 4 letters", "invo"),
    NameShape("two words", "invoice 2017"),
    NameShape("word longer than a term", "screenshot"),
    NameShape("rare word, last 30 days", "{rare}", start=DECEMBER_2),
    NameShape(
        "common word, March", "report", start="2017-03-01T00:00:00.000Z", end="2017-03-31T23:59:59.999Z"
    ),
    NameShape("common word, oldest first", "report", ascending=True),
    NameShape("common word, > 1 GB", "report", min_size=GB),
    NameShape("prefix, 1 letter, 1-2 MB", "i", min_size=MB, max_size=2 * MB),
    NameShape("common word, user", "report", user=True),
    NameShape("prefix, 3 letters, user", "inv", user=True),
    NameShape("prefix, 1 letter, user", "i", user=True),
    NameShape("CJK word inside names", "資料"),
    NameShape("CJK three characters", "報告書"),
    NameShape("CJK leading character", "報"),
    NameShape("Korean prefix", "회의"),
)


# -- before: the words plan -------------------------------------------------------------------------------


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
        found = []
        for word, number in self.pairs[bisect_left(self.pairs, (prefix, -1)) :]:
            if not word.startswith(prefix):
                break
            found.append(number)
        return found


@dataclass(frozen=True)
class WordsCost:
    items: float  # name items a page reads (the looked-up word's, every shard)
    candidates: float  # entries a page reads (names with every word)
    matches: float  # files the list returns
    partitions: int
    item_size: float
    scanned: float | None = None  # the scan plan: the user's entries the list reads

    @property
    def per_page(self) -> float:
        return self.items + self.candidates

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.matches / LIMIT))

    @property
    def per_item_returned(self) -> float | None:
        if self.matches == 0:
            return None
        if self.scanned is not None:
            return (self.items + self.scanned) / self.matches
        return self.pages * self.per_page / self.matches

    def rounds(self, threads: int) -> int:
        """Round trips of a page: the longest shard's Queries, then the BatchGetItems `threads` at once."""
        if self.scanned is not None:
            return 1 + 4  # the capped read of the word's items, then a bounded page of the user's index
        queries = max(1, math.ceil(self.items / self.partitions * self.item_size / PAGE_BYTES))
        return queries + math.ceil(math.ceil(self.candidates / MAX_BATCH_GET) / threads)

    @property
    def held(self) -> float:
        """Items a page holds at once: every candidate's entry (the scan plan: the capped word items)."""
        return MAX_WORD_CANDIDATES + 1 if self.scanned is not None else self.candidates

    def scaled(self, factor: float) -> WordsCost:
        scanned = None if self.scanned is None else self.scanned * factor
        return WordsCost(
            self.items * factor,
            self.candidates * factor,
            self.matches * factor,
            self.partitions,
            self.item_size,
            scanned,
        )


def words_model(
    files: Sequence[NamedFile], index: WordIndex, shape: NameShape, rare: str, shards: int, item_size: float
) -> WordsCost:
    query_words = words(shape.query(rare))
    numbers = index.starting_with(max(query_words, key=len)[:MAX_INDEXED_WORD])
    if shape.user:
        numbers = [number for number in numbers if files[number].user == USER]
    if len(query_words) > 1 or len(query_words[0]) > MAX_INDEXED_WORD:
        numbers_matching = [n for n in numbers if matches_words(files[n].name, query_words)]
    else:  # an item of the word is a name with a word starting with it: a match
        numbers_matching = numbers
    candidates = sorted(set(numbers_matching))
    matches = [n for n in candidates if shape.in_time(files[n].upload_date) and shape.in_sizes(files[n].size)]
    partitions = 1 if shape.user else shards
    if shape.user and len(numbers) > MAX_WORD_CANDIDATES:
        user_files = sum(1 for file in files if file.user == USER and shape.in_time(file.upload_date))
        return WordsCost(MAX_WORD_CANDIDATES + 1, 0, len(matches), 1, item_size, scanned=user_files)
    return WordsCost(len(numbers), len(candidates), len(matches), partitions, item_size)


# -- after: the terms plan ----------------------------------------------------------------------------------


def lookup(shape: NameShape, rare: str) -> tuple[list[str], str]:
    query_words = name_terms.query_words(shape.query(rare))
    return query_words, name_terms.lookup_term(max(query_words, key=len))


def term_index(files: Sequence[NamedFile], terms: set[str]) -> dict[str, list[int]]:
    """The files (numbers) indexed under each of `terms`."""
    found: dict[str, list[int]] = {term: [] for term in terms}
    for number, file in enumerate(files):
        for term in name_terms.name_terms(file.name):
            if term in found:
                found[term].append(number)
    return found


def search(shape: NameShape, rare: str) -> TermSearch:
    """What the terms plan reads for `shape` (the reader's own `TermSearch`)."""
    query_words = tuple(name_terms.query_words(shape.query(rare)))
    return TermSearch(scope(shape), query_words, query_words, None, shape.ascending)


def scope(shape: NameShape) -> UserQuery | BucketQuery:
    """The list `shape` narrows: a user's or the bucket's, with its bounds."""
    if shape.user:
        return UserQuery(
            USER,
            shape.start,
            shape.end,
            min_size=shape.min_size,
            max_size=shape.max_size,
            ascending=shape.ascending,
        )
    return BucketQuery(
        BUCKET, shape.min_size, shape.max_size, shape.start, shape.end, ascending=shape.ascending
    )


def partitions(layout: ShardPlacement, shape: NameShape) -> list[str]:
    return layout.user_partitions(USER) if shape.user else layout.bucket_partitions(BUCKET)


def exact_table(
    files: Sequence[NamedFile],
    numbers: Sequence[int],
    shape: NameShape,
    layout: ShardPlacement,
    term: str,
    *,
    moto: bool = False,
) -> TermTable:
    """The term's items (files `numbers`) of each partition inside the shape's time bounds, in read order."""
    values = partitions(layout, shape)
    inside: dict[str, list[TermItem]] = {value: [] for value in values}
    beyond = set()  # partitions with items of the term past the far time bound
    for number in numbers:
        file = files[number]
        if shape.user and file.user != USER:
            continue
        value = (
            layout.user_partition(USER, file.key) if shape.user else layout.bucket_partition(BUCKET, file.key)
        )
        if shape.in_time(file.upload_date):
            inside[value].append(
                TermItem(time_term(file.upload_date, file.key), file.key, file.name, file.size)
            )
        elif (file.upload_date < (shape.start or "")) != shape.ascending:
            beyond.add(value)
    return TermTable(
        {
            term_scope(value, term): ListStream(
                sorted(items, key=lambda item: item.sort_value, reverse=not shape.ascending),
                beyond=value in beyond,
            )
            for value, items in inside.items()
        },
        moto=moto,
    )


def sampled_table(
    sample: Sequence[NamedFile],
    numbers: Sequence[int],
    shape: NameShape,
    layout: ShardPlacement,
    term: str,
    objects: int,
) -> Callable[[], TermTable]:
    """The term's items in a bucket of `objects` files whose names are drawn like the sample's."""
    pool = [(sample[n].name, sample[n].size) for n in numbers if not shape.user or sample[n].user == USER]
    low = YEAR_MS[0] if shape.start is None else max(YEAR_MS[0], _ms(shape.start))
    high = YEAR_MS[1] if shape.end is None else min(YEAR_MS[1], _ms(shape.end))
    fraction = max(0, high - low) / (YEAR_MS[1] - YEAR_MS[0])
    values = partitions(layout, shape)

    def make() -> TermTable:
        rng = random.Random(f"{shape.name} {objects}")
        counts = split(round(len(pool) * objects / len(sample)), len(values), rng)
        streams: dict[str, Stream] = {
            term_scope(value, term): SampledStream(
                rng.binomialvariate(count, fraction),
                low,
                high,
                pool,
                ascending=shape.ascending,
                rng=rng,
                label=value,
            )
            for value, count in zip(values, counts, strict=True)
        }
        return TermTable(streams)

    return make


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


# -- the cross-check and the run -----------------------------------------------------------------------------


def run(*, sizes: Sequence[int], check_objects: int) -> list[Row]:
    from bench import name_checks

    layout = deployment.shard_placement()
    threads = read_threads(layout)
    rows: list[Row] = []
    if check_objects:
        progress(f"name reads: the models against the reader on moto, {check_objects} files")
        checked = name_checks.cross_check(check_objects, layout)
        rows.append(
            Row(
                "16. name reads: models = reader (moto)",
                "shapes",
                checked,
                None,
                "",
                note=f"exact, {check_objects:,} files: before, the first page's items read and returned; "
                f"after, the first {name_checks.CHECK_PAGES} pages' items read, returned and round trips",
            )
        )
    sample: tuple[list[NamedFile], str, WordIndex, dict[str, list[int]]] | None = None
    for objects in sizes:
        progress(f"name reads: {objects:,} files")
        scaled = objects > SAMPLE
        if scaled and sample is not None and len(sample[0]) == SAMPLE:
            files, rare, index, terms = sample
        else:
            files, rare = make_files(SAMPLE if scaled else objects)
            index = WordIndex.of(files)
            terms = term_index(files, {lookup(shape, rare)[1] for shape in SHAPES})
            if len(files) == SAMPLE:
                sample = (files, rare, index, terms)
        factor = objects / len(files)
        item_size = name_checks.word_item_size(files[:2000], layout)
        for shape in SHAPES:
            before = words_model(files, index, shape, rare, layout.bucket_shards, item_size).scaled(factor)
            term = lookup(shape, rare)[1]
            make = (
                sampled_table(files, terms[term], shape, layout, term, objects)
                if scaled
                else functools.partial(exact_table, files, terms[term], shape, layout, term)
            )
            after = terms_list(
                make, partitions(layout, shape), search(shape, rare), limit=LIMIT, max_pages=MAX_PAGES
            )
            rows.append(_row(shape, rare, objects, before, after, threads, scaled))
    rows.extend(name_checks.write_rows(layout))
    return rows


def _row(
    shape: NameShape, rare: str, objects: int, before: WordsCost, after: TermsCost, threads: int, scaled: bool
) -> Row:
    ours = after.per_item_returned
    theirs = before.per_item_returned
    unit = "items read/item returned"
    if ours is None:
        unit, ours = "items read (no match)", float(after.first_page_read)
    pages = f"{after.pages} pages (all)" if after.complete else f"the first {after.pages} pages"
    plan = "scan plan" if before.scanned is not None else "words plan"
    note = (
        f"after (terms plan): {after.returned:,} returned over {pages}, deepest page {after.deepest} "
        f"round trips, at most {after.peak_held:,} items held; before ({plan}): {before.matches:,.0f} "
        f"matches, a page reads {before.items:,.0f} name items + {before.candidates:,.0f} entries, "
        f"{before.rounds(threads)} round trips, {before.held:,.0f} items held"
        + ("; scaled from the 100,000-file sample" if scaled else "")
    )
    return Row.versus(
        f"16. name '{shape.query(rare)}' ({shape.name}), {objects:,} files",
        unit,
        round(ours, 2),
        None if theirs is None else round(theirs, 2),
        "before: words plan",
        note=note,
    )
