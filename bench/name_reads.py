"""Measure 16: finding files by name with the terms plan, and what the name index writes.

The data is `bench.name_data`'s (Latin and CJK names). Every shape of `SHAPES` is counted at every size
by the terms plan (`bench.name_terms_model`): pages read through their cursors, up to `MAX_PAGES` of
them: items read per item returned over those pages, the deepest page in round trips, the most items a
page holds.

Sizes up to `SAMPLE` files are counted on the materialised files, exactly. Larger ones are read from
`SampledStream`s of the `SAMPLE`-file data set's term items (stated in each row).

`cross_check` runs the real reader on moto (or any DynamoDB endpoint) over a few thousand files and
checks that its `scanned_count`, items and round trips equal the model's.
"""

from __future__ import annotations

import functools
import random
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
from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.read.term_reader import TermSearch
from file_index.rules import name_terms
from file_index.rules.name_items import term_scope, time_term
from file_index.rules.placement import ShardPlacement

BUCKET = aws.BUCKET
LIMIT = 100
SAMPLE = 100_000
MAX_PAGES = 20
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


# -- the terms plan -----------------------------------------------------------------------------------------


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


def partitions(placement: ShardPlacement, shape: NameShape) -> list[str]:
    return placement.user_partitions(USER) if shape.user else placement.bucket_partitions(BUCKET)


def exact_table(
    files: Sequence[NamedFile],
    numbers: Sequence[int],
    shape: NameShape,
    placement: ShardPlacement,
    term: str,
    *,
    moto: bool = False,
) -> TermTable:
    """The term's items (files `numbers`) of each partition inside the shape's time bounds, in read order."""
    values = partitions(placement, shape)
    inside: dict[str, list[TermItem]] = {value: [] for value in values}
    beyond = set()  # partitions with items of the term past the far time bound
    for number in numbers:
        file = files[number]
        if shape.user and file.user != USER:
            continue
        value = (
            placement.user_partition(USER, file.key)
            if shape.user
            else placement.bucket_partition(BUCKET, file.key)
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
    placement: ShardPlacement,
    term: str,
    objects: int,
) -> Callable[[], TermTable]:
    """The term's items in a bucket of `objects` files whose names are drawn like the sample's."""
    pool = [(sample[n].name, sample[n].size) for n in numbers if not shape.user or sample[n].user == USER]
    low = YEAR_MS[0] if shape.start is None else max(YEAR_MS[0], _ms(shape.start))
    high = YEAR_MS[1] if shape.end is None else min(YEAR_MS[1], _ms(shape.end))
    fraction = max(0, high - low) / (YEAR_MS[1] - YEAR_MS[0])
    values = partitions(placement, shape)

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

    placement = deployment.shard_placement()
    rows: list[Row] = []
    if check_objects:
        progress(f"name reads: the model against the reader on moto, {check_objects} files")
        checked = name_checks.cross_check(check_objects, placement)
        rows.append(
            Row(
                "16. name reads: models = reader (moto)",
                "shapes",
                checked,
                None,
                "",
                note=f"exact, {check_objects:,} files: the first {name_checks.CHECK_PAGES} pages' items "
                "read, returned and round trips",
            )
        )
    sample: tuple[list[NamedFile], str, dict[str, list[int]]] | None = None
    for objects in sizes:
        progress(f"name reads: {objects:,} files")
        scaled = objects > SAMPLE
        if scaled and sample is not None and len(sample[0]) == SAMPLE:
            files, rare, terms = sample
        else:
            files, rare = make_files(SAMPLE if scaled else objects)
            terms = term_index(files, {lookup(shape, rare)[1] for shape in SHAPES})
            if len(files) == SAMPLE:
                sample = (files, rare, terms)
        for shape in SHAPES:
            term = lookup(shape, rare)[1]
            make = (
                sampled_table(files, terms[term], shape, placement, term, objects)
                if scaled
                else functools.partial(exact_table, files, terms[term], shape, placement, term)
            )
            after = terms_list(
                make, partitions(placement, shape), search(shape, rare), limit=LIMIT, max_pages=MAX_PAGES
            )
            rows.append(_row(shape, rare, objects, after, scaled))
    rows.extend(name_checks.write_rows(placement))
    return rows


def _row(shape: NameShape, rare: str, objects: int, after: TermsCost, scaled: bool) -> Row:
    ours = after.per_item_returned
    unit = "items read/item returned"
    if ours is None:
        unit, ours = "items read (no match)", float(after.first_page_read)
    pages = f"{after.pages} pages (all)" if after.complete else f"the first {after.pages} pages"
    note = (
        f"terms plan: {after.returned:,} returned over {pages}, deepest page {after.deepest} round trips, "
        f"at most {after.peak_held:,} items held"
        + ("; scaled from the 100,000-file sample" if scaled else "")
    )
    return Row(
        f"16. name '{shape.query(rare)}' ({shape.name}), {objects:,} files",
        unit,
        round(ours, 2),
        None,
        "",
        note=note,
    )
