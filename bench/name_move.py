"""The name index's move to term items (`file_index.name_sync`, `file_search_admin index-names`) on moto,
and what the term items cost a write.

`python -m bench.name_move --entries 1000 10000` seeds, for each size, a bucket indexed before the term
items (entries with their key and old word items), runs the move (`sync_names(move=True)`, the wait for
readers skipped by a clock that jumps) and prints its time, its peak Python memory (tracemalloc) and its
counts; then a second run (nothing to do). `--units` prints the write units of a new key, an overwrite and
a delete for sample names: items × ceil(bytes / 1 KB) × 2 (the table and its user GSI), with the old word
items beside them while a bucket moves. Progress on stderr, figures on stdout.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from file_index import schema
from file_index.cost import item_bytes
from file_index.name_sync import sync_names
from file_index.names import NameIndex, name_items, term_items

BUCKET = "fileupload.bench"
START = datetime(2024, 5, 1, tzinfo=UTC)
SAMPLE_NAMES = (
    "FILE001.txt",
    "Quarterly Report 2024 final.pdf",
    "IMG_20240501_101500.jpg",
    "会議資料_第3四半期.xlsx",
    "project-plan_v2 (copy).docx",
)


def entry(number: int, name: str | None = None) -> dict[str, Any]:
    user = f"USER{number % 50:03d}"
    file_name = name or f"Report {number} draft{number % 7} invoice.pdf"
    return {
        schema.OBJECT_KEY: f"{user}_{file_name}",
        schema.BUCKET_NAME: BUCKET,
        schema.FILE_ID: file_name,
        schema.SIZE: 1000 + number,
        schema.UPLOAD_DATE: (START + timedelta(seconds=number)).isoformat(timespec="milliseconds")[:23] + "Z",
        schema.UPLOAD_USER: user,
        schema.ORDER_KEY: f"{number:016X}",
    }


def seed(dynamodb: Any, table: str, name_table: str, count: int) -> None:
    old = NameIndex(dynamodb, name_table)
    requests: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for number in range(count):
        made = entry(number)
        requests.append({"PutRequest": {"Item": {k: _attr(v) for k, v in made.items()}}})
        items.extend(name_items(made, made[schema.ORDER_KEY]))
        if len(requests) == 25:
            dynamodb.batch_write_item(RequestItems={table: requests})
            requests = []
    if requests:
        dynamodb.batch_write_item(RequestItems={table: requests})
    old.put_items(items)


def _attr(value: Any) -> dict[str, Any]:
    return {"N": str(value)} if isinstance(value, int) else {"S": str(value)}


class JumpingClock:
    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def now(self) -> datetime:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


def _move(dynamodb: Any, table: str, name_table: str, segments: int, clock: JumpingClock) -> Any:
    return sync_names(
        dynamodb, table, name_table, BUCKET, move=True, segments=segments, now=clock.now, sleep=clock.sleep
    )


def measure_move(count: int, segments: int) -> dict[str, Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        table, name_table = "FileMetaData", "FileNameIndex"
        dynamodb.create_table(**schema.create_table_request(table))
        dynamodb.create_table(**schema.create_name_table_request(name_table))
        print(f"seeding {count:,} entries", file=sys.stderr)
        seed(dynamodb, table, name_table, count)
        clock = JumpingClock()
        tracemalloc.start()
        started = time.perf_counter()
        first = _move(dynamodb, table, name_table, segments, clock)
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        started = time.perf_counter()
        second = _move(dynamodb, table, name_table, segments, clock)
        again = time.perf_counter() - started
    return {
        "entries": count,
        "seconds": round(seconds, 1),
        "secondsPer1000": round(seconds / count * 1000, 2),
        "peakMiB": round(peak / 2**20, 1),
        "first": first.to_json(),
        "againSeconds": round(again, 1),
        "again": second.to_json(),
    }


def _units(items: list[dict[str, Any]]) -> int:
    return sum(math.ceil(item_bytes(item) / 1024) * 2 for item in items)


def write_units() -> list[dict[str, Any]]:
    """Per sample name: the write units of a new key, an overwrite (in place) and a delete."""
    rows = []
    for number, name in enumerate(SAMPLE_NAMES):
        made = entry(number, name)
        terms = term_items(made, made[schema.ORDER_KEY])
        key_and_words = name_items(made, made[schema.ORDER_KEY])
        rows.append(
            {
                "name": name,
                "termItems": len(terms),
                "bytes": max(item_bytes(item) for item in terms),
                "newKey": _units(terms) + _units(key_and_words[:1]),
                "overwrite": 2 * _units(terms),
                "delete": _units(terms) + _units(key_and_words[:1]),
                "oldWordItemsWhileMoving": _units(key_and_words[1:]),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.name_move", description=__doc__)
    parser.add_argument("--entries", type=int, nargs="*", default=[1000])
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--units", action="store_true")
    args = parser.parse_args(argv)
    if args.units:
        for row in write_units():
            print(row)
    for count in args.entries:
        print(measure_move(count, args.segments))


if __name__ == "__main__":
    main()
