"""`python -m local_stack.serve` as a black box: READY, upload through its S3, find through its API, stop."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlsplit

import boto3
import pytest

from tests.integration.local_stack.conftest import ServeProcess, free_port

READY_KEYS = {
    "apiUrl",
    "awsEndpoint",
    "bucket",
    "queueUrl",
    "dlqUrl",
    "table",
    "region",
    "webUrl",
    "userPoolId",
    "userPoolClientId",
}


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (the local stack)
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_serve_says_where_the_page_is_and_who_may_sign_in(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0")
    ready = serve.wait_ready()
    said = (
        f"the page: {ready['webUrl']}; sign in as {ready['demoUser']} / {ready['demoPassword']}, "
        f"or the admin {ready['adminUser']} / {ready['adminPassword']}"
    )
    deadline = time.monotonic() + 30
    while said not in serve.stderr():
        assert time.monotonic() < deadline, serve.stderr()
        time.sleep(0.1)


def test_serve_indexes_an_upload_and_finds_it_over_http(start_serve):
    api_port, aws_port = free_port(), free_port()
    serve = start_serve(API_PORT=str(api_port), AWS_PORT=str(aws_port))
    ready = serve.wait_ready()

    assert ready.keys() >= READY_KEYS
    assert urlsplit(ready["apiUrl"])[1] == f"127.0.0.1:{api_port}"
    assert urlsplit(ready["awsEndpoint"])[1] == f"127.0.0.1:{aws_port}"
    s3 = boto3.client("s3", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    key = "USER042/black box/report 1.txt"
    s3.put_object(Bucket=ready["bucket"], Key=key, Body=b"found through the API")

    deadline = time.monotonic() + 30
    while (answer := get_json(f"{ready['apiUrl']}/files/{quote(key, safe='')}"))[0] == 404:
        assert time.monotonic() < deadline, "the upload was not indexed within 30 s"
        time.sleep(0.1)
    status, item = answer
    assert status == 200
    assert item["objectKey"] == key
    assert item["bucketName"] == ready["bucket"]
    assert item["uploadUser"] == "USER042"
    assert item["size"] == len(b"found through the API")
    assert get_json(f"{ready['apiUrl']}/files?user=USER042")[1]["items"] == [item]

    exit_status, rest_of_stdout = serve.stop(signal.SIGTERM)
    assert exit_status == 0, serve.stderr()
    assert rest_of_stdout == "", "READY must be the only line on stdout"


def test_serve_stops_cleanly_on_sigint(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0")
    serve.wait_ready()
    exit_status, _ = serve.stop(signal.SIGINT)
    assert exit_status == 0, serve.stderr()


def test_make_serve_stops_the_stack_on_sigterm_then_make_dies_of_the_signal():
    """The documented behaviour of `make serve` under SIGTERM, which make decides, not the stack.

    GNU make handles SIGTERM by sending it on to the running recipe, waiting for the recipe to end, and
    then killing itself with the same signal: its exit status is 143 (128 + 15) whatever the recipe's.
    The stack inside stops cleanly; `python -m local_stack.serve` exits 0 (tested above).
    """
    # Set-up is not under test (`-o setup`); a make above this test must not lend its job server.
    env = {
        name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    }
    serve = ServeProcess(
        {**env, "API_PORT": "0", "AWS_PORT": "0"}, command=("make", "-s", "-o", "setup", "serve")
    )
    try:
        ready = serve.wait_ready()
        make_status, rest_of_stdout = serve.stop(signal.SIGTERM)

        assert make_status == -signal.SIGTERM, serve.stderr()
        log = serve.stderr()
        assert "SIGTERM received, stopping" in log
        assert log.rstrip().endswith("stopped"), log[-2000:]
        assert "Traceback" not in log
        assert rest_of_stdout == ""
        with socket.socket() as probe:  # the stack is gone: its API port is free again
            probe.bind(("127.0.0.1", urlsplit(ready["apiUrl"]).port or 0))
    finally:
        serve.close()


@pytest.mark.parametrize("variable", ["AWS_PORT", "API_PORT", "WEB_PORT"])
def test_serve_fails_clearly_when_a_port_is_taken(start_serve, variable):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        ports = {"AWS_PORT": "0", "API_PORT": "0", "WEB_PORT": "0", variable: str(port)}
        serve = start_serve(**ports)
        exit_status = serve.process.wait(60)
        assert serve.read_line(5) is None, "serve must not claim READY"

    assert exit_status != 0
    message = serve.stderr()
    assert f"port {port} on 127.0.0.1 is already in use" in message
    assert f"{variable}=0" in message
    assert "Traceback" not in message


def test_serve_rejects_a_port_that_is_not_a_number(start_serve):
    serve = start_serve(API_PORT="eighty", AWS_PORT="0")
    assert serve.process.wait(60) == 2
    assert "API_PORT='eighty' is not a port number" in serve.stderr()


@pytest.mark.dynamodb_local
def test_serve_keeps_the_table_in_dynamodb_local_when_told(start_serve, dynamodb_local):
    """`AWS_ENDPOINT_URL_DYNAMODB` moves the table to AWS's own emulator; the product works the same."""
    engine = dynamodb_local.client()
    try:
        serve = start_serve(API_PORT="0", AWS_PORT="0", AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local.endpoint_url)
        ready = serve.wait_ready()
        assert ready["dynamodbEndpoint"] == dynamodb_local.endpoint_url
        s3 = boto3.client("s3", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
        s3.put_object(Bucket=ready["bucket"], Key="USER007_local.txt", Body=b"in DynamoDB Local")

        deadline = time.monotonic() + 30
        while get_json(f"{ready['apiUrl']}/files/USER007_local.txt")[0] == 404:
            assert time.monotonic() < deadline, "the upload was not indexed within 30 s"
            time.sleep(0.1)
        key = {"objectKey": {"S": "USER007_local.txt"}}
        item = engine.get_item(TableName=ready["table"], Key=key)["Item"]
        assert item["uploadUser"] == {"S": "USER007"}
        moto_tables = boto3.client(
            "dynamodb", endpoint_url=ready["awsEndpoint"], region_name=ready["region"]
        ).list_tables()["TableNames"]
        assert ready["table"] not in moto_tables
        assert serve.stop()[0] == 0, serve.stderr()

        # A second stack never takes over (or deletes) a table that is already there.
        again = start_serve(API_PORT="0", AWS_PORT="0", AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local.endpoint_url)
        assert again.process.wait(60) == 1
        assert "table FileMetaData already exists at" in again.stderr()
        assert "Traceback" not in again.stderr()
    finally:
        # The engine serves the other tests of this worker.
        engine.delete_table(TableName="FileMetaData")
