"""Measure 20's rows: every size beside the smallest, time per million extrapolated linearly."""

from __future__ import annotations

import pytest

from bench.name_maintenance import SyncRun, per_million, rows


def _run(entries: int, seconds: float, peak: float, rss: float) -> SyncRun:
    counts = {"put": 1, "nameItems": 3}
    return SyncRun(entries, seconds, peak, rss, 60.0, counts)


def test_seconds_per_million_are_extrapolated_linearly() -> None:
    assert per_million(20.0, 1000) == pytest.approx(20_000.0)
    assert per_million(0.5, 500_000) == pytest.approx(1.0)


def test_each_size_is_compared_with_the_smallest() -> None:
    measured = {"index-names (move)": [_run(1000, 20.0, 70.0, 50.0), _run(4000, 100.0, 70.0, 0.0)]}

    table = {row.measure: row for row in rows(measured)}

    assert len(table) == 8
    per_m = table["20. index-names (move), 4,000 entries: time per million entries"]
    assert (per_m.ours, per_m.comparison, per_m.ratio) == (25_000.0, 20_000.0, 1.25)
    peak = table["20. index-names (move), 4,000 entries: peak Python memory"]
    assert (peak.ours, peak.ratio) == (70.0, 1.0)
    assert table["20. index-names (move), 4,000 entries: peak RSS growth"].ratio == 0.0
    wall = table["20. index-names (move), 1,000 entries: wall time"]
    assert (wall.ours, wall.comparison, wall.ratio) == (20.0, None, None)
    assert "put 1, name items read 3" in wall.note
