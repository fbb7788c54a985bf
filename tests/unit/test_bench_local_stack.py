"""Measure 19's CPU rows: each process's CPU per indexed upload, and the rate an indexer costing nothing
would allow on this machine's cores, against the 200 uploads/s target."""

from __future__ import annotations

import os

import pytest

from bench import local_stack
from bench.local_stack import INDEXER, THIS_PROCESS, cpu_rows, cpu_seconds


def test_the_ceiling_is_the_cores_over_the_cpu_of_everything_but_the_indexer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local_stack.os, "sched_getaffinity", lambda _pid: {0, 1})
    cpu_ms = {"DynamoDB Local": 6.5, INDEXER: 7.0, "moto": 4.0, THIS_PROCESS: 2.5}

    rows = {row.measure: row for row in cpu_rows(cpu_ms, "note")}

    assert rows["19. local stack CPU per upload: all"].ours == pytest.approx(20.0)
    assert rows[f"19. local stack CPU per upload: {INDEXER}"].ours == 7.0
    ceiling = rows["19. local stack: uploads/s with an indexer costing nothing"]
    assert ceiling.ours == pytest.approx(2 * 1000 / 13.0)  # 2 cores, 13 ms of CPU outside the indexer
    assert ceiling.ours is not None
    assert ceiling.ratio == pytest.approx(ceiling.ours / 200)


def test_no_rows_unless_the_indexer_ran_apart() -> None:
    assert cpu_rows({}, "note") == []
    # In one process with the rest (--in-process): the indexer's CPU is in this process's.
    assert cpu_rows({"DynamoDB Local": 6.5, THIS_PROCESS: 12.0}, "note") == []


def test_cpu_seconds_reads_each_role_and_this_process() -> None:
    seconds = cpu_seconds({"self again": [os.getpid()]})

    assert set(seconds) == {"self again", THIS_PROCESS}
    assert seconds["self again"] >= 0
    assert cpu_seconds({"gone": [2**22 + 1]}) == {}  # beyond Linux's largest pid: no such process
