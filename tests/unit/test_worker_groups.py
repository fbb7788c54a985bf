"""`make test` runs on two xdist workers with `--dist loadgroup`: the tests of one `xdist_group` share a
worker, so a module's costly stack is built once. pytest 9.2 moved the node id attribute xdist 3.8 writes the
group into, and every group silently became tests of their own on any worker (each worker built every
stack); pytest is pinned to 9.1.1 for that. This runs a small grouped suite the way the Makefile does and
checks that each group stayed on one worker.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SUITE = """
import os
import pytest

def record(tmp_dir, group):
    with open(os.path.join(tmp_dir, group), "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.xdist_group("first")
@pytest.mark.parametrize("n", range(6))
def test_first(n):
    record(os.environ["GROUPS_DIR"], "first")

@pytest.mark.xdist_group("second")
@pytest.mark.parametrize("n", range(6))
def test_second(n):
    record(os.environ["GROUPS_DIR"], "second")
"""


def test_each_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(SUITE)
    (tmp_path / "groups").mkdir()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={"GROUPS_DIR": str(tmp_path / "groups"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for group in ["first", "second"]:
        workers = (tmp_path / "groups" / group).read_text().split()
        assert len(workers) == 6
        assert len(set(workers)) == 1, f"group {group!r} ran on {sorted(set(workers))}"
