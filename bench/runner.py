"""Runs each measure in a fresh interpreter and brings its rows back.

The handlers read their configuration and build their clients once per process, as at a Lambda cold
start; a fresh interpreter per measure gives each measure its own cold start, its own environment and its
own emulator, so no measure sees another's state. The child writes its rows and its chart samples as
JSON to a file (its stdout belongs to the handlers' Powertools logs and metrics, which go to /dev/null)
and its progress to stderr. A measure that raises writes why instead (`failure_reason`: the exception
and where in the project's code it was raised), so the table's row for it can say so (`MeasureFailed`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import signal
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
    "upload_writes": "bench.upload_writes:run",
    "name_layouts": "bench.name_layouts:run",
    "served_writes": "bench.served_writes:run",
}


REPO = Path(__file__).resolve().parent.parent
# A reason longer than this is cut in the table's row (the whole traceback is on stderr).
MAX_REASON = 300


class MeasureFailed(RuntimeError):
    """A measure gave no rows; the message says why, in one line (the table's failed row shows it)."""


def failure_reason(error: BaseException) -> str:
    """`Type: message` and the innermost frame of the project's own code that raised it, in one line."""
    message = " ".join(str(error).split())
    reason = f"{type(error).__name__}: {message}" if message else type(error).__name__
    ours = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if Path(frame.filename).resolve().is_relative_to(REPO) and ".venv" not in Path(frame.filename).parts
    ]
    if ours:
        frame = ours[-1]
        reason += f" at {Path(frame.filename).resolve().relative_to(REPO)}:{frame.lineno} in {frame.name}"
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


def _exit_status(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def run_isolated(name: str, kwargs: dict[str, Any], *, timeout: float, target: str | None = None) -> Measured:
    """Run one measure (`target`, "module:function", by default `MEASURES[name]`) in a child interpreter;
    raises MeasureFailed saying why it gave no rows: its exception, a timeout, a killed child, no rows."""
    target = target or MEASURES[name]
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp, "rows.json")
        try:
            result = subprocess.run(
                [sys.executable, "-m", "bench.runner", target, json.dumps(kwargs), str(out)],
                stdout=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise MeasureFailed(f"measure {name} did not finish within {timeout:.0f} s") from None
        try:
            result_json = json.loads(out.read_text()) if out.exists() else {}
            if "error" in result_json:
                raise MeasureFailed(f"{result_json['error']} ({_exit_status(result.returncode)})")
            if result.returncode != 0 or "rows" not in result_json:
                raise MeasureFailed(f"measure {name} {_exit_status(result.returncode)} and wrote no rows")
            measured = Measured([Row(**row) for row in result_json["rows"]], result_json.get("samples", {}))
        except (OSError, ValueError, TypeError) as error:
            raise MeasureFailed(
                f"measure {name}: its rows could not be read: {failure_reason(error)}"
            ) from None
        if not measured.rows:
            raise MeasureFailed(f"measure {name} returned no rows")
        return measured


def _main(argv: list[str]) -> int:
    target, raw_kwargs, out = argv
    aws.prepare_process()
    instrument.install()  # before any client exists, so every client is observed
    try:
        module_name, _, function_name = target.partition(":")
        function = getattr(importlib.import_module(module_name), function_name)
        result: Measured | list[Row] = function(**json.loads(raw_kwargs))
    except Exception as error:
        progress(f"measure {target} failed:\n{traceback.format_exc()}")
        Path(out).write_text(json.dumps({"error": failure_reason(error)}))
        return 1
    measured = result if isinstance(result, Measured) else Measured(result)
    rows = [dataclasses.asdict(row) for row in measured.rows]
    Path(out).write_text(json.dumps({"rows": rows, "samples": measured.samples}))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
