"""Measure 3: cold start, as the import time of each handler module in a fresh interpreter.

A Lambda cold start pays for importing the handler module before the first event. Every Python Lambda
that talks to AWS imports boto3, so `import boto3` alone is the floor we compare against. Each figure is
the median of several fresh interpreters, run interleaved so a busy moment of the machine hits all alike.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Sequence

from bench.report import Row, progress

HANDLER_MODULES = ("indexer.handler", "search.handler")
FLOOR_MODULE = "boto3"

_PROBE = (
    "import importlib, sys, time\n"
    "start = time.perf_counter()\n"
    "importlib.import_module(sys.argv[1])\n"
    "print(time.perf_counter() - start)\n"
)


def import_seconds(module: str) -> float:
    """Seconds to import `module` in a new interpreter, excluding the interpreter's own start-up."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
    # Bytecode is compiled once by the first run; later runs measure what Lambda sees from a warm disk.
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, module], capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"importing {module} failed:\n{result.stderr.strip()}")
    return float(result.stdout.strip().splitlines()[-1])


def median_import_seconds(modules: Sequence[str], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {module: [] for module in modules}
    if runs > 1:  # one unmeasured run compiles any stale bytecode; a smoke run skips it
        for module in modules:
            import_seconds(module)
    for _ in range(runs):
        for module in modules:
            samples[module].append(import_seconds(module))
    return {module: statistics.median(values) for module, values in samples.items()}


def run(*, runs: int) -> list[Row]:
    progress(f"cold start: importing {', '.join(HANDLER_MODULES)} and boto3, {runs} fresh interpreters each")
    medians = median_import_seconds((FLOOR_MODULE, *HANDLER_MODULES), runs)
    floor_ms = medians[FLOOR_MODULE] * 1000
    rows = []
    for module in HANDLER_MODULES:
        ours_ms = medians[module] * 1000
        rows.append(
            Row(
                measure=f"3. cold start: import {module}",
                unit="ms",
                ours=ours_ms,
                comparison=floor_ms,
                compared_with="import boto3 alone",
                ratio=ours_ms / floor_ms if floor_ms else None,
                note=f"ours ÷ boto3 (floor 1×); median of {runs} fresh interpreters",
            )
        )
    return rows
