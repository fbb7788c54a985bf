"""Measure 23: what uploads cost the index, black-box: `make serve` on DynamoDB Local, its capacity counted.

Measure 21 drives the indexer's own write path; this one drives nothing but the product as a user meets
it. `python -m local_stack.serve` (what `make serve` runs) is started as a child process with its table on
DynamoDB Local behind a proxy of this process (`CapacityProxy`): every request of the stack's functions to
DynamoDB passes through it, and each one is asked for its consumed capacity (`ReturnConsumedCapacity`:
`INDEXES` for writes, `TOTAL` for reads) before it goes on. The stack's answers go back unchanged
(DynamoDB's CRC of the body holds). Files are then uploaded to the stack's bucket through its S3 endpoint,
as an application would, and the units summed while the indexer takes them in, per table and GSI:

- **busy**: `files` of measure 16's names (its people, camera files, documents, screenshots, ids, CJK),
  uploaded by eight uploaders at once, so the indexer's batches are full; then each overwritten (a new
  size), then each deleted; and the same for ordinary document names (`upload_writes.DOCUMENT_NAMES`, in
  folders of their own) and for a 255-byte name (`upload_writes.LONG_NAME`);
- **one at a time**: `alone` of the names, each uploaded after the last one is indexed (batches of one).

Each phase ends when the queue is empty with nothing in flight and the proxy has seen no request for a
moment; a message in the dead-letter queue fails the measure (an upload lost). The units per upload are
the phase's units divided by its uploads: what the indexer wrote for them, its upload statistics (one
upload in a hundred) included. Then a few name searches are read over HTTP, every page, and checked
against the names uploaded (`name_terms.matches`): read units per item returned, and pages.

    .venv/bin/python -m bench --only served_writes --no-charts    # 1,000 files: about 8 minutes
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode, urlsplit

from bench.backfill_batch import PRICES
from bench.local_stack import get_json
from bench.report import Row, progress
from bench.upload_writes import DOCUMENT_NAMES, LONG_NAME, PARTS, WRITE_OPERATIONS, Units, describe, tally

READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})
UPLOADERS = 8
READY_TIMEOUT_S = 180.0
# The proxy is quiet when it has seen no request for this long (the indexer's last writes are done).
QUIET_S = 0.5
# Name searches read over HTTP after the busy uploads: words of measure 16's names, common and rare.
SEARCH_WORDS = ("img", "report", "2017", "screenshot")


@dataclass
class Tally:
    """The consumed capacity the proxy saw since the last `take`: write answers, read units, requests."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    read_units: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    failed_conditions: int = 0


class CapacityProxy:
    """An HTTP proxy in front of a DynamoDB endpoint that asks every request for its consumed capacity and
    keeps the answers. DynamoDB Local checks no signature, so the changed body is taken as sent."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._lock = threading.Lock()
        self._tally = Tally()
        self._last_request = time.monotonic()
        self._local = threading.local()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, answer = proxy.forward(dict(self.headers.items()), body)
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="capacity-proxy", daemon=True)

    def __enter__(self) -> CapacityProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = http.client.HTTPConnection(
                self._host, self._port, timeout=120
            )
        return connection

    def forward(self, headers: Mapping[str, str], body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        target = next((value for name, value in headers.items() if name.lower() == "x-amz-target"), "")
        operation = target.rsplit(".", 1)[-1]
        asked = None
        if operation in WRITE_OPERATIONS or operation in READ_OPERATIONS:
            request = json.loads(body or b"{}")
            asked = "INDEXES" if operation in WRITE_OPERATIONS else "TOTAL"
            request.setdefault("ReturnConsumedCapacity", asked)
            body = json.dumps(request).encode()
        sent = {
            name: value for name, value in headers.items() if name.lower() not in ("content-length", "host")
        }
        sent["Content-Length"] = str(len(body))
        connection = self._connection()
        try:
            connection.request("POST", "/", body=body, headers=sent)
            response = connection.getresponse()
        except (http.client.HTTPException, OSError):
            connection.close()  # a dropped keep-alive connection: once more on a new one
            self._local.connection = None
            connection = self._connection()
            connection.request("POST", "/", body=body, headers=sent)
            response = connection.getresponse()
        answer = response.read()
        if asked is not None:
            self._keep(operation, response.status, answer)
        return response.status, response.getheaders(), answer

    def _keep(self, operation: str, status: int, answer: bytes) -> None:
        parsed = json.loads(answer or b"{}")
        consumed = parsed.get("ConsumedCapacity")
        answers = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        with self._lock:
            self._last_request = time.monotonic()
            self._tally.requests[operation] += 1
            if status != 200 and "ConditionalCheckFailed" in str(parsed.get("__type", "")):
                self._tally.failed_conditions += 1
            if operation in WRITE_OPERATIONS:
                self._tally.writes.extend(answers)
            else:
                self._tally.read_units += sum(float(one.get("CapacityUnits", 0.0)) for one in answers)

    def quiet_for(self) -> float:
        with self._lock:
            return time.monotonic() - self._last_request

    def take(self) -> Tally:
        with self._lock:
            taken, self._tally = self._tally, Tally()
        return taken


@dataclass(frozen=True)
class Served:
    """What the READY line of `local_stack.serve` says, as this measure uses it."""

    api_url: str
    aws_endpoint: str
    bucket: str
    queue_url: str
    dlq_url: str
    table: str
    name_table: str


@contextmanager
def serve(dynamodb_endpoint: str) -> Iterator[Served]:
    """`python -m local_stack.serve` (as `make serve`) on free ports with its table behind the proxy."""
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
        "API_PORT": "0",
        "AWS_PORT": "0",
        "WEB_PORT": "0",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "local_stack.serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready: dict[str, Any] | None = None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while ready is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            if line.startswith("READY "):
                ready = json.loads(line.removeprefix("READY "))
        if ready is None:
            raise RuntimeError(f"local_stack.serve did not print READY (exit status {process.poll()})")
        if not ready.get("nameTable"):
            raise RuntimeError(
                "the served stack keeps no name index (cdk.json nameIndex): nothing to measure"
            )
        yield Served(
            api_url=ready["apiUrl"],
            aws_endpoint=ready["awsEndpoint"],
            bucket=ready["bucket"],
            queue_url=ready["queueUrl"],
            dlq_url=ready["dlqUrl"],
            table=ready["table"],
            name_table=ready["nameTable"],
        )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _client(service: str, served: Served) -> Any:
    import boto3

    return boto3.client(
        service,
        endpoint_url=served.aws_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def wait_until_indexed(served: Served, proxy: CapacityProxy, sqs: Any, *, timeout: float) -> None:
    """Until the queue holds nothing, visible or in flight, twice in a row, and the proxy is quiet; raises
    if a message went to the dead-letter queue (an upload the indexer could not index)."""
    deadline = time.monotonic() + timeout
    idle = 0
    while idle < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the served stack did not index the uploads within {timeout:.0f} s")
        time.sleep(0.2)
        counts = sqs.get_queue_attributes(
            QueueUrl=served.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        waiting = sum(int(value) for value in counts.values())
        idle = idle + 1 if waiting == 0 and proxy.quiet_for() > QUIET_S else 0
    dead = sqs.get_queue_attributes(QueueUrl=served.dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    if int(dead["Attributes"]["ApproximateNumberOfMessages"]):
        raise RuntimeError("a message went to the dead-letter queue: the indexer could not index an upload")


@dataclass(frozen=True)
class Phase:
    """The units of one phase's uploads, per upload."""

    uploads: int
    units: Units
    requests: dict[str, float]
    failed_conditions: int = 0


def phase_units(tally_: Tally, uploads: int, served: Served) -> Phase:
    units = tally(tally_.writes, entry_tables=(served.table,), name_table=served.name_table)
    for part in PARTS:
        units.parts[part] /= uploads
    requests = {name: n / uploads for name, n in tally_.requests.items()}
    return Phase(uploads, units, requests, tally_.failed_conditions)


def run_phase(
    label: str,
    work: Sequence[tuple[str, bytes | None]],
    *,
    served: Served,
    proxy: CapacityProxy,
    s3: Any,
    sqs: Any,
    one_at_a_time: bool = False,
) -> Phase:
    """Put (bytes) or delete (None) each key of `work`, and the units the index wrote for them."""

    def apply(job: tuple[str, bytes | None]) -> None:
        key, body = job
        if body is None:
            s3.delete_object(Bucket=served.bucket, Key=key)
        else:
            s3.put_object(Bucket=served.bucket, Key=key, Body=body)

    timeout = max(300.0, len(work) / 5)
    proxy.take()  # nothing before this phase counts
    if one_at_a_time:
        for job in work:
            apply(job)
            wait_until_indexed(served, proxy, sqs, timeout=timeout)
    else:
        with ThreadPoolExecutor(UPLOADERS) as pool:
            list(pool.map(apply, work))
        wait_until_indexed(served, proxy, sqs, timeout=timeout)
    phase = phase_units(proxy.take(), len(work), served)
    progress(f"served writes: {label}: {phase.units.total:.1f} write units an upload over {len(work)}")
    return phase


@dataclass(frozen=True)
class Search:
    word: str
    found: int
    expected: int
    pages: int
    read_units: float


def search(served: Served, proxy: CapacityProxy, word: str, names: Sequence[str]) -> Search:
    """Every page of a bucket's name search for `word`, its read units, checked against `names`."""
    from file_index.rules.name_terms import matches, query_words

    expected = sum(1 for name in names if matches(name, query_words(word)))
    proxy.take()
    found, pages, cursor = 0, 0, None
    while True:
        params = {
            "bucket": served.bucket,
            "q": word,
            "limit": "100",
            **({"cursor": cursor} if cursor else {}),
        }
        url = f"{served.api_url}/files?{urlencode(params)}"
        status, body = get_json(url)
        if status != 200:
            raise RuntimeError(f"GET {url} answered {status}: {body}")
        pages += 1
        found += len(body.get("items", []))  # type: ignore[arg-type]
        cursor = body.get("nextCursor")
        if not cursor:
            break
    return Search(word, found, expected, pages, proxy.take().read_units)


def _names(files: int) -> list[tuple[str, str]]:
    """(user, name) of `files` of measure 16's names."""
    from bench.name_data import make_files

    sample, _ = make_files(files, seed=23)
    return [(file.user, file.key.split("/", 1)[1]) for file in sample]


def _body(size: int) -> bytes:
    return b"x" * size


def run(*, files: int, alone: int = 20) -> list[Row]:
    from local_stack.dynamodb_local import DynamoDBLocalProcess  # Java only when measured

    people = _names(files)
    documents = [(f"user{n % 12:04d}", name) for n in range(max(1, files // 10)) for name in DOCUMENT_NAMES][
        : max(len(DOCUMENT_NAMES), files // 4)
    ]
    sets: dict[str, list[tuple[str, str]]] = {
        "measure 16's names": people,
        "document names": documents,
        "a 255-byte name": [(f"user{n:04d}", LONG_NAME) for n in range(max(1, files // 100))],
    }
    results: dict[str, dict[str, Phase]] = {}
    searches: list[Search] = []
    with DynamoDBLocalProcess() as local, CapacityProxy(local.endpoint_url) as proxy:
        progress(f"served writes: starting local_stack.serve on DynamoDB Local behind {proxy.url}")
        with serve(proxy.url) as served:
            s3, sqs = _client("s3", served), _client("sqs", served)
            phase = partial(run_phase, served=served, proxy=proxy, s3=s3, sqs=sqs)
            wait_until_indexed(served, proxy, sqs, timeout=READY_TIMEOUT_S)
            for number, (label, uploads) in enumerate(sets.items()):
                # A folder per upload, so no two keys meet; the name is the upload's.
                keys = [f"{user}/s{number}n{n}/{name}" for n, (user, name) in enumerate(uploads)]
                phases = {
                    "new key": phase(
                        f"{label}, new keys",
                        [(key, _body(10 + n % 90)) for n, key in enumerate(keys)],
                    ),
                }
                if number == 0:
                    names = [name for _, name in uploads]
                    searches = [search(served, proxy, word, names) for word in SEARCH_WORDS]
                phases["overwrite"] = phase(
                    f"{label}, overwrites",
                    [(key, _body(200 + n % 90)) for n, key in enumerate(keys)],
                )
                phases["delete"] = phase(
                    f"{label}, deletes",
                    [(key, None) for key in keys],
                )
                results[label] = phases
            lone = [
                (f"{user}/alone{n}/{name}", _body(10 + n)) for n, (user, name) in enumerate(people[:alone])
            ]
            results["measure 16's names, one at a time"] = {
                "new key": phase(
                    "one at a time, new keys",
                    lone,
                    one_at_a_time=True,
                )
            }
    return rows(results, searches, files)


def rows(results: Mapping[str, Mapping[str, Phase]], searches: Sequence[Search], files: int) -> list[Row]:
    """Per name set and kind, write units per upload against the entry's alone (ratio ours ÷ entry's); per
    search word, read units per item returned (a search whose count differs from the names' fails)."""
    price = PRICES.dynamodb_per_million_write_units
    out: list[Row] = []
    for label, phases in results.items():
        for kind, phase in phases.items():
            units = phase.units
            split, requests, failed = describe(units, phase.requests, phase.failed_conditions)
            out.append(
                Row(
                    f"23. served: write units per {kind}, {label}",
                    "WCU/upload",
                    units.total,
                    units.entries,
                    "the entry and its GSIs alone",
                    None if units.entries == 0 else units.total / units.entries,
                    f"ours ÷ the entry's; {split}; ${units.total * price:,.2f} per million; {phase.uploads} "
                    f"uploads through local_stack.serve's S3, DynamoDB Local's ConsumedCapacity; requests "
                    f"per upload: {requests}{failed}",
                )
            )
    for found in searches:
        if found.found != found.expected:
            raise RuntimeError(
                f"the served name search for {found.word!r} found {found.found} files, the names hold "
                f"{found.expected}"
            )
        out.append(
            Row(
                f"23. served: read units per item returned, name search {found.word!r}",
                "RCU/item",
                found.read_units / found.found if found.found else None,
                None,
                "",
                None,
                f"{found.found} found (as the names say) in {found.pages} pages of 100, "
                f"{found.read_units:.1f} read units; over {files} of measure 16's names; "
                "GET /files?bucket&q through the served API",
            )
        )
    return out
