"""The cost model the planner, the bench and the docs share: read units, statistics and plan estimates."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import models
from file_index.rules import cost, zorder


def test_a_query_is_billed_half_a_unit_per_started_4_kb_and_never_less_than_half() -> None:
    assert cost.query_read_units(0) == 0.5
    assert cost.query_read_units(1) == 0.5
    assert cost.query_read_units(4096) == 0.5
    assert cost.query_read_units(4097) == 1.0
    assert cost.query_read_units(1024 * 1024) == 128.0
    # A key range read in one go: 1 MB responses, each billed.
    assert models.range_pages(0, 300) == 1
    assert models.range_pages(10_000, 300) == 3
    assert models.range_read_units(0, 300) == 0.5
    assert models.range_read_units(10_000, 300) == cost.query_read_units(3_000_000)


def test_item_bytes_follow_dynamodbs_rules() -> None:
    assert models.item_bytes({"objectKey": "ab", "size": 12345, "deleted": True}) == 9 + 2 + 4 + 4 + 7 + 1
    assert models.item_bytes({"tags": {"k": "v"}}) == 4 + 2


def _statistics(entries: list[tuple[int, int]]) -> cost.IndexStatistics:
    counts: Counter[str] = Counter()
    for size, upload_ms in entries:
        counts.update(cost.entry_counts(size, upload_ms, 300))
    statistics = cost.statistics_from_counts(counts)
    assert statistics is not None
    return statistics


JAN = zorder.epoch_millis("2017-01-01T00:00:00.000Z")
FEB = zorder.epoch_millis("2017-02-01T00:00:00.000Z")
MAR = zorder.epoch_millis("2017-03-01T00:00:00.000Z")


def test_statistics_count_octaves_and_months_and_shares_spread_evenly_inside_a_bin() -> None:
    statistics = _statistics([(1000, JAN + 5), (1500, JAN + 10), (3000, FEB + 1), (0, FEB + 2)])
    assert statistics.count == 4
    assert statistics.entry_bytes == 300
    assert statistics.sizes == {10: 1, 11: 1, 12: 1, 0: 1}  # by bit length: 1000, 1500, 3000, 0
    assert statistics.months == {"2017-01": 2, "2017-02": 2}
    assert statistics.size_share(None, None) == 1.0
    assert statistics.size_share(0, 0) == 0.25
    # Bin 11 holds 1024..2047: half of it is 1024..1535.
    assert statistics.size_share(1024, 1535) == pytest.approx(0.25 * 0.5)
    assert statistics.size_share(1024, None) == pytest.approx(0.5)
    assert statistics.time_share(JAN, FEB - 1) == pytest.approx(0.5)
    assert statistics.time_share(FEB, MAR - 1) == pytest.approx(0.5)
    # Half of January.
    assert statistics.time_share(JAN, JAN + (FEB - JAN) // 2 - 1) == pytest.approx(0.25, rel=1e-6)


def test_uploads_since_the_listing_are_projected_at_its_recent_rate_up_to_now() -> None:
    day, hour = 86_400_000, 3_600_000
    counts: Counter[str] = Counter()
    for n in range(31):  # one upload a day in January 2017
        counts.update(cost.entry_counts(10, JAN + n * day, 300))
    listed_then = cost.statistics_from_counts(counts, as_of_ms=FEB)
    assert listed_then is not None
    # An hour after the listing began: about one upload a day, so 1/24 of one, of 31 counted.
    share = listed_then.time_share(FEB + 10 * hour, FEB + 11 * hour - 1)
    assert share == pytest.approx(1 / 24 / 31, rel=0.05)
    # A range open to the future: the projection ends now, so it is never thought to hold everything
    # because of time to come.
    assert listed_then.time_share(JAN + 30 * day, None) == 1.0  # the projection since 2017 is long
    future = int(datetime(2200, 1, 1, tzinfo=UTC).timestamp() * 1000)
    assert listed_then.time_share(future, None) == 0.0
    # Without the listing's time: nothing projected.
    unknown = cost.statistics_from_counts(counts)
    assert unknown is not None
    assert unknown.time_share(FEB, None) == 0.0
    # A listing whose last 30 days saw no upload projects none.
    quiet = cost.statistics_from_counts(counts, as_of_ms=MAR + 60 * day)
    assert quiet is not None
    assert quiet.time_share(MAR + 61 * day, None) == 0.0


def test_no_entries_no_statistics_and_unknown_counters_are_ignored() -> None:
    assert cost.statistics_from_counts({}) is None
    assert cost.statistics_from_counts({"entries": 0, "size3": 4}) is None
    known = cost.statistics_from_counts(
        {"entries": 2, "bytes": 0, "size3": 2, "monthbad": 1, "month2017-13": 1}
    )
    assert known is not None
    assert known.entry_bytes == cost.DEFAULT_ENTRY_BYTES
    assert known.months == {}


@dataclass(frozen=True)
class Listed:
    key: str
    size: int
    last_modified: datetime


def test_listing_counts_are_the_statistics_of_the_objects_listed() -> None:
    moment = datetime(2017, 8, 20, 9, 15, tzinfo=UTC)
    counts = cost.listing_counts([Listed("u/a.txt", 5, moment), Listed("u/b.txt", 2**20, moment)], "bucket")
    assert counts == {
        "entries": 2,
        "bytes": 2 * (cost.ENTRY_OVERHEAD_BYTES + 2 * 7 + 6),
        "size3": 1,
        "size21": 1,
        "month2017-08": 2,
    }


@given(st.integers(0, 2**63 - 1))
def test_every_size_has_a_bin_holding_it(size: int) -> None:
    number = cost.size_bin(size)
    assert (0 if number == 0 else 1 << (number - 1)) <= size <= (0 if number == 0 else (1 << number) - 1)


def _year(count: int, seed: int = 1) -> cost.IndexStatistics:
    rng = Random(seed)
    return _statistics(
        [(int(10 ** rng.uniform(0, 10)), JAN + rng.randrange(365 * 86_400_000)) for _ in range(count)]
    )


def test_the_estimates_rank_the_plans_as_their_keys_say() -> None:
    statistics = _year(20_000)
    day = zorder.Box(from_ms=JAN + 100 * 86_400_000, to_ms=JAN + 101 * 86_400_000 - 1, min_size=10**8)
    year = zorder.Box(from_ms=JAN, to_ms=JAN + 365 * 86_400_000 - 1, min_size=10**6, max_size=2 * 10**6)

    def units(plan: str, box: zorder.Box) -> float:
        return cost.estimate_plan(plan, statistics, box, shards=16, page=100).read_units

    # One day of large files: the time index keys on it; the size index reads every large file.
    assert units("uploadDate", day) < units("size", day) / 10
    # The year's 1-2 MB files: the size index keys on them; the time index reads the whole year.
    assert units("size", year) < units("uploadDate", year) / 10
    # A Query a shard at least, whatever the box.
    empty = zorder.Box(from_ms=MAR + 10**12, to_ms=MAR + 10**12 + 1, min_size=1, max_size=2)
    assert units("zAddress", empty) >= 16 * 0.5
    with pytest.raises(ValueError, match="no cost model"):
        cost.estimate_plan("scan", statistics, year, shards=16, page=100)


def test_the_walk_meets_more_stretches_where_the_data_is_denser_and_the_box_thinner() -> None:
    sparse, dense = _year(2_000), _year(200_000)
    thin = zorder.Box(from_ms=JAN, to_ms=JAN + 365 * 86_400_000 - 1, min_size=10**6, max_size=2 * 10**6)
    assert cost.z_walk_stretches(thin, dense, 16) > cost.z_walk_stretches(thin, sparse, 16) >= 1
    # Before the first upload: nothing to meet, one Query a shard.
    past = zorder.Box(from_ms=JAN - 10**11, to_ms=JAN - 10**11 + 86_400_000, min_size=1, max_size=2)
    assert cost.z_walk_stretches(past, dense, 16) == 1


def test_shares_are_fractions() -> None:
    statistics = _year(1_000)
    now = datetime(2017, 6, 1, tzinfo=UTC)
    for days in (1, 30, 400, 10_000):
        start = int(now.timestamp() * 1000)
        end = int((now + timedelta(days=days)).timestamp() * 1000)
        assert 0.0 <= statistics.time_share(start, end) <= 1.0
    for low, high in ((0, 1), (10, 10**6), (10**9, None), (None, 5)):
        assert 0.0 <= statistics.size_share(low, high) <= 1.0
