"""`python -m bench`: every benchmark side by side in one run, printed as one table.

    python -m bench            # the full run (about 20 minutes on two cores); charts into bench/charts/
    python -m bench --quick    # tiny sizes, about a minute: proves the code still runs

Progress goes to stderr; stdout gets the aligned table, then the same rows as markdown for the README.
Benchmarks print figures; they assert nothing about timings. A full run also draws its charts as PNG
files (`bench.charts`) into `bench/charts/`; `--charts DIR` draws them elsewhere (a quick run draws
none unless given `--charts`).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import box_reads
from bench.report import Row, markdown_table, progress, text_table
from bench.runner import MEASURES, MeasureFailed, failure_reason, run_isolated

DEFAULT_CHARTS = Path(__file__).resolve().parent / "charts"


@dataclass(frozen=True)
class Settings:
    stream_keys: int
    latency_ms: float
    batch_sizes: tuple[int, ...]
    latency_repeats: int
    cold_start_runs: int
    table_sizes: tuple[int, ...]
    s3_list_max: int
    uploads: int
    throughput_records: int
    backfill_sizes: tuple[int, ...]
    admin_concurrency: int
    reconcile_objects: int
    reconcile_differences: int
    batch_repeats: int
    heat_seconds: int
    heat_rate: int
    fan_out_objects: int
    page_sizes: tuple[int, ...]
    box_objects: int
    box_check_objects: int
    box_check_shapes: int
    cost_uploads: int
    name_sizes: tuple[int, ...]
    name_check_objects: int
    enrich_uploads: int
    page_runs: int
    local_stack_files: int
    name_maintenance_sizes: tuple[int, ...]
    upload_files: int
    layout_files: int
    served_files: int

    def kwargs(self, measure: str) -> dict[str, Any]:
        by_measure: dict[str, dict[str, Any]] = {
            "requests_per_event": {"keys": self.stream_keys},
            "batch_latency": {
                "latency_ms": self.latency_ms,
                "batch_sizes": list(self.batch_sizes),
                "repeats": self.latency_repeats,
            },
            "cold_start": {"runs": self.cold_start_runs},
            "read_amplification": {"sizes": list(self.table_sizes), "s3_list_max": self.s3_list_max},
            "freshness": {"uploads": self.uploads},
            "throughput": {"records": self.throughput_records},
            "backfill": {"sizes": list(self.backfill_sizes), "concurrency": self.admin_concurrency},
            "reconcile": {
                "objects": self.reconcile_objects,
                "differences": self.reconcile_differences,
                "concurrency": self.admin_concurrency,
            },
            "backfill_batch": {"latency_ms": self.latency_ms, "repeats": self.batch_repeats},
            "partition_heat": {"seconds": self.heat_seconds, "rate": self.heat_rate},
            "fan_out": {"objects": self.fan_out_objects, "page_sizes": list(self.page_sizes)},
            "box_reads": {
                "objects": self.box_objects,
                "check_objects": self.box_check_objects,
                "check_shapes": self.box_check_shapes,
            },
            "write_cost": {"uploads": self.cost_uploads},
            "pipeline": {"records": self.throughput_records},
            "name_reads": {"sizes": list(self.name_sizes), "check_objects": self.name_check_objects},
            "enrich_cost": {"uploads": self.enrich_uploads},
            "page": {"runs": self.page_runs},
            "local_stack": {"files": self.local_stack_files},
            "name_maintenance": {"sizes": list(self.name_maintenance_sizes)},
            "upload_writes": {"files": self.upload_files},
            "name_layouts": {"files": self.layout_files},
            "served_writes": {"files": self.served_files},
        }
        return by_measure[measure]


FULL = Settings(
    stream_keys=1000,
    latency_ms=5.0,
    batch_sizes=(10, 100),
    latency_repeats=5,
    cold_start_runs=11,
    table_sizes=(1_000, 10_000, 100_000),
    s3_list_max=10_000,
    uploads=300,
    throughput_records=5_000,
    # 100,000 adds about seven minutes on moto: `--backfill-sizes 10000,100000` runs it.
    backfill_sizes=(10_000,),
    admin_concurrency=16,
    reconcile_objects=10_000,
    reconcile_differences=100,
    batch_repeats=5,
    heat_seconds=10,
    heat_rate=10_000,
    fan_out_objects=5_000,
    page_sizes=(10, 100, 1000),
    box_objects=100_000,
    box_check_objects=2_000,
    box_check_shapes=len(box_reads.SHAPES),
    cost_uploads=20_000,
    name_sizes=(1_000, 100_000, 1_000_000, 10_000_000),
    # moto answers each Query by going over the whole table: 500 files take about two minutes.
    name_check_objects=500,
    enrich_uploads=200,
    page_runs=20,
    # 100,000 (the figure) takes longer than a measure's time limit: `python -m bench.local_stack` runs it.
    local_stack_files=10_000,
    # About a minute on DynamoDB Local; `python -m bench.name_maintenance` runs the README's sizes.
    name_maintenance_sizes=(500,),
    # Files of measure 16's names uploaded, overwritten, deleted and backfilled on DynamoDB Local.
    upload_files=200,
    # Names of measure 16 the name index's layouts are priced over (measure 22, a model: about 2 minutes).
    layout_files=5_000,
    # Files of measure 16's names uploaded, overwritten and deleted through `make serve` (measure 23).
    served_files=1_000,
)
QUICK = Settings(
    stream_keys=40,
    latency_ms=5.0,
    batch_sizes=(10, 100),
    latency_repeats=1,
    cold_start_runs=2,
    table_sizes=(100, 500),
    s3_list_max=500,
    uploads=10,
    throughput_records=300,
    backfill_sizes=(300,),
    admin_concurrency=16,
    reconcile_objects=300,
    reconcile_differences=5,
    batch_repeats=1,
    heat_seconds=1,
    heat_rate=1_000,
    fan_out_objects=300,
    page_sizes=(10, 100),
    box_objects=2_000,
    box_check_objects=300,
    box_check_shapes=1,
    cost_uploads=500,
    name_sizes=(1_000,),
    name_check_objects=100,
    enrich_uploads=20,
    page_runs=2,
    local_stack_files=300,
    name_maintenance_sizes=(100,),
    upload_files=20,
    layout_files=500,
    served_files=60,
)


def parse_args(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks that the benchmarks run")
    parser.add_argument("--only", action="append", choices=sorted(MEASURES), help="run only these measures")
    parser.add_argument("--keys", type=int, help="keys in the event stream of measure 1")
    parser.add_argument("--latency-ms", type=float, help="injected DynamoDB latency per call (measure 2)")
    parser.add_argument(
        "--sizes",
        help="table sizes for measure 4, e.g. 1000,10000,100000 (the largest is slow)",
    )
    parser.add_argument("--s3-list-max", type=int, help="largest bucket uploaded to moto S3 (measure 4)")
    parser.add_argument("--uploads", type=int, help="uploads timed for freshness (measure 5)")
    parser.add_argument("--records", type=int, help="records processed for CPU throughput (measure 6)")
    parser.add_argument("--repeats", type=int, help="runs per batch size, median taken (measure 2)")
    parser.add_argument("--cold-start-runs", type=int, help="fresh interpreters per module (measure 3)")
    parser.add_argument(
        "--backfill-sizes",
        help="bucket sizes backfilled for measure 7, e.g. 10000,100000 (the largest is slow)",
    )
    parser.add_argument("--reconcile-objects", type=int, help="objects in the reconciled bucket (measure 8)")
    parser.add_argument("--differences", type=int, help="broken entries of each kind (measure 8)")
    parser.add_argument(
        "--heat-seconds", type=int, help="seconds of each simulated upload stream (measure 11)"
    )
    parser.add_argument("--heat-rate", type=int, help="uploads/s of the per-index heat rows (measure 11)")
    parser.add_argument("--fan-out-objects", type=int, help="entries in the listed bucket (measure 12)")
    parser.add_argument(
        "--page-sizes", help="page sizes of the bucket listing, e.g. 10,100,1000 (measure 12)"
    )
    parser.add_argument("--box-objects", type=int, help="entries the box model counts over (measure 13)")
    parser.add_argument(
        "--box-check-objects",
        type=int,
        help="entries of the reader cross-check on moto, 0 for none (measure 13)",
    )
    parser.add_argument("--box-check-shapes", type=int, help="box shapes the cross-check reads (measure 13)")
    parser.add_argument("--cost-uploads", type=int, help="uploads per sample stream (measure 14)")
    parser.add_argument(
        "--name-sizes", help="bucket sizes of the name search model, e.g. 1000,1000000 (measure 15)"
    )
    parser.add_argument("--page-runs", type=int, help="runs of the page in headless Chromium (measure 18)")
    parser.add_argument("--local-stack-files", type=int, help="files put in the local stack (measure 19)")
    parser.add_argument(
        "--name-maintenance-sizes",
        help="entries of the name index's maintenance on DynamoDB Local, e.g. 1000,4000 (measure 20)",
    )
    parser.add_argument(
        "--upload-files",
        type=int,
        help="files of measure 16's names whose every write unit is counted on DynamoDB Local (measure 21)",
    )
    parser.add_argument(
        "--layout-files",
        type=int,
        help="measure 16's names the name index's layouts are priced on (measure 22)",
    )
    parser.add_argument(
        "--served-files",
        type=int,
        help="files of measure 16's names uploaded through `make serve`, capacity counted (measure 23)",
    )
    parser.add_argument(
        "--charts",
        type=Path,
        help=f"draw the PNG charts into this folder (default for a full run: {DEFAULT_CHARTS})",
    )
    parser.add_argument("--no-charts", action="store_true", help="draw no charts")
    args = parser.parse_args(argv)
    base = QUICK if args.quick else FULL
    settings = Settings(
        stream_keys=args.keys or base.stream_keys,
        latency_ms=base.latency_ms if args.latency_ms is None else args.latency_ms,
        batch_sizes=base.batch_sizes,
        latency_repeats=args.repeats or base.latency_repeats,
        cold_start_runs=args.cold_start_runs or base.cold_start_runs,
        table_sizes=_sizes(args.sizes) if args.sizes else base.table_sizes,
        s3_list_max=base.s3_list_max if args.s3_list_max is None else args.s3_list_max,
        uploads=args.uploads or base.uploads,
        throughput_records=args.records or base.throughput_records,
        backfill_sizes=_sizes(args.backfill_sizes) if args.backfill_sizes else base.backfill_sizes,
        admin_concurrency=base.admin_concurrency,
        reconcile_objects=args.reconcile_objects or base.reconcile_objects,
        reconcile_differences=args.differences or base.reconcile_differences,
        batch_repeats=args.repeats or base.batch_repeats,
        heat_seconds=args.heat_seconds or base.heat_seconds,
        heat_rate=args.heat_rate or base.heat_rate,
        fan_out_objects=args.fan_out_objects or base.fan_out_objects,
        page_sizes=_sizes(args.page_sizes) if args.page_sizes else base.page_sizes,
        box_objects=args.box_objects or base.box_objects,
        box_check_objects=base.box_check_objects
        if args.box_check_objects is None
        else args.box_check_objects,
        box_check_shapes=args.box_check_shapes or base.box_check_shapes,
        cost_uploads=args.cost_uploads or base.cost_uploads,
        name_sizes=_sizes(args.name_sizes) if args.name_sizes else base.name_sizes,
        name_check_objects=base.name_check_objects,
        enrich_uploads=base.enrich_uploads,
        page_runs=args.page_runs or base.page_runs,
        local_stack_files=args.local_stack_files or base.local_stack_files,
        name_maintenance_sizes=_sizes(args.name_maintenance_sizes)
        if args.name_maintenance_sizes
        else base.name_maintenance_sizes,
        upload_files=args.upload_files or base.upload_files,
        layout_files=args.layout_files or base.layout_files,
        served_files=args.served_files or base.served_files,
    )
    charts = None if args.no_charts else args.charts or (None if args.quick else DEFAULT_CHARTS)
    return Options(settings, args.only or list(MEASURES), charts)


@dataclass(frozen=True)
class Options:
    settings: Settings
    measures: list[str]
    charts: Path | None


def _sizes(raw: str) -> tuple[int, ...]:
    return tuple(int(size) for size in raw.split(","))


# Seconds a measure may run before it is stopped and reported failed.
MEASURE_TIMEOUT = 1800


def failed_row(name: str, reason: str) -> Row:
    """The table's row for a measure that gave no rows: its name, FAILED and why."""
    return Row(f"{name}: FAILED", "", None, None, "", None, reason)


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    rows: list[Row] = []
    samples: dict[str, Any] = {}
    failed: list[str] = []
    started = time.perf_counter()
    for name in options.measures:
        progress(f"--- {name}")
        began = time.perf_counter()
        try:
            measured = run_isolated(name, options.settings.kwargs(name), timeout=MEASURE_TIMEOUT)
        except Exception as error:
            # One measure's failure is its row in the table; the run goes on with the next measure.
            reason = str(error) if isinstance(error, MeasureFailed) else failure_reason(error)
            failed.append(name)
            rows.append(failed_row(name, reason))
            progress(f"--- {name} FAILED: {reason}")
        else:
            rows.extend(measured.rows)
            samples.update(measured.samples)
        progress(f"--- {name} took {time.perf_counter() - began:.1f} s")
    progress(f"all measures took {time.perf_counter() - started:.1f} s")
    print(text_table(rows))
    print()
    print(markdown_table(rows))
    if options.charts is not None:
        from bench.charts import write_charts  # matplotlib only when charts are drawn

        for path in write_charts(samples, options.charts):
            progress(f"chart: {path}")
    if failed:
        progress(f"failed measures: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
