"""What a search costs in read units and round trips: one model for the planner, the bench and the docs.

DynamoDB bills a Query by the bytes it *reads* (filtered items included), not by what it returns:
the sum of the items' sizes, rounded up to the next 4 KB, half a read unit per 4 KB for the eventually
consistent reads a search makes, and at least half a unit even for a Query that reads nothing. A
response stops at 1 MB read. So a plan costs about

    read units = 0.5 x sum over its Queries of max(1, ceil(bytes read / 4 KB))

which is `query_read_units` per Query (the bench's `bench.models` builds its key-range and item-size
models on it).

`estimate_plan` predicts a plan's read units for a whole answer from what the planner can
know cheaply: the box, the shard count and `IndexStatistics` (a bucket's entry count, mean entry size,
and histograms of sizes by octave and upload times by month): a backfill's or reconcile's listing, or
the sample of uploads the indexer keeps (`file_index.rules.upload_statistics`).
"""

from __future__ import annotations

import heapq
import math
import time
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from file_index.rules import zorder
from file_index.rules.shards import fair_share

READ_UNIT_BYTES = 4096  # an eventually consistent read unit covers 2 x 4 KB; half a unit per 4 KB
QUERY_RESPONSE_BYTES = 1024 * 1024  # DynamoDB stops a Query response at 1 MB read
QUERY_MIN_READ_UNITS = 0.5
# An entry as the writer stores it is about 300 bytes (the bench's data: 310); used without statistics.
DEFAULT_ENTRY_BYTES = 320


def query_read_units(bytes_read: float) -> float:
    """Read units of one eventually consistent Query that read `bytes_read` bytes (filtered items too)."""
    return QUERY_MIN_READ_UNITS * max(1, math.ceil(bytes_read / READ_UNIT_BYTES))


@dataclass(frozen=True)
class PlanCost:
    """What a plan reads for a whole answer, or for one page."""

    read: int  # items read (DynamoDB's ScannedCount), filtered ones included
    requests: int  # Queries
    depth: int  # round trips in sequence (shards run in parallel)
    read_units: float

    def amplification(self, matched: int) -> float | None:
        return self.read / matched if matched else None


# Statistics --------------------------------------------------------------------------------------------

_RATE_WINDOW_MS = 30 * 86_400_000
SIZE_BINS = 64  # by bit length: bin b holds sizes 2**(b-1) .. 2**b - 1 (bin 0 holds size 0)


def size_bin(size: int) -> int:
    return min(SIZE_BINS - 1, max(0, size).bit_length())


def month_of(upload_ms: int) -> str:
    """The histogram bin of an upload time: its UTC month, "YYYY-MM"."""
    return datetime.fromtimestamp(upload_ms / 1000, tz=UTC).strftime("%Y-%m")


def _month_bounds(month: str) -> tuple[int, int]:
    year, number = int(month[:4]), int(month[5:7])
    start = datetime(year, number, 1, tzinfo=UTC)
    end = datetime(year + (number == 12), number % 12 + 1, 1, tzinfo=UTC)
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000) - 1


def _overlap(low: float, high: float, bin_low: float, bin_high: float) -> float:
    """The share of the bin `bin_low..bin_high` (inclusive) inside `low..high`, values uniform in it."""
    if high < bin_low or low > bin_high:
        return 0.0
    width = bin_high - bin_low + 1
    return (min(high, bin_high) - max(low, bin_low) + 1) / width


@dataclass(frozen=True)
class _Bins:
    """Disjoint inclusive intervals, sorted, with a count each: the mass of any range in O(log n)."""

    lows: tuple[float, ...]
    highs: tuple[float, ...]
    counts: tuple[int, ...]
    prefix: tuple[int, ...]  # prefix[i] = sum of counts[:i]

    @classmethod
    def of(cls, unsorted: Sequence[tuple[float, float, int]]) -> _Bins:
        bins = sorted(b for b in unsorted if b[2] > 0)
        prefix = [0]
        for _, _, count in bins:
            prefix.append(prefix[-1] + count)
        return cls(
            tuple(b[0] for b in bins), tuple(b[1] for b in bins), tuple(b[2] for b in bins), tuple(prefix)
        )

    @property
    def total(self) -> int:
        return self.prefix[-1]

    def mass(self, low: float, high: float) -> float:
        """The count inside `low..high`, values spread evenly inside each bin."""
        first = bisect_left(self.highs, low)  # the first bin reaching `low`
        last = bisect_right(self.lows, high) - 1  # the last bin starting by `high`
        if first > last:
            return 0.0
        if first == last:
            return self.counts[first] * _overlap(low, high, self.lows[first], self.highs[first])
        edges = self.counts[first] * _overlap(low, high, self.lows[first], self.highs[first])
        edges += self.counts[last] * _overlap(low, high, self.lows[last], self.highs[last])
        return edges + self.prefix[last] - self.prefix[first + 1]


@dataclass(frozen=True)
class IndexStatistics:
    """What the index state record knows of a bucket's entries: their count and mean size, and how many
    lie in each size octave (`sizes`, by `size_bin`) and upload month (`months`, by `month_of`).

    Shares of a box assume size and time independent, and values spread evenly inside a bin. Uploads
    since the listing (`as_of_ms`, the run's start) are not counted: the time from then up to now is
    taken to hold uploads at the rate of the 30 days before it.
    """

    count: int
    entry_bytes: float = DEFAULT_ENTRY_BYTES
    sizes: Mapping[int, int] = field(default_factory=dict)
    months: Mapping[str, int] = field(default_factory=dict)
    as_of_ms: int | None = None  # when the listing began (the run's start): later uploads are projected

    @cached_property
    def _size_bins(self) -> _Bins:
        return _Bins.of(
            [
                (0, 0, count) if number == 0 else (1 << (number - 1), (1 << number) - 1, count)
                for number, count in self.sizes.items()
            ]
        )

    @cached_property
    def _months_counted(self) -> int:
        return sum(self.months.values())

    @cached_property
    def _month_bins(self) -> _Bins:
        bins = [(*_month_bounds(month), count) for month, count in self.months.items()]
        now_ms = int(time.time() * 1000)
        if self.as_of_ms is not None and now_ms > self.as_of_ms:
            # Uploads go on after the listing: from then up to now (nothing is uploaded in the future) at
            # the rate of the 30 days before it.
            recent = _Bins.of(bins).mass(self.as_of_ms - _RATE_WINDOW_MS, self.as_of_ms)
            projected = round(recent * (now_ms - self.as_of_ms) / _RATE_WINDOW_MS)
            bins.append((self.as_of_ms + 1, now_ms, projected))
        return _Bins.of(bins)

    def size_share(self, low: int | None, high: int | None) -> float:
        """The share of entries with a size in `low..high` (None: open)."""
        bins = self._size_bins
        if (low is None and high is None) or bins.total == 0:
            return 1.0
        return bins.mass(low or 0, zorder.MAX_SIZE if high is None else high) / bins.total

    def time_share(self, from_ms: int | None, to_ms: int | None) -> float:
        """The share of entries uploaded in `from_ms..to_ms` (None: open); the months after the last
        counted one, projected, count in the whole too, so a recent range is never thought empty."""
        bins = self._month_bins
        if (from_ms is None and to_ms is None) or bins.total == 0:
            return 1.0
        low = -1 if from_ms is None else from_ms
        high = zorder.MAX_TIME_MS if to_ms is None else to_ms
        return min(1.0, bins.mass(low, high) / self._months_counted)


def estimate_plan(
    plan: str,
    statistics: IndexStatistics,
    box: zorder.Box,
    *,
    shards: int,
    page: int,
) -> PlanCost:
    """The estimated cost of reading a whole bucket box on `plan` ("size", "uploadDate", "zAddress"), in
    pages of `page` items over `shards` shards.

    A key range and a filter (the size index filtering time, the time index filtering size): each of the
    answer's pages reads, in every shard, the shard's part of a page divided by the share of keyed items
    the filter keeps (at most the shard's whole key range), in one Query. The Z-order walk: every page
    reads the shard's part (one Query, about a read unit), and every shard makes one more Query for each
    stretch of the box it must jump to (`z_walk_stretches`).
    """
    size_share = statistics.size_share(box.min_size, box.max_size)
    time_share = statistics.time_share(box.from_ms, box.to_ms)
    matches = statistics.count * size_share * time_share
    pages = max(1, math.ceil(matches / page))
    share = fair_share(page, shards)
    if plan == "zAddress":
        stretches = z_walk_stretches(box, statistics, shards)
        queries = pages * shards + stretches * shards
        units = pages * shards * query_read_units(share * statistics.entry_bytes)
        units += stretches * shards * QUERY_MIN_READ_UNITS
        return PlanCost(round(matches), queries, pages + stretches, units)
    if plan == "size":
        keyed = statistics.count * size_share
    elif plan == "uploadDate":
        keyed = statistics.count * time_share
    else:
        raise ValueError(f"no cost model for plan {plan!r}")
    kept = matches / keyed if keyed else 1.0
    per_shard = min(keyed / shards, share / kept) if kept else keyed / shards
    units = pages * shards * query_read_units(per_shard * statistics.entry_bytes)
    return PlanCost(round(pages * shards * per_shard), pages * shards, pages, units)


# A cell of z-space expected to hold fewer entries than this in a shard is read through, not jumped over.
Z_WALK_READ_THROUGH = 4
Z_WALK_MAX_SPLITS = 512


def z_walk_stretches(box: zorder.Box, statistics: IndexStatistics, shards: int) -> int:
    """About how many separate stretches of a shard's z-order the walk jumps between for `box`.

    The box's z-space is split like a quadtree (`zorder.ZCurve.ranges`), keeping a cell whole once it is
    inside the box or expected to hold fewer than `Z_WALK_READ_THROUGH` entries of a shard (what one Query
    reads through anyway) and dropping cells outside the box; the stretches are the runs of kept cells.
    """
    curve, codes = zorder.UPLOAD_SIZE_CURVE, box.codes()
    per_shard = statistics.count / max(1, shards)
    bits = len(curve.axes)
    x_top, y_top = (1 << curve.x_bits) - 1, (1 << curve.y_bits) - 1
    cells = [(0, 0, 0, x_top, 0, y_top)]
    kept: list[tuple[int, int]] = []
    splits = 0
    while cells:
        level, low, x_lo, x_hi, y_lo, y_hi = heapq.heappop(cells)
        size = 1 << (bits - level)
        inside = codes.x_lo <= x_lo and x_hi <= codes.x_hi and codes.y_lo <= y_lo and y_hi <= codes.y_hi
        if inside or splits >= Z_WALK_MAX_SPLITS or level == bits:
            kept.append((low, low + size - 1))
            continue
        sizes = (
            zorder.size_floor(y_lo),
            zorder.MAX_SIZE if y_hi == y_top else zorder.size_floor(y_hi + 1) - 1,
        )
        if (
            per_shard * statistics.time_share(x_lo, x_hi) * statistics.size_share(*sizes)
            < Z_WALK_READ_THROUGH
        ):
            kept.append((low, low + size - 1))
            continue
        splits += 1
        for child_low, cx_lo, cx_hi, cy_lo, cy_hi in curve.halves(level, low, x_lo, x_hi, y_lo, y_hi):
            if cx_hi < codes.x_lo or cx_lo > codes.x_hi or cy_hi < codes.y_lo or cy_lo > codes.y_hi:
                continue  # outside the box: jumped over
            heapq.heappush(cells, (level + 1, child_low, cx_lo, cx_hi, cy_lo, cy_hi))
    stretches, end = 0, -2
    for low, high in sorted(kept):
        if low > end + 1:
            stretches += 1
        end = high
    return stretches


STATISTICS_ENTRIES = "entries"
STATISTICS_BYTES = "bytes"
_SIZE_PREFIX = "size"
_MONTH_PREFIX = "month"


def entry_counts(size: int, upload_ms: int, entry_bytes: int) -> dict[str, int]:
    """The statistics counters one entry adds (kept on the index state record, added up by every worker
    of a backfill or a reconcile): one entry, its bytes, one in its size octave and one in its month."""
    return {
        STATISTICS_ENTRIES: 1,
        STATISTICS_BYTES: entry_bytes,
        f"{_SIZE_PREFIX}{size_bin(size)}": 1,
        f"{_MONTH_PREFIX}{month_of(upload_ms)}": 1,
    }


def statistics_from_counts(
    counts: Mapping[str, int], *, as_of_ms: int | None = None
) -> IndexStatistics | None:
    """The statistics that `entry_counts` counters add up to, of a listing begun at `as_of_ms`; None
    without entries (nothing known)."""
    entries = counts.get(STATISTICS_ENTRIES, 0)
    if entries <= 0:
        return None
    sizes: dict[int, int] = {}
    months: dict[str, int] = {}
    for name, value in counts.items():
        if value <= 0:
            continue  # a counter damaged by hand: what it would say is not known
        size, month = name.removeprefix(_SIZE_PREFIX), name.removeprefix(_MONTH_PREFIX)
        if size != name and size.isdigit() and int(size) < SIZE_BINS:
            sizes[int(size)] = value
        elif month != name and _is_month(month):
            months[month] = value
    mean = counts.get(STATISTICS_BYTES, 0) / entries
    return IndexStatistics(
        count=entries,
        entry_bytes=mean if mean > 0 else DEFAULT_ENTRY_BYTES,
        sizes=sizes,
        months=months,
        as_of_ms=as_of_ms,
    )


def _is_month(text: str) -> bool:
    return (
        len(text) == 7
        and text[4] == "-"
        and text[:4].isdigit()
        and text[5:].isdigit()
        and 1970 <= int(text[:4]) <= 2109
        and 1 <= int(text[5:]) <= 12
    )


# An entry's bytes besides its key (twice: objectKey and fileId) and bucket: the bench's entries (310
# bytes with 26-character keys) less their keys and bucket name.
ENTRY_OVERHEAD_BYTES = 242


def estimated_entry_bytes(object_key: str, bucket: str) -> int:
    """About what the entry of `object_key` in `bucket` weighs, from the key and bucket lengths."""
    key_bytes = len(object_key.encode("utf-8", "surrogatepass"))
    return ENTRY_OVERHEAD_BYTES + 2 * key_bytes + len(bucket.encode("utf-8"))


def listing_counts(objects: Iterable[Any], bucket: str) -> Counter[str]:
    """The statistics counters of listed objects (each with `key`, `size` and `last_modified`), their
    entries' bytes estimated from the key and bucket lengths."""
    total: Counter[str] = Counter()
    for listed in objects:
        upload_ms = int(listed.last_modified.timestamp() * 1000)
        total.update(
            entry_counts(int(listed.size), upload_ms, estimated_entry_bytes(str(listed.key), bucket))
        )
    return total
