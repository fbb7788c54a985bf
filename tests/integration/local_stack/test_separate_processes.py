"""The stack as serve runs it (`SEPARATE_PROCESSES`): moto's server in a process of its own, the indexer as
worker processes polling the queue at once. The same rules as in one process: uploads and deletes are
indexed, the S3 event clock moves, a poison message reaches the dead-letter queue, a disabled event source
stops every worker; and no process outlives the stack, however it ends.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from moto.s3.models import s3_backends

from bench.local_stack import THIS_PROCESS, cpu_seconds
from local_stack.moto_server import EVENT_CLOCK_PATH
from local_stack.stack import DYNAMODB_LOCAL, SEPARATE_PROCESSES, InvalidConfigurationError, LocalFileSearch
from tests.integration.local_stack.conftest import MAX_RECEIVE_COUNT, dead_letter_soon_stack
from tests.integration.local_stack.test_event_source import visible_and_in_flight

GONE_TIMEOUT_S = 60.0


@pytest.fixture
def stack_of_processes() -> Iterator[LocalFileSearch]:
    with dead_letter_soon_stack(ready_timeout=60, **SEPARATE_PROCESSES) as stack:
        yield stack


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (the local stack's URL)
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, None


def post(url: str, body: bytes, method: str = "POST") -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_gone(pids: list[int]) -> list[int]:
    """The pids still running after GONE_TIMEOUT_S (none, when all went)."""
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while (alive := [pid for pid in pids if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def test_uploads_and_deletes_are_indexed_by_the_worker_processes(stack_of_processes):
    stack = stack_of_processes
    assert len(stack.child_pids) == 1 + SEPARATE_PROCESSES["indexer_processes"]  # moto, the workers
    assert all(running(pid) for pid in stack.child_pids)
    assert os.getpid() not in stack.child_pids
    s3 = stack.client("s3")
    day = dt.datetime(2017, 8, 20, 9, 15, tzinfo=dt.UTC)
    with stack.s3_event_clock(day):  # moto's clock moves in moto's process
        s3.put_object(Bucket=stack.bucket, Key="USER001_dated.txt", Body=b"from 2017")
    keys = [f"USER001_file {index:02d}.txt" for index in range(30)]
    for key in keys:
        s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x")
    s3.delete_object(Bucket=stack.bucket, Key=keys[0])
    stack.wait_until_indexed(timeout=120)

    # The objects live in moto's process: this process's moto (which other tests may use) has none of them.
    here = s3_backends["123456789012"]["aws"].buckets.get(stack.bucket)
    assert here is None or not {"USER001_dated.txt", *keys} & set(here.keys)
    status, dated = get_json(f"{stack.api_url}/files/{quote('USER001_dated.txt', safe='')}")
    assert status == 200
    assert dated["uploadDate"].startswith("2017-08-20T09:15")
    assert get_json(f"{stack.api_url}/files/{quote(keys[0], safe='')}")[0] == 404
    status, listed = get_json(f"{stack.api_url}/files?user=USER001&limit=100")
    assert status == 200
    assert sorted(item["objectKey"] for item in listed["items"]) == sorted([*keys[1:], "USER001_dated.txt"])
    # After the block the events carry today's time again.
    s3.put_object(Bucket=stack.bucket, Key="USER001_today.txt", Body=b"now")
    stack.wait_until_indexed(timeout=60)
    today = get_json(f"{stack.api_url}/files/{quote('USER001_today.txt', safe='')}")[1]
    assert today["uploadDate"].startswith(dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"))


def test_a_poison_message_reaches_the_dead_letter_queue(stack_of_processes):
    stack = stack_of_processes
    sqs = stack.client("sqs")
    malformed = "this is not an S3 event notification"
    sqs.send_message(QueueUrl=stack.queue_url, MessageBody=malformed)
    stack.client("s3").put_object(Bucket=stack.bucket, Key="USER002_fine.txt", Body=b"fine")

    stack.wait_until_indexed(timeout=120)

    dead = sqs.receive_message(QueueUrl=stack.dlq_url, MessageSystemAttributeNames=["All"])["Messages"]
    assert [message["Body"] for message in dead] == [malformed]
    assert int(dead[0]["Attributes"]["ApproximateReceiveCount"]) >= MAX_RECEIVE_COUNT
    assert visible_and_in_flight(sqs, stack.queue_url) == 0
    assert get_json(f"{stack.api_url}/files/{quote('USER002_fine.txt', safe='')}")[0] == 200


def test_a_disabled_event_source_stops_every_worker(stack_of_processes):
    stack = stack_of_processes
    sqs = stack.client("sqs")
    keys = [f"USER003_waiting {index}.txt" for index in range(6)]
    with stack.event_source_disabled():
        for key in keys:
            stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=b"x")
        time.sleep(3)  # longer than a worker's long poll: any worker still receiving would take them
        attributes = sqs.get_queue_attributes(QueueUrl=stack.queue_url, AttributeNames=["All"])["Attributes"]
        assert int(attributes["ApproximateNumberOfMessages"]) == len(keys)
        assert int(attributes["ApproximateNumberOfMessagesNotVisible"]) == 0
    stack.wait_until_indexed(timeout=60)
    for key in keys:
        assert get_json(f"{stack.api_url}/files/{quote(key, safe='')}")[0] == 200


def test_the_event_clock_refuses_what_it_cannot_read(stack_of_processes):
    url = f"{stack_of_processes.aws_endpoint}{EVENT_CLOCK_PATH}"

    status, message = post(url, b'{"offset": 5}')
    assert status == 400
    assert "offsetSeconds" in message
    assert post(url, b'{"offsetSeconds": "yesterday"}')[0] == 400
    assert post(url, b"", method="GET")[0] == 405
    assert post(url, b'{"offsetSeconds": null}') == (200, '{"previousOffsetSeconds": null}')


def test_closing_the_stack_leaves_no_process_behind():
    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", **SEPARATE_PROCESSES) as stack:
        pids = stack.child_pids
        assert len(pids) == 1 + SEPARATE_PROCESSES["indexer_processes"]
        assert set(pids) <= set(children(os.getpid()))
    assert wait_gone(pids) == []
    assert stack.child_pids == []


def test_the_stack_refuses_a_negative_number_of_indexer_processes():
    with pytest.raises(InvalidConfigurationError, match="indexer_processes must be 0 or more, not -1"):
        LocalFileSearch(aws_port=0, api_port=0, indexer_processes=-1)


def test_serve_stops_every_process_on_sigterm(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0", POWERTOOLS_LOG_LEVEL="WARNING")
    ready = serve.wait_ready()
    pids = children(serve.process.pid)
    # moto's server, the indexer's workers, DynamoDB Local (and multiprocessing's resource tracker).
    assert len(pids) >= 1 + SEPARATE_PROCESSES["indexer_processes"]
    s3 = boto3.client("s3", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    s3.put_object(Bucket=ready["bucket"], Key="USER004_served.txt", Body=b"x")
    deadline = time.monotonic() + 60
    while get_json(f"{ready['apiUrl']}/files/{quote('USER004_served.txt', safe='')}")[0] != 200:
        assert time.monotonic() < deadline, "the upload was not indexed within 60 s"
        time.sleep(0.1)

    status, rest_of_stdout = serve.stop(signal.SIGTERM)

    assert status == 0, serve.stderr()
    assert rest_of_stdout == ""  # no worker wrote to serve's stdout
    assert wait_gone(pids) == []


def test_moto_and_the_workers_stop_by_themselves_when_serve_is_killed(start_serve):
    # moto's DynamoDB: DynamoDB Local has no watch of its own and would outlive a killed serve.
    serve = start_serve(API_PORT="0", AWS_PORT="0", TABLE_ENGINE="moto", POWERTOOLS_LOG_LEVEL="WARNING")
    serve.wait_ready()
    pids = children(serve.process.pid)
    assert len(pids) >= 1 + SEPARATE_PROCESSES["indexer_processes"]

    serve.process.kill()
    serve.process.wait(10)

    assert wait_gone(pids) == []


@pytest.mark.dynamodb_local
def test_the_stack_names_its_processes_and_the_bench_reads_their_cpu():
    with dead_letter_soon_stack(ready_timeout=60, table_engine=DYNAMODB_LOCAL, **SEPARATE_PROCESSES) as stack:
        processes = stack.processes
        assert sorted(processes) == ["dynamodb-local", "indexer", "moto"]
        assert len(processes["indexer"]) == SEPARATE_PROCESSES["indexer_processes"]
        assert all(running(pid) for pids in processes.values() for pid in pids)
        assert stack.child_pids == processes["moto"] + processes["indexer"]  # Java is not a child it reaps

        before = cpu_seconds(processes)
        s3 = stack.client("s3")
        for n in range(20):
            s3.put_object(Bucket=stack.bucket, Key=f"USER001_cpu {n}.txt", Body=b"x")
        stack.wait_until_indexed(timeout=60)
        after = cpu_seconds(processes)

    assert set(after) == set(processes) | {THIS_PROCESS}
    assert all(after[role] >= before[role] for role in before)
    assert after["dynamodb-local"] > before["dynamodb-local"], "20 uploads indexed cost Java some CPU"
