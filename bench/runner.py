"""Runs each measure in a fresh interpreter and brings its rows back.

The handlers read their configuration and build their clients once per process, as at a Lambda cold
start; a fresh interpreter per measure gives each measure its own cold start, its own environment and its
own emulator, so no measure sees another's state. The child writes its rows and its chart samples as
JSON to a file (its stdout belongs to the handlers' Powertools logs and metrics, which go to /dev/null)
and its progress to stderr.
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
from bench.report import Measured, Row, progress

# name -> "module:function"; each function takes keyword arguments and returns its rows, or `Measured`.
MEASURES = {
    "requests_per_event": "bench.requests_per_event:run",
    "batch_latency": "bench.batch_latency:run",
    "cold_start": "bench.cold_start:run",
    "read_amplification": "bench.read_amplification:run",
    "freshness": "bench.freshness:run",
    "throughput": "bench.throughput:run",
    "backfill": "bench.backfill:run",
    "reconcile": "bench.reconcile:run",
    "backfill_batch": "bench.backfill_batch:run",
    "partition_heat": "bench.partition_heat:run",
    "fan_out": "bench.fan_out:run",
    "box_reads": "bench.box_reads:run",
    "write_cost": "bench.write_cost:run",
    "pipeline": "bench.pipeline:run",
    "name_reads": "bench.name_reads:run",
    "enrich_cost": "bench.enrich_cost:run",
    "page": "bench.page:run",
    "local_stack": "bench.local_stack:run",
    "name_maintenance": "bench.name_maintenance:run",
}


class MeasureFailed(RuntimeError):
    pass


def run_isolated(name: str, kwargs: dict[str, Any], *, timeout: float) -> Measured:
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
        result_json = json.loads(out.read_text())
        return Measured([Row(**row) for row in result_json["rows"]], result_json["samples"])


def _main(argv: list[str]) -> int:
    name, raw_kwargs, out = argv
    aws.prepare_process()
    instrument.install()  # before any client exists, so every client is observed
    module_name, _, function_name = MEASURES[name].partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    try:
        result: Measured | list[Row] = function(**json.loads(raw_kwargs))
    except Exception:
        progress(f"measure {name} failed:\n{traceback.format_exc()}")
        return 1
    measured = result if isinstance(result, Measured) else Measured(result)
    rows = [dataclasses.asdict(row) for row in measured.rows]
    Path(out).write_text(json.dumps({"rows": rows, "samples": measured.samples}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
