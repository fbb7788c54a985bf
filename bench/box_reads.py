"""Measure 13: box queries: items read per item returned, and DynamoDB round trips, by plan.

The data are docs/scaling.md's (section 4): `objects` uploads to one bucket, uniform over 2017 in time,
log-uniform from 1 B to 10 GiB in size, spread evenly over `USERS` uploaders; each entry is the writer's
own (`bench.entries.entry`) under the default placement with the Z-order index on, so its shard and its
z-address are the deployed ones.

A key condition reads exactly the items of its key range, so each plan's reads are counted from the
data, exactly, not sampled:

- Z-order index (`bucketName-zAddress-index`): the box's `zorder.z_ranges(box, 32)`, each range one
  Query per shard (`bucketName = :shard AND zAddress BETWEEN :lo AND :hi`); reads = entries whose
  address is inside a range. Requests: ranges x shards, one more per 1 MB DynamoDB page. Round trips in
  sequence: walking the ranges one after the other in each shard (shards in parallel), the busiest
  shard's requests; issuing every range of every shard at once, one page deep.
- The best single index + filter: for a bucket box, `bucketName-size-index` with the size bounds as the
  key condition and the time bounds as a filter (the planner's fallback; an open size range reads the
  whole bucket); each shard's range read in 1 MB pages, shards in parallel.
- The bucket's time index (`bucketName-uploadDate-index`, on by default): the box's time bounds as the
  key condition of each shard, size bounds as a filter. Without size bounds it reads what it returns; the
  0.3.0 default (no time index, Z-order off) read the same time range through the size index and filtered
  the whole bucket. A newest-first page reads each shard's fair share (`shards.fair_share`).
- User boxes: `uploadUser-uploadDate-index` with the time bounds as the key condition and the size
  bounds as a filter (the planner's plan), against the bucket's Z-order index with a filter on the user.

1 MB pages are counted at the entries' mean stored size. Amplification counts the whole answer; a
reader that pages (limit per page) reads the same items over more requests.

A bucket only uploads wrote has no statistics from a backfill: each bucket box is also chosen with the
statistics of the indexer's sample of uploads (`file_index.rules.upload_statistics`; "uploads only") and
without any (before), against the cheapest; `bench.box_statistics` does the same from 1,000 to 100 times
this run's objects.

`cross_check` compares the model with the real reader on a smaller table on moto: for each box and plan,
the `scanned_count` the reader reports over the whole answer must equal the model's count.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from bench import aws, box_statistics, deployment, models, reading
from bench.entries import YEAR_2017, create_event, entry, item_bytes, log_uniform_size
from bench.memory_table import MemoryTable
from bench.reader_030 import Reader030
from bench.report import Row, progress
from file_index.read.file_queries import BucketQuery, ListCursor, Plan, UserQuery
from file_index.read.reader import FileReader
from file_index.rules import cost, schema, shards, upload_statistics, zorder
from file_index.rules.objects import iso_utc_millis
from file_index.rules.placement import ShardPlacement

USERS = 10  # 10,000 files each at 100k objects, so narrow user boxes still match something
USER = "USER007"
MAX_RANGES = zorder.DEFAULT_MAX_RANGES
KB, MB, GB = 10**3, 10**6, 10**9
GIB = 1024**3
PAGE = 100  # items a page of the API answers by default


def _ms(text: str) -> int:
    return zorder.epoch_millis(text)


_DAY = 86_400_000


@dataclass(frozen=True)
class BoxShape:
    name: str
    box: zorder.Box


def _box(from_text: str | None, to_ms_exclusive: int | None, low: int | None, high: int | None) -> zorder.Box:
    return zorder.Box(
        from_ms=None if from_text is None else _ms(from_text),
        to_ms=None if to_ms_exclusive is None else to_ms_exclusive - 1,
        min_size=low,
        max_size=high,
    )


AUG = _ms("2017-08-01T00:00:00.000Z")
SEP = _ms("2017-09-01T00:00:00.000Z")
OCT = _ms("2017-10-01T00:00:00.000Z")
JUL = _ms("2017-07-01T00:00:00.000Z")
AUG_20 = _ms("2017-08-20T00:00:00.000Z")
YEAR_START, YEAR_END = YEAR_2017

# docs/scaling.md's shapes (narrow and wide in each attribute), and a wide-time, very narrow size one.
SHAPES = (
    BoxShape("August, 1-10 MB", _box("2017-08-01T00:00:00.000Z", SEP, MB, 10 * MB)),
    BoxShape("August, any size", _box("2017-08-01T00:00:00.000Z", SEP, None, None)),
    BoxShape("the year, 1-10 MB", _box("2017-01-01T00:00:00.000Z", YEAR_END + 1, MB, 10 * MB)),
    BoxShape("one day, > 100 MB", _box("2017-08-20T00:00:00.000Z", AUG_20 + _DAY, 100 * MB + 1, None)),
    BoxShape("Q3, > 100 MB", _box("2017-07-01T00:00:00.000Z", OCT, 100 * MB + 1, None)),
    BoxShape("one week, 1 KB-1 MB", _box("2017-08-20T00:00:00.000Z", AUG_20 + 7 * _DAY, KB, MB)),
    BoxShape("two months, 10-100 MB", _box("2017-07-01T00:00:00.000Z", SEP, 10 * MB, 100 * MB)),
    BoxShape("one day, 1-2 MB", _box("2017-08-20T00:00:00.000Z", AUG_20 + _DAY, MB, 2 * MB)),
    BoxShape("one hour, any size", _box("2017-08-20T09:00:00.000Z", AUG_20 + 10 * 3_600_000, None, None)),
    BoxShape("the year, 1-2 MB", _box("2017-01-01T00:00:00.000Z", YEAR_END + 1, MB, 2 * MB)),
    # "> 100 MB" as the API passes it leaves the size open (to 2**63); closed at the data's largest size:
    BoxShape(
        "one day, 100 MB-10 GiB", _box("2017-08-20T00:00:00.000Z", AUG_20 + _DAY, 100 * MB + 1, 10 * GIB)
    ),
)
# Without time bounds the planner reads the bucket index by size, exactly: a Z-order plan only for users.
USER_SHAPES = (*SHAPES, BoxShape("any time, > 1 GB", _box(None, None, GB + 1, None)))


@dataclass(frozen=True)
class Entry:
    key: str
    user: str
    shard: int  # of the bucket index (and the Z-order index)
    upload_ms: int
    size: int
    address: str
    item: dict[str, object]


def dataset(objects: int, placement: ShardPlacement, *, seed: int = 2017) -> list[Entry]:
    """`objects` entries as the writer builds them under `placement` (its Z-order index on)."""
    rng = random.Random(seed)
    result: list[Entry] = []
    for index in range(objects):
        user = f"USER{index % USERS:03d}"
        key = f"{user}/upload-{index:07d}.bin"
        moment = datetime.fromtimestamp(rng.randint(*YEAR_2017) / 1000, tz=UTC)
        event = create_event(
            bucket=aws.BUCKET, key=key, user=user, size=log_uniform_size(rng), moment=moment, sequence=index
        )
        item = entry(event, event.order_key, placement)
        result.append(
            Entry(
                key=key,
                user=user,
                shard=models.split_sharded_key(str(item[schema.BUCKET_NAME]))[1],
                upload_ms=zorder.epoch_millis(event.upload_date),
                size=int(str(item[schema.SIZE])),
                address=str(item[schema.Z_ADDRESS]),
                item=item,
            )
        )
    return result


@dataclass(frozen=True)
class PlanCost(cost.PlanCost):
    """What a plan reads for a whole answer; for the Z-order index's 0.3.0 walk, also its depth with
    every range of every shard issued at once."""

    depth_all_at_once: int | None = None


class Model:
    """Exact read counts of each plan over one data set."""

    def __init__(self, data: list[Entry], shard_count: int) -> None:
        self.data = data
        self.shard_count = shard_count
        self.entry_bytes = sum(item_bytes(e.item) for e in data) / len(data)
        self._addresses: dict[int, list[str]] = defaultdict(list)
        self._sizes: dict[int, list[int]] = defaultdict(list)
        self._times: dict[int, list[int]] = defaultdict(list)
        for e in data:
            self._addresses[e.shard].append(e.address)
            self._sizes[e.shard].append(e.size)
            self._times[e.shard].append(e.upload_ms)
        for addresses in self._addresses.values():
            addresses.sort()
        for sizes in self._sizes.values():
            sizes.sort()
        for times in self._times.values():
            times.sort()
        self._user_dates: dict[str, list[int]] = defaultdict(list)
        for e in data:
            self._user_dates[e.user].append(e.upload_ms)
        for dates in self._user_dates.values():
            dates.sort()

    def matches(self, box: zorder.Box, user: str | None = None) -> int:
        return sum(
            1 for e in self.data if (user is None or e.user == user) and box.contains(e.upload_ms, e.size)
        )

    def z_order(self, box: zorder.Box) -> PlanCost:
        ranges = zorder.z_ranges(box, MAX_RANGES)
        read = requests = depth = depth_at_once = 0
        units = 0.0
        for shard in range(self.shard_count):
            addresses = self._addresses.get(shard, [])
            shard_requests = 0
            for lo, hi in ranges:
                count = bisect_right(addresses, hi) - bisect_left(addresses, lo)
                pages = models.range_pages(count, self.entry_bytes)
                read += count
                units += models.range_read_units(count, self.entry_bytes)
                shard_requests += pages
                depth_at_once = max(depth_at_once, pages)
            requests += shard_requests
            depth = max(depth, shard_requests)
        return PlanCost(read, requests, depth, units, depth_at_once)

    def size_index(self, box: zorder.Box) -> PlanCost:
        high = zorder.MAX_SIZE if box.max_size is None else box.max_size
        return self._key_ranges(self._sizes, box.min_size or 0, high)

    def time_index(self, box: zorder.Box) -> PlanCost:
        """The bucket's time index: each shard's time range read in 1 MB pages, shards in parallel."""
        high = zorder.MAX_TIME_MS if box.to_ms is None else box.to_ms
        return self._key_ranges(self._times, box.from_ms or 0, high)

    def _key_ranges(self, sorted_keys: dict[int, list[int]], low: int, high: int) -> PlanCost:
        """Each shard's key range `low`..`high` of an index (its sort keys per shard, sorted), read in 1 MB
        pages, shards in parallel."""
        read = requests = depth = 0
        units = 0.0
        for shard in range(self.shard_count):
            keys = sorted_keys.get(shard, [])
            count = bisect_right(keys, high) - bisect_left(keys, low)
            pages = models.range_pages(count, self.entry_bytes)
            read, requests, depth = read + count, requests + pages, max(depth, pages)
            units += models.range_read_units(count, self.entry_bytes)
        return PlanCost(read, requests, depth, units)

    def newest_page(self, limit: int) -> PlanCost:
        """One newest-first page of the bucket on the time index: each shard's fair share, in parallel."""
        share = min(limit, shards.fair_share(limit, self.shard_count))
        per_shard = [min(share, len(self._times.get(shard, []))) for shard in range(self.shard_count)]
        units = sum(models.range_read_units(count, self.entry_bytes) for count in per_shard)
        return PlanCost(sum(per_shard), self.shard_count, 1, units)

    def user_index(self, box: zorder.Box, user: str, user_shards: int = 1) -> PlanCost:
        dates = self._user_dates.get(user, [])
        low = box.from_ms or 0
        high = zorder.MAX_TIME_MS if box.to_ms is None else box.to_ms
        count = bisect_right(dates, high) - bisect_left(dates, low)
        # A hot user's entries split evenly over its shards, each read in parallel.
        per_shard = math.ceil(count / user_shards)
        pages = models.range_pages(per_shard, self.entry_bytes)
        units = models.range_read_units(per_shard, self.entry_bytes) * user_shards
        return PlanCost(count, pages * user_shards, pages, units)


def model_placement(objects: int) -> ShardPlacement:
    """The default deployment's placement with the Z-order index on."""
    return replace(deployment.shard_placement(), multi_attribute_index=True)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"


@dataclass(frozen=True)
class Reading:
    """The real reader's whole answer to one query on one plan, billed by the memory table."""

    plan: Plan
    read_units: float
    queries: int
    depth: int  # the deepest page, in round trips
    pages: int
    read: int
    returned: int


def read_whole(
    reader: FileReader, table: MemoryTable, query: BucketQuery, *, page: int, plan: Plan | None
) -> Reading:
    """Follow `query`'s cursors to the end on `plan` (None: the reader's choice, without statistics)."""
    table.reset()
    start: ListCursor | None = None
    depth = pages = read = returned = 0
    chosen: Plan | None = None
    while True:
        answer = reader.list_files(query, limit=page, start=start, plan=None if start else plan)
        chosen = answer.ordered_by
        pages, depth = pages + 1, max(depth, answer.round_trips)
        read, returned = read + answer.scanned_count, returned + len(answer.items)
        start = answer.next_cursor
        if start is None:
            assert chosen is not None
            return Reading(chosen, table.consumed_read_units, table.queries, depth, pages, read, returned)


def upload_statistics_of(data: Sequence[Entry]) -> cost.IndexStatistics | None:
    """The statistics the indexer's sample of `data`'s uploads leaves
    (`file_index.rules.upload_statistics`)."""
    counts: Counter[str] = Counter()
    for e in data:
        sample = upload_statistics.upload_sample(e.key, aws.BUCKET, e.size, e.upload_ms)
        if sample is not None:
            counts.update(sample[1])
    return cost.statistics_from_counts(counts)


def statistics_of(data: Sequence[Entry]) -> cost.IndexStatistics:
    """The statistics a backfill of `data` leaves on the index state record."""
    counts: Counter[str] = Counter()
    for e in data:
        counts.update(cost.entry_counts(e.size, e.upload_ms, models.item_bytes(e.item)))
    statistics = cost.statistics_from_counts(counts)
    assert statistics is not None
    return statistics


# The deployments a box is read in (name, the Z-order index on), each by today's reader and by 0.3.0's
# (`bench.reader_030`, without the bucket's time index, as 0.3.0's table).
CONFIGURATIONS = (("default", False), ("Z-order on", True))


@dataclass
class PlanSummary:
    """Over every shape of one deployment: the worst chosen ÷ cheapest, the deepest page, the totals."""

    worst: tuple[float, str] = (0.0, "")
    # A bucket only uploads wrote: the chosen plan with the indexer's sample (after), without statistics
    # (before).
    worst_uploads: tuple[float, str] = (0.0, "")
    worst_uploads_before: tuple[float, str] = (0.0, "")
    deepest: tuple[int, str] = (0, "")
    chosen_units: float = 0.0
    legacy_units: float = 0.0
    cheapest_units: float = 0.0


def plan_rows(data: list[Entry], placement: ShardPlacement, *, page: int) -> list[Row]:
    """Every bucket box shape in both deployments: the chosen plan's read units, Queries and round
    trips, every plan's read units (the cheapest in hindsight), and 0.3.0's reader, side by side."""
    table = MemoryTable("FileMetaData", (e.item for e in data), schema.global_indexes(True))
    statistics = statistics_of(data)
    uploads_only = upload_statistics_of(data)
    rows: list[Row] = []
    for configuration, z_order in CONFIGURATIONS:
        summary = PlanSummary()
        deployed = replace(placement, multi_attribute_index=z_order)
        reader = FileReader(table, deployed)
        legacy = Reader030(table, deployed, bucket_time_index=False)
        for shape in SHAPES:
            query = bucket_query(shape.box)
            readings = {
                plan: read_whole(reader, table, query, page=page, plan=plan) for plan in reader.plans(query)
            }
            chosen = readings[reader.plan(query, statistics=statistics)]
            by_uploads = readings[reader.plan(query, statistics=uploads_only)]
            without = readings[reader.plan(query)]
            before = read_whole(legacy, table, query, page=page, plan=None)
            cheapest = min(readings.values(), key=lambda r: r.read_units)
            if not chosen.returned:
                progress(f"box reads: nothing in {shape.name}: no row")
                continue
            name = f"{shape.name}, {configuration}"
            ratio = chosen.read_units / cheapest.read_units
            if ratio > summary.worst[0]:
                summary.worst = (ratio, name)
            uploads_ratio = by_uploads.read_units / cheapest.read_units
            summary.worst_uploads = max(summary.worst_uploads, (uploads_ratio, name))
            before_ratio = without.read_units / cheapest.read_units
            summary.worst_uploads_before = max(summary.worst_uploads_before, (before_ratio, name))
            if chosen.depth > summary.deepest[0]:
                summary.deepest = (chosen.depth, name)
            summary.chosen_units += chosen.read_units
            summary.legacy_units += before.read_units
            summary.cheapest_units += cheapest.read_units
            every = ", ".join(f"{plan.value} {r.read_units:,.1f}" for plan, r in readings.items())
            rows.append(
                Row.versus(
                    f"13. bucket box, {name}, {len(data):,} objects",
                    "read units, whole answer",
                    chosen.read_units,
                    before.read_units,
                    "0.3.0",
                    note=(
                        f"0.3.0 ÷ now; {chosen.returned:,} matches in {chosen.pages} pages of {page}; "
                        f"chosen {chosen.plan.value}: {chosen.read_units / chosen.pages:,.1f} RCU a page, "
                        f"{chosen.queries:,} Queries, deepest page {chosen.depth} round trips; cheapest "
                        f"in hindsight {cheapest.plan.value} (chosen ÷ cheapest {ratio:.2f}); every plan: "
                        f"{every}; 0.3.0 ({before.plan.value}): {before.queries:,} Queries, deepest page "
                        f"{before.depth} round trips; uploads only: chosen {by_uploads.plan.value} "
                        f"({uploads_ratio:.2f} of the cheapest; without statistics {without.plan.value}, "
                        f"{before_ratio:.2f})"
                    ),
                )
            )
        rows.append(
            Row(
                f"13. bucket boxes, {configuration}: the chosen plan against the cheapest in hindsight",
                "chosen ÷ cheapest, worst",
                summary.worst[0],
                None,
                "",
                None,
                f"worst: {summary.worst[1]}; over every shape the chosen plans read "
                f"{summary.chosen_units:,.1f} RCU, the cheapest {summary.cheapest_units:,.1f}, 0.3.0's "
                f"reader {summary.legacy_units:,.1f}; deepest page: {summary.deepest[0]} round trips "
                f"({summary.deepest[1]})",
            )
        )
        rows.append(
            Row.versus(
                f"13. bucket boxes, {configuration}, uploads only: the chosen plan against the cheapest",
                "chosen ÷ cheapest, worst",
                summary.worst_uploads[0],
                summary.worst_uploads_before[0],
                "before: no statistics",
                note=f"statistics from the indexer's sample of uploads (one in "
                f"{upload_statistics.SAMPLE_ONE_IN}); worst after: {summary.worst_uploads[1]}; worst before "
                f"(the fixed rule): {summary.worst_uploads_before[1]}",
            )
        )
    return rows


def run(*, objects: int, check_objects: int, check_shapes: int, page: int = PAGE) -> list[Row]:
    placement = model_placement(objects)
    progress(f"box reads: {objects:,} entries, {placement.bucket_shards} shards, Z-order index on")
    data = dataset(objects, placement)
    model = Model(data, placement.bucket_shards)
    rows: list[Row] = list(plan_rows(data, placement, page=page))
    for shape in SHAPES:
        if shape.box.min_size is not None or shape.box.max_size is not None:
            continue  # time and size: the Z-order index's or the size index's, above
        matched = model.matches(shape.box)
        timed, legacy = model.time_index(shape.box), model.size_index(shape.box)
        rows.append(
            Row.versus(
                f"13. bucket time range, {shape.name}, {objects:,} objects",
                "items read/returned",
                timed.read / matched,
                legacy.read / matched,
                "0.3.0 default: size index + time filter",
                note=f"0.3.0 ÷ time index; {matched:,} matches; bucket time index: read {timed.read:,} in "
                f"{timed.requests} Queries ({placement.bucket_shards} shards, {timed.depth} deep), "
                f"{timed.read_units:,.1f} RCU; 0.3.0: read {legacy.read:,} in {legacy.requests} Queries, "
                f"{legacy.read_units:,.1f} RCU",
            )
        )
    newest = model.newest_page(100)
    rows.append(
        Row.versus(
            f"13. bucket newest first, page of 100, {objects:,} objects",
            "items read/returned",
            newest.read / 100,
            objects / 100,
            "0.3.0 default: the whole bucket read and sorted",
            note=f"0.3.0 ÷ time index; {newest.requests} Queries in parallel (one round trip), "
            f"{newest.read_units:,.1f} RCU; 0.3.0 had no index by time of a bucket: newest first meant "
            f"reading all {objects:,} entries",
        )
    )
    worst: tuple[float, str] | None = None
    for shape in USER_SHAPES:
        matched = model.matches(shape.box, USER)
        if not matched:
            progress(f"box reads: no file of {USER} in {shape.name}: no row")
            continue
        ours = model.user_index(shape.box, USER)
        z = model.z_order(shape.box)
        amplification = ours.read / matched
        if worst is None or amplification > worst[0]:
            worst = (amplification, shape.name)
        rows.append(
            Row.versus(
                f"13. user box, {shape.name}, {objects:,} objects",
                "items read/returned",
                amplification,
                z.amplification(matched),
                "Z-order index + user filter",
                note=f"Z ÷ user index; {matched:,} of {USER}'s files; user index by date + size filter: "
                f"read {ours.read:,} in {ours.requests} Queries, {ours.read_units:,.1f} RCU; Z-order + "
                f"user filter: read {z.read:,} in {z.requests} Queries, {z.read_units:,.1f} RCU",
            )
        )
    if worst is not None:
        rows.append(
            Row(
                "13. user boxes: when items read per item returned grows",
                "items read/returned",
                worst[0],
                None,
                "",
                None,
                f"worst user box: {worst[1]}; a user box reads the user's files in its time range and "
                "filters size, so it reads 1 / (the share of those files inside the size bounds) per "
                "item returned: it grows as the size bounds narrow against the user's spread of sizes, "
                "not with the time range or the bucket's size; a hot user on n shards reads the same "
                "items in n times the Queries",
            )
        )
    # A bucket only uploads wrote, from 1,000 objects to 100 times this run's.
    scales = [10**power for power in range(3, 9) if 10**power <= 100 * objects]
    rows.extend(
        box_statistics.rows(scales, [(shape.name, shape.box, bucket_query(shape.box)) for shape in SHAPES])
    )
    if check_objects:
        rows.extend(cross_check(check_objects, SHAPES[:check_shapes]))
    return rows


def _iso(ms: int | None) -> str | None:
    return None if ms is None else iso_utc_millis(datetime.fromtimestamp(ms / 1000, tz=UTC))


def bucket_query(box: zorder.Box) -> BucketQuery:
    return BucketQuery(
        aws.BUCKET, min_size=box.min_size, max_size=box.max_size, start=_iso(box.from_ms), end=_iso(box.to_ms)
    )


def user_query(box: zorder.Box, user: str) -> UserQuery:
    return UserQuery(
        user, start=_iso(box.from_ms), end=_iso(box.to_ms), min_size=box.min_size, max_size=box.max_size
    )


@dataclass
class Check:
    """The memory table against moto, for one way of reading, over every box."""

    plan: str
    boxes: int = 0
    read: int = 0  # items read over every page of every box, on the memory table
    moto_read: int = 0
    queries: int = 0
    moto_queries: int = 0
    differences: list[str] = field(default_factory=list)


def cross_check(objects: int, shapes: Sequence[BoxShape] = SHAPES, *, limit: int = 25) -> list[Row]:
    # moto answers a GSI Query by going over the table, and a box is many Queries: a few thousand
    # entries keep this to a minute or two.
    """The real reader over the memory table and over moto, page by page: the same items, the same
    items read, the same Queries, for every box on every plan (Z-order: the walk and 0.3.0's).

    The memory table sets `LastEvaluatedKey` as moto does here (only when more items follow), so the two
    engines answer each Query alike; the bench's figures use DynamoDB's own rule.
    """
    from moto import mock_aws

    placement = model_placement(objects)
    data = dataset(objects, placement, seed=5)
    memory = MemoryTable(
        "FileMetaData", (e.item for e in data), schema.global_indexes(True), key_only_when_more=True
    )
    ways: tuple[tuple[str, Plan, type[FileReader]], ...] = (
        ("size", Plan.SIZE, FileReader),
        ("uploadDate", Plan.UPLOAD_DATE, FileReader),
        ("zAddress walk", Plan.Z_ORDER, FileReader),
        ("zAddress 0.3.0", Plan.Z_ORDER, Reader030),
    )
    checks = {name: Check(name) for name, _, _ in ways}
    with aws.fake_credentials(), mock_aws():
        progress(f"box reads: cross-check of the memory table against moto, {objects:,} entries")
        table = reading.load("FileMetaDataBoxes", (e.item for e in data), multi_attribute_index=True)
        for shape in shapes:
            query = bucket_query(shape.box)
            for name, plan, reader in ways:
                on_moto = _paged(reader(table, placement), query, plan, limit)
                memory.reset()
                on_memory = _paged(reader(memory, placement), query, plan, limit)
                check = checks[name]
                check.boxes += 1
                check.read += sum(p[1] for p in on_memory)
                check.moto_read += sum(p[1] for p in on_moto)
                check.queries += sum(p[2] for p in on_memory)
                check.moto_queries += sum(p[2] for p in on_moto)
                if on_memory != on_moto:
                    check.differences.append(f"{shape.name}: the pages differ")
    return [
        Row.versus(
            f"13. cross-check at {objects:,} objects: the memory table against moto, {check.plan}",
            "items read",
            check.read,
            check.moto_read,
            "moto",
            note=(
                "equal for every box"
                if not check.differences
                else "DIFFERS: " + "; ".join(check.differences[:4])
            )
            + f"; {check.boxes} boxes read to the end in pages of {limit}: {check.queries:,} Queries on the "
            f"memory table, {check.moto_queries:,} on moto",
        )
        for check in checks.values()
    ]


def _paged(
    reader: FileReader, query: BucketQuery, plan: Plan, limit: int
) -> list[tuple[list[str], int, int]]:
    """Each page's keys, items read and Queries, following the cursors to the end."""
    pages: list[tuple[list[str], int, int]] = []
    start: ListCursor | None = None
    while True:
        answer = reader.list_files(query, limit=limit, start=start, plan=None if start else plan)
        pages.append(
            (
                [str(item[schema.OBJECT_KEY]) for item in answer.items],
                answer.scanned_count,
                answer.request_count,
            )
        )
        start = answer.next_cursor
        if start is None:
            return pages
