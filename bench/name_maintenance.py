"""Measure 20: the name index's maintenance, `file_index.write.name_sync.sync_names`, in memory and
time as the table grows, on DynamoDB Local.

Two runs of the same function, as the command line makes them (`file_search_admin.cli._sync_names`, four
segments):

- **`index-names`** (`complete=True`): over a bucket indexed without a name index, as 0.3.0 left it (every
  entry as the writer stores it, `entry_items.entry_item` under 16 bucket shards, and no name item), it puts
  every entry's key item and term items and sets the bucket's flag.
- **the name step of `backfill` and `reconcile`** (`complete=False`, what `_with_names` runs after them)
  over the same bucket once built: both scans, every item checked, nothing to write.

Each run happens in a fresh interpreter that does nothing else (the tables are seeded by this one), so its
memory is the run's own. Each size is seeded twice, into twin tables: the run on one gives the wall time
and the growth of the process's peak resident set (`ru_maxrss` at the end minus at the start, after the
client is built), the same run on the other, under tracemalloc (which more than doubles the time and
adds its own bookkeeping to the resident set), the peak of Python's allocations. Time per million
entries is extrapolated linearly from the size measured. File names are people's (`name_data.py`: about
27 term items a file).

    .venv/bin/python -m bench --only name_maintenance
    .venv/bin/python -m bench.name_maintenance --entries 1000 2000 4000    # the README's figures

Progress on stderr, the table on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer

from bench.entries import create_event, entry
from bench.name_data import make_files
from bench.report import Row, format_number, markdown_table, progress, text_table
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.write.name_sync import DEFAULT_SEGMENTS, sync_names
from file_search_admin.aws import ADMIN_SDK

BUCKET = "fileupload.bench"
PLACEMENT = ShardPlacement(bucket_shards=16)
REGION = "us-east-1"
# Entries seeded per round: the seeding holds one round's items at a time.
_SEED_CHUNK = 1000
_SEED_WRITERS = 4
_TABLE_WRITE_ITEMS = 25
RUNS = (("index-names", True), ("name step of backfill/reconcile", False))


@dataclass(frozen=True)
class SyncRun:
    """One `sync_names` run in its own interpreter: what it did and what it cost."""

    entries: int
    seconds: float
    peak_mib: float  # tracemalloc's peak during the run
    rss_growth_mib: float  # ru_maxrss at the end minus at the start
    rss_start_mib: float
    counts: dict[str, Any]

    @property
    def seconds_per_million(self) -> float:
        return per_million(self.seconds, self.entries)


def per_million(seconds: float, entries: int) -> float:
    """Seconds per million entries, extrapolated linearly from `entries`."""
    return seconds / entries * 1_000_000


def client(endpoint_url: str, segments: int = DEFAULT_SEGMENTS) -> Any:
    """A DynamoDB client with the command line's SDK settings (`file_search_admin.aws.ADMIN_SDK`), on
    DynamoDB Local."""
    sdk = dataclasses.replace(ADMIN_SDK, max_connections=segments + 4)
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=sdk.botocore_config(),
    )


def _entries(count: int) -> Iterator[list[dict[str, Any]]]:
    """`count` entries as the writer stores them, `_SEED_CHUNK` at a time."""
    files, _rare = make_files(count)
    for start in range(0, count, _SEED_CHUNK):
        chunk = []
        for number, file in enumerate(files[start : start + _SEED_CHUNK], start=start):
            event = create_event(
                bucket=BUCKET,
                key=file.key,
                user=file.user,
                size=file.size,
                moment=datetime.fromisoformat(file.upload_date.replace("Z", "+00:00")),
                sequence=number,
            )
            chunk.append(entry(event, event.order_key, PLACEMENT))
        yield chunk


def seed(dynamodb: Any, table: str, count: int) -> None:
    """The bucket as indexed without a name index: its entries only."""
    serialize = TypeSerializer().serialize
    with ThreadPoolExecutor(max_workers=_SEED_WRITERS) as pool:

        def write_entries(requests: list[dict[str, Any]]) -> None:
            pending: dict[str, Any] = {table: requests}
            while pending:
                pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}

        for chunk in _entries(count):
            requests = [{"PutRequest": {"Item": {k: serialize(v) for k, v in e.items()}}} for e in chunk]
            batches = [
                requests[i : i + _TABLE_WRITE_ITEMS] for i in range(0, len(requests), _TABLE_WRITE_ITEMS)
            ]
            for _ in pool.map(write_entries, batches):
                pass


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def sync_once(
    endpoint_url: str, table: str, name_table: str, *, complete: bool, segments: int, trace: bool = True
) -> dict[str, Any]:
    """One `sync_names` run, measured (called in a fresh interpreter by `measure_run`)."""
    dynamodb = client(endpoint_url, segments)
    dynamodb.describe_table(TableName=name_table)  # the client's model loaded, a connection open
    rss_start = _maxrss_mib()
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    counts = sync_names(dynamodb, table, name_table, BUCKET, complete=complete, segments=segments)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
    tracemalloc.stop()
    return {
        "seconds": seconds,
        "peakMiB": peak / 2**20,
        "rssStartMiB": rss_start,
        "rssGrowthMiB": _maxrss_mib() - rss_start,
        "counts": counts.to_json(),
    }


def _child(endpoint_url: str, table: str, name_table: str, *, complete: bool, trace: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.name_maintenance", "--child", endpoint_url, table, name_table]
    command += [*(["--complete"] if complete else []), *([] if trace else ["--untraced"])]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"sync_names run failed:\n{result.stderr}")
    raw: dict[str, Any] = json.loads(result.stdout)
    return raw


def measure(sizes: Sequence[int]) -> dict[str, list[SyncRun]]:
    """Per run (`RUNS`), its measurement at each size, on one DynamoDB Local. Each size is seeded twice,
    into fresh tables: time and resident set come from a run without tracemalloc (it more than doubles
    the time and adds its own memory to the resident set), the Python peak from the same run on the twin."""
    from local_stack.dynamodb_local import DynamoDBLocalProcess  # Java only when measured

    measured: dict[str, list[SyncRun]] = {label: [] for label, _ in RUNS}
    with DynamoDBLocalProcess() as local:
        dynamodb = client(local.endpoint_url)
        for count in sorted(sizes):
            pairs = [(f"FileMetaData-{twin}-{count}", f"FileNameIndex-{twin}-{count}") for twin in "ab"]
            for table, name_table in pairs:
                dynamodb.create_table(**schema.create_table_request(table))
                dynamodb.create_table(**schema.create_name_table_request(name_table))
                began = time.perf_counter()
                seed(dynamodb, table, count)
                seconds = time.perf_counter() - began
                progress(f"seeded {count:,} entries in {seconds:.1f} s")
            for label, complete in RUNS:
                plain = _child(local.endpoint_url, *pairs[0], complete=complete, trace=False)
                traced = _child(local.endpoint_url, *pairs[1], complete=complete, trace=True)
                run = SyncRun(
                    entries=count,
                    seconds=plain["seconds"],
                    peak_mib=traced["peakMiB"],
                    rss_growth_mib=plain["rssGrowthMiB"],
                    rss_start_mib=plain["rssStartMiB"],
                    counts=plain["counts"],
                )
                progress(
                    f"{label}, {count:,} entries: {run.seconds:.1f} s ({traced['seconds']:.1f} s traced), "
                    f"Python peak {run.peak_mib:.1f} MiB, RSS growth {run.rss_growth_mib:.1f} MiB"
                )
                measured[label].append(run)
            for table, name_table in pairs:
                dynamodb.delete_table(TableName=table)
                dynamodb.delete_table(TableName=name_table)
    return measured


def rows(measured: dict[str, list[SyncRun]]) -> list[Row]:
    """Per run and size: seconds, seconds per million, tracemalloc peak, ru_maxrss growth; each compared
    with the smallest size's (ratio = ours ÷ smallest: flat memory stays near 1, linear time near 1 per
    million)."""
    out: list[Row] = []
    for label, runs in measured.items():
        smallest = runs[0]
        for run in runs:
            counts = run.counts
            did = f"put {counts['put']:,}, name items read {counts['nameItems']:,}"
            base = f"20. {label}, {run.entries:,} entries"
            versus = f"{smallest.entries:,} entries"
            setting = "DynamoDB Local, 4 segments, fresh interpreter"
            out.extend(
                [
                    Row(f"{base}: wall time", "s", run.seconds, None, "", None, f"{did}; {setting}"),
                    Row(
                        f"{base}: time per million entries",
                        "s/M entries",
                        run.seconds_per_million,
                        smallest.seconds_per_million,
                        versus,
                        _ratio(run.seconds_per_million, smallest.seconds_per_million),
                        f"extrapolated linearly from {run.entries:,}; ours ÷ {versus} (flat: linear)",
                    ),
                    Row(
                        f"{base}: peak Python memory",
                        "MiB",
                        run.peak_mib,
                        smallest.peak_mib,
                        versus,
                        _ratio(run.peak_mib, smallest.peak_mib),
                        f"tracemalloc peak, the same run on a twin table; ours ÷ {versus} (1: bounded)",
                    ),
                    Row(
                        f"{base}: peak RSS growth",
                        "MiB",
                        run.rss_growth_mib,
                        smallest.rss_growth_mib,
                        versus,
                        _ratio(run.rss_growth_mib, smallest.rss_growth_mib),
                        f"ru_maxrss end − start, fresh interpreter at {format_number(run.rss_start_mib)} MiB",
                    ),
                ]
            )
    return out


def _ratio(ours: float, smallest: float) -> float | None:
    return None if smallest == 0 else ours / smallest


def run(sizes: list[int]) -> list[Row]:
    return rows(measure(sizes))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.name_maintenance", description=__doc__)
    parser.add_argument("--entries", type=int, nargs="+", default=[1_000, 2_000, 4_000])
    parser.add_argument(
        "--child", nargs=3, metavar=("ENDPOINT", "TABLE", "NAME_TABLE"), help=argparse.SUPPRESS
    )
    parser.add_argument("--complete", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--untraced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        endpoint_url, table, name_table = args.child
        measured_run = sync_once(
            endpoint_url,
            table,
            name_table,
            complete=args.complete,
            segments=DEFAULT_SEGMENTS,
            trace=not args.untraced,
        )
        print(json.dumps(measured_run))
        return
    measured = rows(measure(args.entries))
    print(text_table(measured))
    print()
    print(markdown_table(measured))


if __name__ == "__main__":
    main()
