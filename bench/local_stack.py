"""Measure 19: the local stack `make serve` starts, holding a bulk upload: indexing rate and list pages.

The stack is serve's (`local_stack.stack.LocalFileSearch` with `table_engine="auto"`: the table in
DynamoDB Local, moto for the rest; `SEPARATE_PROCESSES`: moto's server in a process of its own, the indexer
as two execution environments polling the queue at once). `--in-process` measures the stack tests start
instead (moto and one indexer poller in the bench's own process).

`uploaders` threads upload `files` objects through moto's S3 (several users, file names of a few words,
five extensions, sizes from bytes to megabytes); the figure is the files indexed per second from the first
upload to the queue being empty with nothing in flight (so it is at most the upload rate, which is also
printed). Over the same span, each process's CPU time per indexed upload (Linux: `/proc/PID/stat`):
DynamoDB Local, the indexer's workers, moto, and this process (the uploaders' SDK calls, the stack's
stand-ins). Indexing is bound by that CPU: the machine's cores divided by the CPU of everything but the
indexer is the rate the stack could reach with an indexer that cost nothing, printed beside the target.
Then every list shape the API answers is read over HTTP, as
a client would: each shape's first `pages` pages (following `nextCursor`), `runs` times; the figures are
the page times' p50 and p95 against the 300 ms a page should stay under. Every ratio is 1× or more where
the figure meets its target.

    python -m bench.local_stack --files 100000    # the figure (about half an hour on two cores)
    python -m bench --only local_stack            # within the bench table, at the bench's size
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

from bench.freshness import percentile
from bench.report import Measured, Row, markdown_table, progress, text_table

INDEXING_TARGET_PER_S = 200.0
PAGE_TARGET_MS = 300.0
USERS = 50
WORDS = ("report", "invoice", "holiday", "budget", "draft", "photo", "notes", "contract", "summary", "plan")
EXTENSIONS = ("pdf", "txt", "jpg", "csv", "docx")


def object_key(index: int) -> str:
    """The `index`-th file: user USERnnn, two words and a number in its name, one of five extensions."""
    first = WORDS[index % len(WORDS)]
    second = WORDS[(index // len(WORDS)) % len(WORDS)]
    return f"USER{index % USERS:03d}_{first} {second} {index:06d}.{EXTENSIONS[index % len(EXTENSIONS)]}"


def object_size(index: int) -> int:
    """Sizes spread over six orders of magnitude (the body uploaded is this many bytes, capped)."""
    return int(10 ** (1 + (index * 7919 % 6000) / 1000))


def list_shapes(bucket: str, today: str) -> dict[str, dict[str, str]]:
    """Every list shape of `GET /files`, by name: its query string."""
    return {
        "user list": {"user": "USER007"},
        "bucket list by size": {"bucket": bucket},
        "name search": {"bucket": bucket, "q": "budget"},
        "ext": {"bucket": bucket, "ext": "pdf"},
        "prefix": {"bucket": bucket, "prefix": "USER007_"},
        "size-bounded bucket list": {"bucket": bucket, "minSize": "1000", "maxSize": "100000"},
        "box": {"bucket": bucket, "minSize": "1000", "maxSize": "100000", "from": today, "to": today},
    }


def get_json(url: str) -> tuple[int, dict[str, object]]:
    """The status and JSON body of a GET of the local stack's API (an error's body as `{"error": text}`)."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (the local stack's URL)
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), {"error": error.read().decode("utf-8", "replace")}


def read_pages(api_url: str, query: dict[str, str], *, pages: int) -> list[float]:
    """Times (ms) of the first `pages` pages of one list; fails on an answer other than 200."""
    times: list[float] = []
    cursor: str | None = None
    for _ in range(pages):
        params = {**query, "limit": "100", **({"cursor": cursor} if cursor else {})}
        url = f"{api_url}/files?{urlencode(params)}"
        start = time.perf_counter()
        status, body = get_json(url)
        times.append((time.perf_counter() - start) * 1000)
        if status != 200:
            raise RuntimeError(f"GET {url} answered {status}: {body}")
        cursor = body.get("nextCursor")  # type: ignore[assignment]
        if not cursor:
            break
    return times


# The stack's roles (`LocalFileSearch.processes`) as the figures name them; this process is THIS_PROCESS.
CPU_ROLES = {"dynamodb-local": "DynamoDB Local", "indexer": "indexer workers", "moto": "moto"}
THIS_PROCESS = "uploaders (this process)"
INDEXER = CPU_ROLES["indexer"]


def cpu_seconds(processes: dict[str, list[int]]) -> dict[str, float]:
    """CPU time (user + system, seconds) so far of each role's processes, and of this process; {} where
    /proc is missing (not Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        found = {role: sum(_process_ticks(pid) for pid in pids) / tick for role, pids in processes.items()}
    except OSError:
        return {}
    return found | {THIS_PROCESS: time.process_time()}


def _process_ticks(pid: int) -> int:
    # Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_rows(cpu_ms: dict[str, float], note: str) -> list[Row]:
    """CPU per indexed upload by process, in all, and the rate with an indexer that cost nothing; none
    unless the indexer ran in processes of its own (in one process with the rest, its CPU is not apart)."""
    if INDEXER not in cpu_ms:
        return []
    cores = len(os.sched_getaffinity(0))  # Linux, as the figures are (/proc)
    rows = [
        Row(f"19. local stack CPU per upload: {role}", "ms", ms, None, "", None, note)
        for role, ms in sorted(cpu_ms.items(), key=lambda item: -item[1])
    ]
    total = sum(cpu_ms.values())
    rows.append(Row("19. local stack CPU per upload: all", "ms", total, None, "", None, note))
    others = total - cpu_ms[INDEXER]
    ceiling = cores * 1000 / others if others > 0 else float("inf")
    rows.append(
        Row(
            "19. local stack: uploads/s with an indexer costing nothing",
            "uploads/s",
            ceiling,
            INDEXING_TARGET_PER_S,
            "target",
            ceiling / INDEXING_TARGET_PER_S,
            f"{cores} cores ÷ the CPU per upload of every process but the indexer's workers",
        )
    )
    return rows


def run(
    *, files: int, uploaders: int = 8, pages: int = 5, runs: int = 5, in_process: bool = False
) -> Measured:
    from local_stack.stack import AUTO, SEPARATE_PROCESSES, LocalFileSearch

    processes = {} if in_process else SEPARATE_PROCESSES
    with LocalFileSearch(
        aws_port=0, api_port=0, web_port=0, log_level="WARNING", table_engine=AUTO, **processes
    ) as stack:
        engine = "moto (no Java)" if stack.table_engine_note else "DynamoDB Local"
        if in_process:
            engine += "; moto and the indexer in one process"
        stack.wait_until_indexed()
        s3 = stack.client("s3")
        progress(f"local_stack: {files} uploads by {uploaders} uploaders; table in {engine}")
        done = 0
        lock = threading.Lock()

        def upload(index: int) -> None:
            nonlocal done
            body = random.randbytes(min(object_size(index), 4096))
            s3.put_object(Bucket=stack.bucket, Key=object_key(index), Body=body)
            with lock:
                done += 1
                if done % 5000 == 0:
                    progress(f"local_stack: {done}/{files} uploaded")

        processes = {CPU_ROLES.get(role, role): pids for role, pids in stack.processes.items()}
        cpu_before = cpu_seconds(processes)
        started = time.perf_counter()
        with ThreadPoolExecutor(uploaders) as pool:
            list(pool.map(upload, range(files)))
        uploaded = time.perf_counter() - started
        stack.wait_until_indexed(timeout=max(600.0, files / 10))
        indexed = time.perf_counter() - started
        cpu_after = cpu_seconds(processes)
        # {} when /proc could not be read (not Linux, or a process gone): no CPU rows then.
        spent = {role: cpu_after[role] - cpu_before[role] for role in cpu_before if cpu_after}
        cpu_ms = {role: seconds * 1000 / files for role, seconds in spent.items()}
        progress(f"local_stack: uploaded in {uploaded:.0f} s, indexed in {indexed:.0f} s")

        today = dt.datetime.now(dt.UTC).date().isoformat()
        page_times: dict[str, list[float]] = {}
        for name, query in list_shapes(stack.bucket, today).items():
            read_pages(stack.api_url, query, pages=1)  # the first request of a shape warms its clients
            times = [ms for _ in range(runs) for ms in read_pages(stack.api_url, query, pages=pages)]
            page_times[name] = times
            progress(f"local_stack: {name}: p95 {percentile(page_times[name], 0.95):.0f} ms")

    note = f"{files} files, {uploaders} uploaders, table in {engine}"
    rows = [
        Row("19. local stack: uploads/s", "uploads/s", files / uploaded, None, "", None, note),
        Row(
            "19. local stack: uploads indexed/s",
            "uploads/s",
            files / indexed,
            INDEXING_TARGET_PER_S,
            "target",
            files / indexed / INDEXING_TARGET_PER_S,
            note + "; first upload to queue empty; ratio ours ÷ target",
        ),
    ]
    rows += cpu_rows(cpu_ms, note)
    for name, times in page_times.items():
        for label, fraction in (("50", 0.5), ("95", 0.95)):
            rows.append(
                Row(
                    f"19. local stack page p{label}: {name}",
                    "ms",
                    percentile(times, fraction),
                    PAGE_TARGET_MS,
                    "target",
                    PAGE_TARGET_MS / percentile(times, fraction),
                    f"{len(times)} pages of 100 at {files} files",
                )
            )
    return Measured(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_stack", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000, help="files uploaded (default 100000)")
    parser.add_argument("--uploaders", type=int, default=8, help="concurrent uploaders (default 8)")
    parser.add_argument("--pages", type=int, default=5, help="pages read of each list (default 5)")
    parser.add_argument("--runs", type=int, default=5, help="reads of each list (default 5)")
    parser.add_argument(
        "--in-process", action="store_true", help="moto and one indexer poller in this process (as tests run)"
    )
    args = parser.parse_args(argv)
    from bench import aws

    aws.prepare_process()
    # The handlers' logs go to stdout in Lambda; here stdout carries only the table.
    table_stream, sys.stdout = sys.stdout, sys.stderr
    measured = run(
        files=args.files,
        uploaders=args.uploaders,
        pages=args.pages,
        runs=args.runs,
        in_process=args.in_process,
    )
    print(text_table(measured.rows), markdown_table(measured.rows), sep="\n\n", file=table_stream)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
