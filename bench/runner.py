"""Runs each measure in a fresh interpreter and brings its rows back.

The handlers read their configuration and build their clients once per process, as at a Lambda cold
start; a fresh interpreter per measure gives each measure its own cold start, its own environment and its
own emulator, so no measure sees another's state. The child writes its rows as JSON to a file (its stdout
belongs to the handlers' Powertools logs and metrics, which go to /dev/null) and its progress to stderr.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from bench import aws, instrument
from bench.report import Row, progress

# name -> "module:function"; each function takes keyword arguments and returns a list of rows.
MEASURES = {
    "requests_per_event": "bench.requests_per_event:run",
    "batch_latency": "bench.batch_latency:run",
    "cold_start": "bench.cold_start:run",
    "read_amplification": "bench.read_amplification:run",
    "freshness": "bench.freshness:run",
    "throughput": "bench.throughput:run",
}


class MeasureFailed(RuntimeError):
    pass


def run_isolated(name: str, kwargs: dict[str, Any], *, timeout: float) -> list[Row]:
    """Run one measure in a child interpreter; raises MeasureFailed with the child's exit status."""
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp, "rows.json")
        try:
            result = subprocess.run(
                [sys.executable, "-m", "bench.runner", name, json.dumps(kwargs), str(out)],
                stdout=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise MeasureFailed(f"measure {name} did not finish within {timeout:.0f} s") from None
        if result.returncode != 0 or not out.exists():
            raise MeasureFailed(f"measure {name} exited with status {result.returncode}")
        return [Row(**row) for row in json.loads(out.read_text())]


def _main(argv: list[str]) -> int:
    name, raw_kwargs, out = argv
    aws.prepare_process()
    instrument.install()  # before any client exists, so every client is observed
    module_name, _, function_name = MEASURES[name].partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    try:
        rows: list[Row] = function(**json.loads(raw_kwargs))
    except Exception:
        progress(f"measure {name} failed:\n{traceback.format_exc()}")
        return 1
    Path(out).write_text(json.dumps([dataclasses.asdict(row) for row in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
