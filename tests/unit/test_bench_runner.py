"""The bench's run of its measures: every measure runs, and one that fails is a row of the table saying
it failed and why, never the end of the run nor a row silently missing. And measure 1's reading of the
table: the table's records (not file entries) are skipped as the product skips them.

The measures here are this module's functions, run by `bench.runner` in a child interpreter as the real
measures are (each a "module:function" in `MEASURES`).
"""

from __future__ import annotations

import io
import os
import signal
from contextlib import redirect_stdout
from typing import Any

import pytest

from bench import __main__ as bench_main
from bench import runner
from bench.report import Row
from bench.requests_per_event import indexed_state
from bench.runner import MEASURES, MeasureFailed, failure_reason, run_isolated
from file_index.rules import schema
from file_index.rules.upload_statistics import statistics_key
from file_index.store.deployment import configuration_key
from file_index.store.state import state_key

HERE = __name__  # "tests.unit.test_bench_runner": the child imports the measures from here

# --- measures run by the child interpreter ---


def _read_size(item: dict[str, Any]) -> int:
    return int(item["size"])


def failing_measure() -> list[Row]:
    """Fails as measure 1 did: an item without `size`."""
    return [Row("x", "items", _read_size({}), None, "")]


def working_measure(value: float = 2.0) -> list[Row]:
    return [Row("99. a figure", "items", value, None, "")]


def empty_measure() -> list[Row]:
    return []


def killed_measure() -> list[Row]:
    os.kill(os.getpid(), signal.SIGKILL)
    return []


# --- measure 1 ---


def test_measure_1_skips_the_tables_records_that_are_not_file_entries() -> None:
    bucket = "fileupload.bench"
    items: list[dict[str, Any]] = [
        {schema.OBJECT_KEY: "USER001_a.txt", schema.SIZE: 5},
        {schema.OBJECT_KEY: "USER001_b.txt", schema.DELETED: True},  # a tombstone: absent
        # Records the table also holds: none has a size, and no search returns one.
        {schema.OBJECT_KEY: statistics_key(bucket, 0), "statisticsOf": bucket, "entries": 100},
        {schema.OBJECT_KEY: configuration_key(bucket), "configurationOf": bucket, "settings": "{}"},
        {schema.OBJECT_KEY: state_key(bucket), "stateOf": bucket, "state": "READY"},
    ]
    assert indexed_state(items) == {"USER001_a.txt": 5, "USER001_b.txt": None}


# --- the runner ---


def test_a_failing_measure_says_why_and_where() -> None:
    with pytest.raises(MeasureFailed) as failed:
        run_isolated("failing", {}, timeout=120, target=f"{HERE}:failing_measure")
    reason = str(failed.value)
    assert reason.startswith("KeyError: 'size' at tests/unit/test_bench_runner.py:"), reason
    assert "in _read_size" in reason
    assert reason.endswith("(exited with status 1)")


def test_a_measure_that_returns_no_rows_or_is_killed_fails_saying_so() -> None:
    with pytest.raises(MeasureFailed, match="measure empty returned no rows"):
        run_isolated("empty", {}, timeout=120, target=f"{HERE}:empty_measure")
    with pytest.raises(MeasureFailed, match="measure killed was killed by SIGKILL and wrote no rows"):
        run_isolated("killed", {}, timeout=120, target=f"{HERE}:killed_measure")
    with pytest.raises(MeasureFailed, match=r"ModuleNotFoundError: No module named 'bench\.nowhere'"):
        run_isolated("missing", {}, timeout=120, target="bench.nowhere:run")


def test_a_working_measure_brings_its_rows_back() -> None:
    measured = run_isolated("working", {"value": 3.0}, timeout=120, target=f"{HERE}:working_measure")
    assert measured.rows == [Row("99. a figure", "items", 3.0, None, "")]


def test_failure_reason_is_one_line_and_bounded() -> None:
    try:
        raise ValueError("first line\nsecond line " + "x" * 1000)
    except ValueError as error:
        reason = failure_reason(error)
    assert "\n" not in reason
    assert reason.startswith("ValueError: first line second line x")
    assert len(reason) == runner.MAX_REASON
    assert reason.endswith("…")


def test_every_measure_runs_and_a_failed_one_is_a_row_of_the_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(MEASURES, "failing", f"{HERE}:failing_measure")
    monkeypatch.setitem(MEASURES, "broken", f"{HERE}:working_measure")
    monkeypatch.setitem(MEASURES, "working", f"{HERE}:working_measure")

    def kwargs(self: bench_main.Settings, measure: str) -> dict[str, Any]:
        if measure == "broken":  # fails in the parent, before any child runs
            raise RuntimeError("no settings for this measure")
        return {}

    monkeypatch.setattr(bench_main.Settings, "kwargs", kwargs)
    out = io.StringIO()
    with redirect_stdout(out):
        status = bench_main.main(["--only=failing", "--only=broken", "--only=working", "--no-charts"])

    assert status == 1
    markdown = [line for line in out.getvalue().splitlines() if line.startswith("| ")]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in markdown[2:]]
    assert [row[0] for row in rows] == ["failing: FAILED", "broken: FAILED", "99. a figure"]
    assert rows[0][5].startswith("KeyError: 'size' at tests/unit/test_bench_runner.py:"), rows[0]
    assert rows[1][5].startswith("RuntimeError: no settings for this measure at tests/unit/"), rows[1]
    assert rows[2][2] == "2"
    assert "failed measures: failing, broken" in capsys.readouterr().err
