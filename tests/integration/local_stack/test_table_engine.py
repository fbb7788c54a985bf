"""Where serve keeps the table: DynamoDB Local by default, moto without Java, as TABLE_ENGINE says."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from urllib.parse import quote, urlsplit

import boto3
import pytest

from local_stack.stack import InvalidConfigurationError, LocalFileSearch

pytestmark = pytest.mark.dynamodb_local


def found(api_url: str, key: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/files/{quote(key, safe='')}", timeout=10) as response:  # noqa: S310
            return int(response.status) == 200
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise


def wait_found(api_url: str, key: str) -> None:
    deadline = time.monotonic() + 60
    while not found(api_url, key):
        assert time.monotonic() < deadline, f"{key} was not indexed within 60 s"
        time.sleep(0.1)


def answers(endpoint: str) -> bool:
    address = urlsplit(endpoint)
    try:
        with socket.create_connection((address.hostname or "", address.port or 0), timeout=2):
            return True
    except OSError:
        return False


def test_serve_keeps_the_table_in_dynamodb_local_and_stops_it_with_the_stack(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0")
    ready = serve.wait_ready()

    assert ready["dynamodbEndpoint"] != ready["awsEndpoint"]
    s3 = boto3.client("s3", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    s3.put_object(Bucket=ready["bucket"], Key="USER007_engine.txt", Body=b"in DynamoDB Local")
    wait_found(ready["apiUrl"], "USER007_engine.txt")
    engine = boto3.client("dynamodb", endpoint_url=ready["dynamodbEndpoint"], region_name=ready["region"])
    item = engine.get_item(TableName=ready["table"], Key={"objectKey": {"S": "USER007_engine.txt"}})["Item"]
    assert item["uploadUser"] == {"S": "USER007"}
    moto = boto3.client("dynamodb", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    assert ready["table"] not in moto.list_tables()["TableNames"]

    assert serve.stop()[0] == 0, serve.stderr()
    assert not answers(ready["dynamodbEndpoint"])  # the stack's DynamoDB Local went with it


def test_serve_falls_back_to_moto_with_a_warning_where_java_is_missing(start_serve, tmp_path):
    serve = start_serve(API_PORT="0", AWS_PORT="0", PATH=str(tmp_path))  # no java on this PATH
    ready = serve.wait_ready()

    assert ready["dynamodbEndpoint"] == ready["awsEndpoint"]
    log = serve.stderr()
    assert "the table is on moto, because DynamoDB Local cannot start: Java is not installed" in log
    assert "past a few thousand files list pages slow down" in log
    s3 = boto3.client("s3", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    s3.put_object(Bucket=ready["bucket"], Key="USER007_moto.txt", Body=b"on moto")
    wait_found(ready["apiUrl"], "USER007_moto.txt")
    assert serve.stop()[0] == 0, serve.stderr()


def test_serve_fails_clearly_when_told_dynamodb_local_and_java_is_missing(start_serve, tmp_path):
    serve = start_serve(API_PORT="0", AWS_PORT="0", TABLE_ENGINE="dynamodb-local", PATH=str(tmp_path))
    assert serve.process.wait(60) == 1
    assert serve.read_line(5) is None, "serve must not claim READY"
    assert "serve: DynamoDB Local: Java is not installed" in serve.stderr()
    assert "Traceback" not in serve.stderr()


def test_serve_keeps_the_table_on_moto_when_told(start_serve):
    ready = start_serve(API_PORT="0", AWS_PORT="0", TABLE_ENGINE="moto").wait_ready()
    assert ready["dynamodbEndpoint"] == ready["awsEndpoint"]


def test_serve_refuses_an_unknown_table_engine(start_serve):
    serve = start_serve(API_PORT="0", AWS_PORT="0", TABLE_ENGINE="dynamo")
    assert serve.process.wait(60) == 2
    assert "TABLE_ENGINE='dynamo' is not one of moto, dynamodb-local, auto" in serve.stderr()


def test_the_stack_refuses_an_unknown_table_engine():
    with pytest.raises(InvalidConfigurationError, match="table engine 'sqlite' is not one of"):
        LocalFileSearch(aws_port=0, api_port=0, table_engine="sqlite")
