"""Measure 13: box queries: items read per item returned, and DynamoDB round trips, by plan.

The data are docs/scaling.md's (section 4): `objects` uploads to one bucket, uniform over 2017 in time,
log-uniform from 1 B to 10 GiB in size, spread evenly over `USERS` uploaders; each entry is the writer's
own (`bench.entries.entry`) under the default layout with the Z-order index on, so its shard and its
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

`cross_check` compares the model with the real reader on a smaller table on moto: for each box and plan,
the `scanned_count` the reader reports over the whole answer must equal the model's count.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from bench import aws, deployment, reading
from bench.entries import YEAR_2017, create_event, entry, item_bytes, log_uniform_size
from bench.report import Row, progress
from file_index import schema, shards, zorder
from file_index.layout import IndexLayout
from file_index.objects import iso_utc_millis
from file_index.reader import BucketQuery, UserQuery

USERS = 10  # 10,000 files each at 100k objects, so narrow user boxes still match something
USER = "USER007"
MAX_RANGES = zorder.DEFAULT_MAX_RANGES
PAGE_BYTES = 1024 * 1024  # DynamoDB stops a Query response at 1 MB read
KB, MB, GB = 10**3, 10**6, 10**9
GIB = 1024**3
READ_UNIT_BYTES = 4096  # an eventually consistent read: half a read unit per started 4 KB


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


def dataset(objects: int, layout: IndexLayout, *, seed: int = 2017) -> list[Entry]:
    """`objects` entries as the writer builds them under `layout` (which must have the Z-order index on)."""
    rng = random.Random(seed)
    result: list[Entry] = []
    for index in range(objects):
        user = f"USER{index % USERS:03d}"
        key = f"{user}/upload-{index:07d}.bin"
        moment = datetime.fromtimestamp(rng.randint(*YEAR_2017) / 1000, tz=UTC)
        event = create_event(
            bucket=aws.BUCKET, key=key, user=user, size=log_uniform_size(rng), moment=moment, sequence=index
        )
        item = entry(event, event.order_key, layout)
        result.append(
            Entry(
                key=key,
                user=user,
                shard=shards.split_sharded_key(str(item[schema.BUCKET_NAME]))[1],
                upload_ms=zorder.epoch_millis(event.upload_date),
                size=int(str(item[schema.SIZE])),
                address=str(item[schema.Z_ADDRESS]),
                item=item,
            )
        )
    return result


def _pages(items: int, entry_bytes: float) -> int:
    """Requests to read `items` consecutive items of one key range: at least one, one per 1 MB."""
    return max(1, math.ceil(items * entry_bytes / PAGE_BYTES))


def _read_units(items: int, entry_bytes: float) -> float:
    """Read units of reading `items` of one key range (every request is billed, even an empty one)."""
    pages = _pages(items, entry_bytes)
    return max(pages * 0.5, math.ceil(items * entry_bytes / READ_UNIT_BYTES) * 0.5)


@dataclass(frozen=True)
class PlanCost:
    """What a plan reads for a whole answer."""

    read: int
    requests: int
    depth: int  # round trips in sequence (shards run in parallel)
    read_units: float  # eventually consistent: 0.5 per started 4 KB of each response, at least 0.5
    depth_all_at_once: int | None = None  # Z-order: every range of every shard issued at once

    def amplification(self, matched: int) -> float | None:
        return self.read / matched if matched else None


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
                pages = _pages(count, self.entry_bytes)
                read += count
                units += _read_units(count, self.entry_bytes)
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
            pages = _pages(count, self.entry_bytes)
            read, requests, depth = read + count, requests + pages, max(depth, pages)
            units += _read_units(count, self.entry_bytes)
        return PlanCost(read, requests, depth, units)

    def newest_page(self, limit: int) -> PlanCost:
        """One newest-first page of the bucket on the time index: each shard's fair share, in parallel."""
        share = min(limit, shards.fair_share(limit, self.shard_count))
        per_shard = [min(share, len(self._times.get(shard, []))) for shard in range(self.shard_count)]
        units = sum(_read_units(count, self.entry_bytes) for count in per_shard)
        return PlanCost(sum(per_shard), self.shard_count, 1, units)

    def user_index(self, box: zorder.Box, user: str, user_shards: int = 1) -> PlanCost:
        dates = self._user_dates.get(user, [])
        low = box.from_ms or 0
        high = zorder.MAX_TIME_MS if box.to_ms is None else box.to_ms
        count = bisect_right(dates, high) - bisect_left(dates, low)
        # A hot user's entries split evenly over its shards, each read in parallel.
        per_shard = math.ceil(count / user_shards)
        pages = _pages(per_shard, self.entry_bytes)
        units = _read_units(per_shard, self.entry_bytes) * user_shards
        return PlanCost(count, pages * user_shards, pages, units)


def model_layout(objects: int) -> IndexLayout:
    """The default deployment's layout with the Z-order index on."""
    return replace(deployment.index_layout(), multi_attribute_index=True)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"


def run(*, objects: int, check_objects: int, check_shapes: int) -> list[Row]:
    layout = model_layout(objects)
    progress(f"box reads: {objects:,} entries, {layout.bucket_shards} shards, Z-order index on")
    model = Model(dataset(objects, layout), layout.bucket_shards)
    rows: list[Row] = []
    for shape in SHAPES:
        matched = model.matches(shape.box)
        if not matched:
            progress(f"box reads: nothing in {shape.name}: no row")
            continue
        z = model.z_order(shape.box)
        single = model.size_index(shape.box)
        rows.append(
            Row.versus(
                f"13. bucket box, {shape.name}, {objects:,} objects",
                "items read/returned",
                z.read / matched,
                single.read / matched,
                "bucket index by size + time filter",
                note=f"single ÷ Z; {matched:,} matches; Z-order: read {z.read:,} in {z.requests} Queries "
                f"({MAX_RANGES} ranges x {layout.bucket_shards} shards), {z.depth} round trips deep walking "
                f"each shard's ranges in turn, {z.depth_all_at_once} all at once, {z.read_units:,.1f} RCU; "
                f"size index: read {single.read:,} in {single.requests} Queries, {single.depth} deep, "
                f"{single.read_units:,.1f} RCU",
            )
        )
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
                f"{timed.requests} Queries ({layout.bucket_shards} shards, {timed.depth} deep), "
                f"{timed.read_units:,.1f} RCU; 0.3.0: read {legacy.read:,} in {legacy.requests} Queries, "
                f"{legacy.read_units:,.1f} RCU",
            )
        )
    page = model.newest_page(100)
    rows.append(
        Row.versus(
            f"13. bucket newest first, page of 100, {objects:,} objects",
            "items read/returned",
            page.read / 100,
            objects / 100,
            "0.3.0 default: the whole bucket read and sorted",
            note=f"0.3.0 ÷ time index; {page.requests} Queries in parallel (one round trip), "
            f"{page.read_units:,.1f} RCU; 0.3.0 had no index by time of a bucket: newest first meant "
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
    """The reader against the model, over the boxes of one plan."""

    plan: str
    boxes: int = 0
    read: int = 0  # the reader's scanned_count, over every page of every box
    modelled: int = 0  # the model's count
    requests: int = 0
    pages: int = 0
    differences: list[str] = field(default_factory=list)

    def add(self, name: str, answer: reading.WholeAnswer, modelled: int, truth: set[str]) -> None:
        self.boxes += 1
        self.read += answer.scanned
        self.modelled += modelled
        self.requests += answer.requests
        self.pages += answer.pages
        keys = [str(item[schema.OBJECT_KEY]) for item in answer.returned]
        if len(keys) != len(set(keys)) or set(keys) != truth:
            self.differences.append(f"{name}: answered {len(keys)} items, {len(truth)} match")
        if answer.scanned != modelled:
            self.differences.append(f"{name}: read {answer.scanned}, model {modelled}")


def cross_check(objects: int, shapes: Sequence[BoxShape] = SHAPES, *, limit: int = 1000) -> list[Row]:
    # moto answers a GSI Query by going over the table, and a box is hundreds of Queries: a few thousand
    # entries keep this to a minute or two, and the counts it checks do not depend on the table's size.
    """The real reader on moto, each box read to its end: its `scanned_count` against the model's count.

    A page that ends on its request bound resumes after what it read, and a page never fills (`limit`
    above any box's matches here), so a whole answer reads each item of its key ranges once: exactly
    the model's count. The answer itself is checked against the brute-force truth.
    """
    from moto import mock_aws

    layout = model_layout(objects)
    data = dataset(objects, layout, seed=5)
    model = Model(data, layout.bucket_shards)
    checks = [Check("Z-order index"), Check("bucket index by size + filter"), Check("user index + filter")]
    with aws.fake_credentials(), mock_aws():
        progress(f"box reads: cross-check through the reader, {objects:,} entries on moto")
        table = reading.load("FileMetaDataBoxes", (e.item for e in data), multi_attribute_index=True)
        with reading.reader(table, layout) as files:
            for shape in shapes:
                truth = {e.key for e in data if shape.box.contains(e.upload_ms, e.size)}
                user_truth = {
                    e.key for e in data if e.user == USER and shape.box.contains(e.upload_ms, e.size)
                }
                for check, query, ready, modelled, expected in (
                    (checks[0], bucket_query(shape.box), True, model.z_order(shape.box).read, truth),
                    (checks[1], bucket_query(shape.box), False, model.size_index(shape.box).read, truth),
                    (
                        checks[2],
                        user_query(shape.box, USER),
                        True,
                        model.user_index(shape.box, USER).read,
                        user_truth,
                    ),
                ):
                    answer = reading.read_all(files, query, limit=limit, z_order_ready=ready)
                    check.add(shape.name, answer, modelled, expected)
    return [
        Row.versus(
            f"13. cross-check at {objects:,} objects: the reader's items read, {check.plan}",
            "items read",
            check.read,
            check.modelled,
            "model",
            note=(
                "equal for every box"
                if not check.differences
                else "DIFFERS: " + "; ".join(check.differences[:4])
            )
            + f"; {check.boxes} boxes read to the end in {check.pages} pages, {check.requests} Queries; "
            "every page's counts equal DynamoDB's own ScannedCount and Query calls",
        )
        for check in checks
    ]
