"""Measure 5: freshness on the local stack, from `put_object` returning to the file being found by the API.

The whole product runs locally (`local_stack.stack.LocalFileSearch`: moto's server for S3, SQS and
DynamoDB, the SQS poller standing in for Lambda's event source mapping, the API Gateway stand-in). Each
upload is timed alone: `put_object` returns, then `GET /files/{key}` is asked every few milliseconds until
it answers 200. The comparison is one `GET /files/{key}` of a file already indexed: nothing can be found
faster than one request, so the ratio says how much of the wait is the pipeline.

What this does not model: in AWS, the event source mapping's batching window (`infra/ingest.py`) holds a
batch back for up to its length when the queue is quiet, and S3's event delivery takes its own time.
"""

from __future__ import annotations

import statistics
import time
import urllib.error
import urllib.request
from urllib.parse import quote

from bench.report import Measured, Row, progress

POLL_INTERVAL_SECONDS = 0.005


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (the local stack's URL)
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        error.read()
        return int(error.code)


def _time_until_found(url: str, deadline_seconds: float = 30.0) -> tuple[float, int]:
    """Seconds until `url` answers 200, and how many requests that took."""
    start = time.perf_counter()
    requests = 0
    while True:
        requests += 1
        if _status(url) == 200:
            return time.perf_counter() - start, requests
        if time.perf_counter() - start > deadline_seconds:
            raise TimeoutError(f"{url} not found after {deadline_seconds:.0f} s")
        time.sleep(POLL_INTERVAL_SECONDS)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def run(*, uploads: int) -> Measured:
    from local_stack.stack import LocalFileSearch

    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack:
        s3 = stack.client("s3")

        def url(key: str) -> str:
            return f"{stack.api_url}/files/{quote(key, safe='')}"

        # The first upload pays both handlers' cold starts; it is not a sample.
        s3.put_object(Bucket=stack.bucket, Key="USER000_warm-up.txt", Body=b"warm-up")
        _time_until_found(url("USER000_warm-up.txt"))

        progress(f"freshness: {uploads} uploads, each polled until GET /files/{{key}} finds it")
        samples: list[float] = []
        polls: list[int] = []
        for index in range(uploads):
            key = f"USER{index % 20:03d}_fresh {index:05d}.txt"
            s3.put_object(Bucket=stack.bucket, Key=key, Body=b"fresh")
            seconds, requests = _time_until_found(url(key))
            samples.append(seconds * 1000)
            polls.append(requests)
            if (index + 1) % 50 == 0:
                progress(f"freshness: {index + 1}/{uploads}")

        found = []
        for index in range(min(uploads, 50)):
            start = time.perf_counter()
            _status(url(f"USER{index % 20:03d}_fresh {index:05d}.txt"))
            found.append((time.perf_counter() - start) * 1000)
    floor_ms = statistics.median(found)
    first_try = sum(1 for requests in polls if requests == 1) / len(polls)
    # A file found by the first GET was indexed before that request finished: such samples are upper
    # bounds, dominated by one request made while the indexer runs beside it.
    note = (
        f"{uploads} uploads one at a time, polled every {POLL_INTERVAL_SECONDS * 1000:g} ms, "
        f"{first_try:.0%} found by the first GET; ours ÷ one GET (floor 1×)"
    )
    rows = [
        Row(
            f"5. freshness p{label}: put_object to found by the API",
            "ms",
            percentile(samples, fraction),
            floor_ms,
            "one GET /files/{key}",
            percentile(samples, fraction) / floor_ms,
            note + "; local stack on moto",
        )
        for label, fraction in (("50", 0.5), ("99", 0.99))
    ]
    return Measured(rows, {"freshness": {"samplesMs": samples, "oneGetMs": floor_ms}})
