"""Measure 22: layouts of the name index priced on paper, side by side with its first, before one is built.

Each `Layout` says which terms a name is indexed under, whether each file has an item per term (as built) or
a whole indexer batch shares one item per term, shard and day (**packed**: the item holds a posting per
file: its key, which holds the name, its upload time and size, so a search still checks names before it
reads entries, and reads an entry by its key), and whether a person's name search has items of its own
(per file: a copy in the `nameUser` GSI, as built; packed: blocks per person, term and day). The model
prices, per upload:

- **write units** of the name index for a new key, an overwrite and a delete, in a busy bucket (batches of
  100 uploads of one day), one at a time (batches of one) and in a backfill (batches of 500 listed objects,
  their upload times spread over the data's year), by DynamoDB's rule: a unit per started KB of an item,
  again for each GSI copy. Per-file items are sized by the real `name_items.term_items`; an overwrite moves
  them (put and delete), a delete removes them. Packed postings are never moved: an overwrite writes the
  new postings, and the old ones (as a delete's) are left to the entries' check and a compaction that
  rewrites a block once half of it is stale (its amortised units are counted). Every layout keeps one key
  item per file for the folder lists (in the user GSI too where it has per-file user items).
- **the busiest partition** at 10,000 new keys a second into one bucket (write units a second);
- **reads**: for query words drawn from the names (each word start's prefixes of 1 to 10 characters,
  weighted by how many names they match), the postings or items read per file found, and read units per
  file found (the items or blocks read, eventually consistent, 4 KB a unit, plus the found file's entry).

The entry and its four GSIs add 5 units a new key, 9 an overwrite and 5 a delete (measure 21); the rows
give the name index's units and the total. The terms of a shorter layout are the first layout's
(`name_terms.prefix_terms`) of at most `short` characters, with `whole`: also each word start's whole term
as the name index keeps it (`name_terms.name_terms`: a query word whose prefix term is such a term, one
that runs past the word's first class run or fills `MAX_TERM`, is read under it; any other longer word
is read under its first `short` characters and checked).
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from bench.backfill_batch import PRICES
from bench.models import item_bytes
from bench.name_data import NamedFile, make_files
from bench.report import Measured, Row
from file_index.rules import name_terms, schema
from file_index.rules.name_items import key_item, term_items, term_scope
from file_index.rules.shards import shard_of

# The entry and its four GSIs (measure 21, DynamoDB Local).
ENTRY_UNITS = {"new key": 5.0, "overwrite": 9.0, "delete": 5.0}
KINDS = ("new key", "overwrite", "delete")
BUSY_BATCH = 100
BACKFILL_BATCH = 500
UPLOADS_PER_SECOND = 10_000
DEFAULT_SHARDS = 16
# A packed posting: its key, counted as the name and what precedes it (measure 16's `user0007/`, 9), the
# upload time (8), the size (up to 7), separators (5). Without the name (`named_postings` off, or a name
# over `long_name` bytes) a posting is this long: a digest of the key in its place, which the model reads
# through the candidate's entry without pricing how the key is found from the digest.
POSTING_OVERHEAD = 29
# A packed block's keys and attribute names (`nameScope`, `nameSort`, `postings`, `since`).
BLOCK_OVERHEAD = 110
KB = 1024
# The mark of a capped name's overflow terms (`+` and a first character): a name search reads the overflow
# term of its word's first character too.
OVERFLOW = "+"
READ_UNIT_BYTES = 4096
EVENTUAL = 0.5
ENTRY_READ_UNITS = 0.5  # an entry (under 4 KB) read eventually consistent
# A term item as a Query reads it (its keys, `objectKey`, `fileName`, `size`, `uploadDate`, `since`): about
# 200 bytes for measure 16's names (`item_bytes` of `name_items.term_items`).
TERM_ITEM_BYTES = 200


@dataclass(frozen=True)
class Layout:
    label: str
    short: int | None  # terms of at most this many characters (None: every prefix term, the first layout's)
    whole: bool  # and each word start's longest term
    packed: bool  # one item per term, shard and day for a whole batch
    user_items: bool  # items of a person's own (per file: the user GSI; packed: per-person blocks)
    shards: int = DEFAULT_SHARDS
    user_short: int | None = None  # packed user blocks: their terms of at most this many characters only
    named_postings: bool = True  # a packed posting holds the name (else every candidate's entry is read)
    stage: int | None = None  # packed by a second stage, this many files a run in upload-time order
    cap: int | None = None  # at most this many terms a name; the rest by their first character (overflow)
    long_name: int | None = None  # postings of a name of more bytes than this hold no name (entry checked)

    def indexed(self, name: str) -> list[str]:
        """The terms `name` has postings under: its first `cap` terms, then the overflow terms of the
        rest (`OVERFLOW` and the term's first character), each once."""
        terms = self.terms(name)
        if self.cap is None or len(terms) <= self.cap:
            return terms
        kept = terms[: self.cap]
        return kept + list(dict.fromkeys(OVERFLOW + term[0] for term in terms[self.cap :]))

    def terms(self, name: str) -> list[str]:
        return _terms(name, self.short, self.whole)

    def holds_name(self, name: str) -> bool:
        """Whether `name`'s postings hold it (else a search reads the entry of each such candidate)."""
        return self.named_postings and (self.long_name is None or len(name.encode("utf-8")) <= self.long_name)

    def user_terms(self, name: str) -> list[str]:
        if self.user_short is None:
            return self.terms(name)
        return _terms(name, self.user_short, False)

    def read_term(self, word: str) -> str:
        """The term a query word is read under: with whole terms, the name index's own rule."""
        if self.whole:
            return name_terms.lookup_term(word)
        term = name_terms.prefix_term(word)
        return term if self.short is None else term[: self.short]


LAYOUTS = (
    Layout("the first layout: every prefix term, an item a file, user GSI", None, False, False, True),
    Layout("terms ≤3 and whole words, an item a file, user GSI (as built)", 3, True, False, True),
    Layout("terms ≤3 and whole words, an item a file, no user items", 3, True, False, False),
    Layout("terms ≤3 and whole words, packed, 16 shards, user blocks", 3, True, True, True),
    Layout("terms ≤3 and whole words, packed, 1 shard, user blocks", 3, True, True, True, 1),
    Layout("terms ≤3 and whole words, packed, 1 shard, no user items", 3, True, True, False, 1),
    Layout("terms ≤3, packed, 1 shard, no user items", 3, False, True, False, 1),
    Layout("terms ≤2, packed, 1 shard, no user items", 2, False, True, False, 1),
    Layout("terms ≤3, packed, 1 shard, user blocks of 1-character terms", 3, False, True, True, 1, 1),
    Layout("terms ≤2, packed, 1 shard, user blocks of 1-character terms", 2, False, True, True, 1, 1),
    Layout("every term, packed, 1 shard, no user items", None, False, True, False, 1),
    Layout(
        "terms ≤3, packed, 1 shard, no user items, postings without names",
        3,
        False,
        True,
        False,
        1,
        None,
        False,
    ),
    Layout(
        "terms ≤3, packed, 1 shard, user blocks of 1-character terms, postings without names",
        3,
        False,
        True,
        True,
        1,
        1,
        False,
    ),
    Layout(
        "terms ≤3, a second stage packs 1,000, 1 shard, no user items", 3, False, True, False, 1, stage=1000
    ),
    Layout(
        "terms ≤3 and whole words, a second stage packs 1,000, 1 shard, no user items",
        3,
        True,
        True,
        False,
        1,
        stage=1000,
    ),
    Layout(
        "terms ≤3, a second stage packs 1,000, 1 shard, user blocks of 1-character terms",
        3,
        False,
        True,
        True,
        1,
        1,
        stage=1000,
    ),
    Layout(
        "terms ≤3 and whole words, a second stage packs 1,000, 1 shard, no user items, 24 terms a name and "
        "the rest by first character, names over 64 bytes checked on the entry",
        3,
        True,
        True,
        False,
        1,
        stage=1000,
        cap=24,
        long_name=64,
    ),
)


@cache
def _every_term(name: str) -> tuple[str, ...]:
    return tuple(name_terms.prefix_terms(name))


@cache
def _terms(name: str, short: int | None, whole: bool) -> list[str]:
    every = _every_term(name)
    if short is None:
        return list(every)
    kept = [term for term in every if len(term) <= short]
    if whole:
        # The whole terms as the name index keeps them (`name_terms.name_terms`: over SHORT_TERM).
        if short != name_terms.SHORT_TERM:
            raise ValueError(f"whole terms go with terms of at most {name_terms.SHORT_TERM} characters")
        kept += [term for term in name_terms.name_terms(name) if len(term) > short]
    return kept


def _entry(file: NamedFile, upload_date: str) -> dict[str, object]:
    return {
        schema.OBJECT_KEY: file.key,
        schema.BUCKET_NAME: "fileupload.bench",
        schema.UPLOAD_USER: file.user,
        schema.FILE_ID: file.key,
        schema.SIZE: file.size,
        schema.UPLOAD_DATE: upload_date,
    }


def _units(size: int) -> int:
    return math.ceil(size / KB)


def posting_bytes(file: NamedFile, layout: Layout | None = None) -> int:
    if layout is not None and not layout.holds_name(file.name):
        return POSTING_OVERHEAD
    return POSTING_OVERHEAD + len(file.name.encode("utf-8"))


@cache
def _item_units(file: NamedFile) -> tuple[dict[str, int], int]:
    """The units of each of `file`'s term items (by term) and of its key item, as `name_items` builds them."""
    entry = _entry(file, file.upload_date)
    items = term_items(entry, "0")
    by_term: dict[str, int] = {}
    for term in _every_term(file.name) if items else ():
        # An item of `term` as `name_items` builds one (it builds the items of `name_terms` only).
        item = {
            **items[0],
            schema.NAME_SCOPE: term_scope(str(entry[schema.BUCKET_NAME]), term),
            schema.NAME_USER: term_scope(str(entry[schema.UPLOAD_USER]), term),
        }
        by_term[term] = _units(item_bytes(item))
    return by_term, _units(item_bytes(key_item(entry, "0")))


def per_file_units(layout: Layout, file: NamedFile) -> float:
    """A new key's name units with an item per term (and the key item), each in the user GSI too when the
    layout has user items."""
    by_term, key_units = _item_units(file)
    copies = 2 if layout.user_items else 1
    return copies * (sum(by_term[term] for term in layout.terms(file.name)) + key_units)


def packed_units(layout: Layout, batch: Sequence[NamedFile]) -> tuple[float, dict[tuple[str, int], int]]:
    """A batch's name units, packed: one block per term, shard and day (and per person, term and day with
    user blocks), a unit per started KB of each; and the units of each (term, shard) block."""
    blocks: dict[tuple[str, ...], int] = defaultdict(lambda: BLOCK_OVERHEAD)
    for file in batch:
        day = file.upload_date[:10]
        shard = str(shard_of(file.key, layout.shards))
        for term in layout.indexed(file.name):
            blocks[(term, shard, day)] += posting_bytes(file, layout)
        if layout.user_items:
            for term in layout.user_terms(file.name):
                blocks[(term, "user " + file.user, day)] += posting_bytes(file, layout)
    heat: dict[tuple[str, int], int] = defaultdict(int)
    for (term, shard, _), size in blocks.items():
        if not shard.startswith("user "):
            heat[(term, int(shard))] += _units(size)
    key_items = sum(_item_units(file)[1] for file in batch)
    return sum(_units(size) for size in blocks.values()) + key_items, heat


def compaction_units(layout: Layout, file: NamedFile) -> float:
    """A stale posting's share of compaction: a block is rewritten once half of it is stale, so each stale
    posting pays about its own size once (the live half it rewrites), per copy."""
    postings = len(layout.indexed(file.name)) + (
        len(layout.user_terms(file.name)) if layout.user_items else 0
    )
    return postings * posting_bytes(file, layout) / KB


def batch_units(layout: Layout, batch: Sequence[NamedFile]) -> float:
    """A batch's name units for new keys."""
    if layout.packed:
        return packed_units(layout, batch)[0]
    return sum(per_file_units(layout, file) for file in batch)


def added_units(
    layout: Layout, batches: Sequence[Sequence[NamedFile]], file: NamedFile
) -> tuple[float, float]:
    """What `file` adds to a busy batch (the mean over `batches`) and costs alone, as a new key."""
    busy = statistics.fmean(
        batch_units(layout, [*batch, file]) - batch_units(layout, batch) for batch in batches
    )
    return busy, batch_units(layout, [file])


@dataclass(frozen=True)
class Priced:
    layout: Layout
    units: dict[str, dict[str, float]]  # batching ("busy", "one at a time", "backfill") -> kind -> units
    hottest: float  # write units a second of the busiest (term, shard) partition at UPLOADS_PER_SECOND
    terms: float  # terms a name
    reads: tuple[float, float, float]  # items read per file found: median, 90th percentile; RU per file found
    named: dict[str, tuple[float, float]]  # a name set's new key: (busy, one at a time)


def _same_day(batch: Sequence[NamedFile], day: str) -> list[NamedFile]:
    return [
        NamedFile(file.key, file.user, file.name, file.size, f"{day}{file.upload_date[10:]}")
        for file in batch
    ]


def _batches(files: Sequence[NamedFile], size: int) -> list[Sequence[NamedFile]]:
    """Full batches of `size` (the files left over dropped), or all of them when fewer."""
    if len(files) < size:
        return [files]
    return [files[start : start + size] for start in range(0, len(files) - size + 1, size)]


def price(
    layout: Layout,
    files: Sequence[NamedFile],
    queries: Sequence[tuple[str, int]],
    named: Mapping[str, Sequence[NamedFile]],
) -> Priced:
    units: dict[str, dict[str, float]] = {}
    busy = [_same_day(batch, "2017-06-01") for batch in _batches(files, BUSY_BATCH)]
    backfill = _batches(files, BACKFILL_BATCH)
    if layout.stage is not None:
        # The stage reads the entries in upload-time order: a run is `stage` files, one day or less.
        in_order = sorted(files, key=lambda file: file.upload_date)
        busy = [_same_day(batch, "2017-06-01") for batch in _batches(in_order, layout.stage)]
        backfill = [_same_day(batch, batch[0].upload_date[:10]) for batch in _batches(in_order, layout.stage)]
    hottest = 0.0
    for batching, batches in (
        ("busy", busy),
        ("one at a time", [[file] for file in files]),
        ("backfill", backfill),
    ):
        counted = [file for batch in batches for file in batch]
        if layout.packed:
            heat: Counter[tuple[str, int]] = Counter()
            total = 0.0
            for batch in batches:
                batch_units, batch_heat = packed_units(layout, batch)
                total += batch_units
                heat.update(batch_heat)
            new_key = total / len(counted)
            stale = statistics.fmean(compaction_units(layout, file) for file in counted)
            units[batching] = {"new key": new_key, "overwrite": new_key + stale, "delete": stale}
            if batching == "busy":
                batches_per_second = UPLOADS_PER_SECOND / (layout.stage or BUSY_BATCH)
                hottest = max(heat.values()) / len(batches) * batches_per_second
        else:
            new_key = statistics.fmean(per_file_units(layout, file) for file in counted)
            units[batching] = {"new key": new_key, "overwrite": 2 * new_key, "delete": new_key}
            if batching == "busy":
                share: Counter[tuple[str, int]] = Counter()
                for file in counted:
                    shard = shard_of(file.key, layout.shards)
                    share.update((term, shard) for term in layout.terms(file.name))
                hottest = max(share.values()) / len(counted) * UPLOADS_PER_SECOND
    return Priced(
        layout,
        units,
        hottest,
        statistics.fmean(len(layout.indexed(file.name)) for file in files),
        read_cost(layout, files, queries),
        {label: _mean_added(layout, busy[:5], chosen) for label, chosen in named.items()},
    )


def _mean_added(
    layout: Layout, batches: Sequence[Sequence[NamedFile]], files: Sequence[NamedFile]
) -> tuple[float, float]:
    added = [added_units(layout, batches, file) for file in files]
    return statistics.fmean(busy for busy, _ in added), statistics.fmean(alone for _, alone in added)


def query_words(files: Sequence[NamedFile], rng: random.Random, count: int) -> list[tuple[str, int]]:
    """`count` query words: a word start's prefix of 1 to 10 characters, from names drawn at random (so
    common words are asked more often), with how many of `files` it matches."""
    words: list[str] = []
    for file in rng.sample(list(files), min(count, len(files))):
        starts = name_terms.folded_words(file.name)
        word = rng.choice(starts)
        rest = "".join(starts[starts.index(word) :])
        words.append(rest[: rng.randint(1, min(10, len(rest)))])
    return [(word, sum(name_terms.matches(file.name, [word]) for file in files)) for word in words]


def read_cost(
    layout: Layout, files: Sequence[NamedFile], queries: Sequence[tuple[str, int]]
) -> tuple[float, float, float]:
    """Items (or postings) read per file found: median and 90th percentile over `queries`; read units per
    file found over them all (items or postings at their size, 4 KB a unit, eventually consistent, and one
    entry per file found)."""
    holders: dict[str, list[NamedFile]] = defaultdict(list)
    for file in files:
        for term in layout.indexed(file.name):
            holders[term].append(file)
    ratios: list[float] = []
    read_bytes = found_total = entries = 0.0
    for word, found in queries:
        if found == 0:
            continue
        # A file with postings under both (capped, its word's term kept) is read once.
        held = list(
            dict.fromkeys(holders.get(layout.read_term(word), []) + holders.get(OVERFLOW + word[0], []))
        )
        ratios.append(len(held) / found)
        if layout.packed:
            read_bytes += sum(posting_bytes(file, layout) for file in held)
        else:
            read_bytes += len(held) * TERM_ITEM_BYTES
        # A posting without the name is checked on its entry; any other, on itself first.
        unnamed = [file for file in held if not layout.holds_name(file.name)]
        entries += found + sum(not name_terms.matches(file.name, [word]) for file in unnamed)
        found_total += found
    read_units = (read_bytes / READ_UNIT_BYTES * EVENTUAL + entries * ENTRY_READ_UNITS) / found_total
    ordered = sorted(ratios)
    return statistics.median(ordered), ordered[int(0.9 * (len(ordered) - 1))], read_units


def rows_of(priced: Iterable[Priced], *, files: int, queries: int) -> list[Row]:
    """A row per layout and kind: the name index's units per upload in a busy bucket against the first
    layout's (every prefix term, measure 21's 56.6 a new key before the name index kept shorter terms)."""
    priced = list(priced)
    today = priced[0]
    rate = PRICES.dynamodb_per_million_write_units
    out: list[Row] = []
    for one in priced:
        for kind in KINDS:
            busy = one.units["busy"][kind]
            single = one.units["one at a time"][kind]
            backfill = one.units["backfill"][kind]
            total = busy + ENTRY_UNITS[kind]
            median, p90, read_units = one.reads
            named = "; ".join(
                f"{label} {busy_named:.1f} busy, {alone:.1f} alone"
                for label, (busy_named, alone) in one.named.items()
            )
            out.append(
                Row.versus(
                    f"22. name units per {kind}, busy bucket: {one.layout.label}",
                    "WCU/upload",
                    busy,
                    today.units["busy"][kind],
                    "the first layout",
                    note=(
                        f"with the entry {total:.1f} (${total * rate:.2f} per million); one at a time "
                        f"{single:.1f} (+{ENTRY_UNITS[kind]:.0f}); backfill {backfill:.1f}; "
                        f"{one.terms:.1f} terms a name; a new key of {named}; busiest partition at "
                        f"{UPLOADS_PER_SECOND:,}/s {one.hottest:,.0f} WCU/s; reads per file found "
                        f"{median:.1f} (median), {p90:.1f} (p90), {read_units:.2f} RU; {files:,} of measure "
                        f"16's names, {queries} query words; a model (bench/name_layouts.py)"
                    ),
                )
            )
    return out


def other_names() -> dict[str, list[NamedFile]]:
    """Measure 21's other names: ordinary document names and a 255-byte name, as one person's uploads."""
    from bench.upload_writes import DOCUMENT_NAMES, LONG_NAME, USER

    def named(names: Sequence[str]) -> list[NamedFile]:
        return [NamedFile(f"{USER}/{name}", USER, name, 1000, "2017-06-01T12:00:00.000Z") for name in names]

    return {"document names": named(DOCUMENT_NAMES), "a 255-byte name": named([LONG_NAME])}


# Layouts with blocks of a person's own, priced again with the bucket's files spread over this many people.
PEOPLE = (10, 100, 10_000)
PEOPLE_LAYOUT = Layout(
    "terms ≤3 and whole words, a second stage packs 1,000, 1 shard, user blocks of 1-character terms",
    3,
    True,
    True,
    True,
    1,
    1,
    stage=1000,
)


def spread_over(files: Sequence[NamedFile], people: int, rng: random.Random) -> list[NamedFile]:
    """`files` uploaded by `people` people, each file's person drawn uniformly."""
    spread: list[NamedFile] = []
    for file in files:
        user = f"person{rng.randrange(people):05d}"
        spread.append(NamedFile(f"{user}/{file.name}", user, file.name, file.size, file.upload_date))
    return spread


def people_rows(
    files: Sequence[NamedFile], people: Sequence[int], queries: Sequence[tuple[str, int]]
) -> list[Row]:
    """Per count of people: what a new key writes with blocks of a person's own, in a busy bucket and in
    one of those people's uploads one at a time."""
    out: list[Row] = []
    for count in people:
        spread = spread_over(files, count, random.Random(count))
        priced = price(PEOPLE_LAYOUT, spread, queries, {})
        busy = priced.units["busy"]["new key"]
        out.append(
            Row(
                f"22. name units per new key, busy bucket of {count:,} people: {PEOPLE_LAYOUT.label}",
                "WCU/upload",
                busy,
                None,
                "",
                note=(
                    f"with the entry {busy + ENTRY_UNITS['new key']:.1f}; about {len(files) / count:,.1f} "
                    f"files a person in the bucket's {len(files):,}, {1000 / count:,.1f} in a run of 1,000; "
                    "a model (bench/name_layouts.py)"
                ),
            )
        )
    return out


# Issue targets the curve is drawn against: write units per new key (with the entry) in a busy bucket, at
# most; and one at a time.
BUSY_TARGET = 10.0
BUSY_CEILING = 20.0
ALONE_TARGET = 25.0


def curve(priced: Sequence[Priced]) -> dict[str, Any]:
    """The chart's samples: per layout, a new key's write units (with the entry) busy and one at a time,
    against its reads per file found (90th percentile of items read, and read units)."""
    entry = ENTRY_UNITS["new key"]
    return {
        "layouts": [
            {
                "label": one.layout.label,
                "busyUnits": one.units["busy"]["new key"] + entry,
                "aloneUnits": one.units["one at a time"]["new key"] + entry,
                "p90ItemsRead": one.reads[1],
                "readUnits": one.reads[2],
                "secondStage": one.layout.stage is not None,
            }
            for one in priced
        ],
        "targets": {"busy": BUSY_TARGET, "ceiling": BUSY_CEILING, "alone": ALONE_TARGET},
    }


def run(*, files: int = 5_000, queries: int = 200) -> Measured:
    named, _ = make_files(files, seed=16)
    words = query_words(named, random.Random(22), queries)
    others = other_names()
    priced = [price(layout, named, words, others) for layout in LAYOUTS]
    rows = rows_of(priced, files=files, queries=queries)
    return Measured(rows + people_rows(named, PEOPLE, words), {"name_layouts": curve(priced)})
