"""The command-line client against a local stack: moto's server, and the search handler behind the
API Gateway stand-in, both on 127.0.0.1 ports chosen by the OS.

A header-capturing wrapper around the handler shows what the client sends: plain requests to
http://127.0.0.1, SigV4-signed ones with --sigv4.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from moto.server import ThreadedMotoServer

from file_index.rules import schema
from file_index.store.state import IndexStateStore, Operation
from file_search_client.cli import BUILDING_WARNING, EXIT_OUTPUT_CLOSED, main
from local_stack.api_gateway import ApiGatewayServer
from search import composition, handler

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("client-local-stack")

BUCKET = "fileupload.a"


@dataclass
class LocalStack:
    api_url: str
    headers: list[dict[str, str]]
    events: list[dict[str, Any]]
    table: Any
    sqs: Any
    queue_url: str
    dlq_url: str


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def local_stack(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    requests_session = boto3.session.Session()
    dynamodb = requests_session.resource("dynamodb")
    run_id = uuid.uuid4().hex  # one table and secret per test on the shared server
    table_name = f"FileMetaData-{run_id}"
    table = dynamodb.create_table(**schema.create_table_request(table_name))
    s3 = requests_session.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    secret = requests_session.client("secretsmanager").create_secret(
        Name=f"cursor-{run_id}", SecretString="k" * 32
    )
    monkeypatch.setenv("TABLE_NAME", table_name)
    monkeypatch.setenv("BUCKET_NAME", BUCKET)
    monkeypatch.setenv("CURSOR_SECRET_ARN", secret["ARN"])
    sqs = requests_session.client("sqs")
    queue_url = sqs.create_queue(QueueName=f"file-events-{run_id}")["QueueUrl"]
    dlq_url = sqs.create_queue(QueueName=f"file-events-dlq-{run_id}")["QueueUrl"]
    monkeypatch.setenv("QUEUE_URL", queue_url)
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", dlq_url)
    monkeypatch.delenv("INDEX_INITIAL_STATE", raising=False)
    for n, (key, size) in enumerate(
        [("USER001_FILE001.txt", 12), ("USER001/dir/a b+c%.txt", 5), ("USER002_x", 7)]
    ):
        table.put_item(
            Item={
                "objectKey": key,
                "bucketName": BUCKET,
                "fileId": key.split("_")[-1],
                "size": Decimal(size),
                "uploadUser": key[:7],
                "uploadDate": f"2017-08-20T09:15:0{n}.000Z",
                "sequencer": f"0{n}",
            }
        )
    s3.put_object(Bucket=BUCKET, Key="USER001/dir/a b+c%.txt", Body=b"hello")

    captured: list[dict[str, str]] = []
    events: list[dict[str, Any]] = []

    def capturing_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        captured.append(dict(event["headers"] or {}))
        events.append(event)
        return handler.lambda_handler(event, context)

    composition.file_search.cache_clear()
    gateway = ApiGatewayServer(capturing_handler).start()
    yield LocalStack(
        api_url=gateway.url,
        headers=captured,
        events=events,
        table=table,
        sqs=sqs,
        queue_url=queue_url,
        dlq_url=dlq_url,
    )
    gateway.close()
    composition.file_search.cache_clear()


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_search_prints_a_table_by_default(local_stack: LocalStack) -> None:
    code, output = run("--api-url", local_stack.api_url, "search", "--user", "USER001")
    assert code == 0
    lines = output.splitlines()
    assert lines[0].split() == ["KEY", "SIZE", "USER", "UPLOADED"]
    assert lines[1].startswith("USER001_FILE001.txt")
    assert "2017-08-20T09:15:00.000Z" in lines[1]
    assert lines[2].startswith("USER001/dir/a b+c%.txt")
    # Plain HTTP to the local stack: nothing signed.
    assert all("Authorization" not in headers for headers in local_stack.headers)


def test_search_all_pages_as_json(local_stack: LocalStack) -> None:
    code, output = run(
        "--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--limit", "1", "--all", "--json"
    )
    assert code == 0
    result = json.loads(output)
    assert [item["size"] for item in result["items"]] == [12, 7, 5]
    assert result["nextCursor"] is None
    assert result["orderedBy"] == "size"
    assert len(local_stack.headers) >= 3  # one request per page


def test_get_a_tricky_key(local_stack: LocalStack) -> None:
    code, output = run("--api-url", local_stack.api_url, "get", "USER001/dir/a b+c%.txt", "--json")
    assert code == 0
    assert json.loads(output)["objectKey"] == "USER001/dir/a b+c%.txt"
    code, output = run("--api-url", local_stack.api_url, "get", "USER001_FILE001.txt")
    assert code == 0
    assert re.search(r"^size\s+12$", output, re.MULTILINE)


def test_download_follows_the_presigned_redirect(
    local_stack: LocalStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = run("--api-url", local_stack.api_url, "download", "USER001/dir/a b+c%.txt")
    assert code == 0, output
    assert (tmp_path / "a b+c%.txt").read_bytes() == b"hello"
    target = tmp_path / "out.bin"
    assert (
        run("--api-url", local_stack.api_url, "download", "USER001/dir/a b+c%.txt", "-o", str(target))[0] == 0
    )
    assert target.read_bytes() == b"hello"


def test_a_download_never_replaces_an_existing_file_without_force(
    local_stack: LocalStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine.txt"
    target.write_bytes(b"precious")
    key = "USER001/dir/a b+c%.txt"

    code, _ = run("--api-url", local_stack.api_url, "download", key, "-o", str(target))

    assert code == 3
    assert f"{target} exists: pass --force to replace it" in capsys.readouterr().err
    assert target.read_bytes() == b"precious"
    assert run("--api-url", local_stack.api_url, "download", key, "-o", str(target), "--force")[0] == 0
    assert target.read_bytes() == b"hello"
    assert run("--api-url", local_stack.api_url, "download", key, "-o", str(target), "--overwrite")[0] == 0


@pytest.mark.parametrize("where", ["directory", "missing folder"])
def test_a_local_write_error_is_not_reported_as_an_unreachable_api(
    local_stack: LocalStack, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    target = tmp_path if where == "directory" else tmp_path / "nowhere" / "a.txt"
    code, _ = run("--api-url", local_stack.api_url, "download", "USER001/dir/a b+c%.txt", "-o", str(target))
    err = capsys.readouterr().err
    assert code == 3
    assert "cannot reach" not in err
    assert ("is a directory" if where == "directory" else "does not exist") in err


def test_the_more_hint_goes_to_stderr_and_stdout_is_only_the_table(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = run("--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--limit", "1")
    assert code == 0
    assert len(output.splitlines()) == 2  # the header and one row
    assert "more" not in output
    assert "more results: --cursor " in capsys.readouterr().err


def test_errors_exit_with_the_api_message_1_or_2_for_a_bad_argument(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run("--api-url", local_stack.api_url, "get", "USER001_nothing")
    assert code == 1
    assert "404: no indexed file with key 'USER001_nothing'" in capsys.readouterr().err
    # A 400 is an argument the API refused: exit 2, as for the arguments the client refuses itself.
    code, _ = run("--api-url", local_stack.api_url, "search", "--user", "U", "--limit", "5000")
    assert code == 2
    assert "400: query parameter limit" in capsys.readouterr().err
    code, _ = run("--api-url", local_stack.api_url, "search", "--user", "U", "--q", "__")
    assert code == 2
    assert "400: q has no word in it" in capsys.readouterr().err


def _state_store(local_stack: LocalStack) -> IndexStateStore:
    return IndexStateStore(boto3.client("dynamodb"), local_stack.table.name)


def test_status_prints_the_state_and_the_backlog(local_stack: LocalStack) -> None:
    store = _state_store(local_stack)
    store.start(BUCKET, Operation.BACKFILL, "run-1")
    store.add_progress(BUCKET, "run-1", {"listed": 10, "written": 7, "skipped": 3})
    for n in range(3):
        local_stack.sqs.send_message(QueueUrl=local_stack.queue_url, MessageBody=f"event {n}")
    local_stack.sqs.send_message(QueueUrl=local_stack.dlq_url, MessageBody="dead")

    code, output = run("--api-url", local_stack.api_url, "status")

    assert code == 0
    lines = output.splitlines()
    assert lines[0].split() == ["index", "BUILDING"]
    assert lines[1].split() == ["bucket", f"{BUCKET}:", "BUILDING"]
    assert re.match(r"^run\s+backfill run-1, started \S+Z, updated \S+Z$", lines[2])
    assert lines[3].split(None, 1) == ["progress", "listed 10, skipped 3, written 7"]
    assert lines[4].split(None, 1) == ["queue", "3 waiting, 0 in flight, 0 delayed; oldest unknown"]
    assert lines[5].split() == ["dead", "letters", "1"]


def test_status_as_json_is_the_apis_answer(local_stack: LocalStack) -> None:
    code, output = run("--api-url", local_stack.api_url, "status", "--json")
    assert code == 0
    status = json.loads(output)
    assert status["indexState"] == "READY"
    assert status["buckets"][0]["bucket"] == BUCKET
    assert status["queue"]["messagesWaiting"] == 0
    assert status["deadLetterQueue"] == {"messages": 0}


def test_a_list_from_a_building_index_warns_on_stderr(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    _state_store(local_stack).start(BUCKET, Operation.BACKFILL, "run-2")

    code, output = run("--api-url", local_stack.api_url, "search", "--user", "USER001")
    assert code == 0
    assert output.splitlines()[1].startswith("USER001_FILE001.txt")  # the table is unchanged
    assert capsys.readouterr().err.strip() == BUILDING_WARNING

    code, output = run("--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--json")
    assert code == 0
    assert json.loads(output)["indexState"] == "BUILDING"
    assert capsys.readouterr().err.strip() == BUILDING_WARNING


def test_a_list_from_a_ready_index_does_not_warn(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = run("--api-url", local_stack.api_url, "search", "--user", "USER001", "--json")
    assert code == 0
    assert json.loads(output)["indexState"] == "READY"
    assert capsys.readouterr().err == ""


def test_api_url_from_the_environment(local_stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FILE_SEARCH_API_URL", local_stack.api_url)
    code, output = run("search", "--user", "USER002", "--json")
    assert code == 0
    assert [item["objectKey"] for item in json.loads(output)["items"]] == ["USER002_x"]


AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 "
    r"Credential=(?P<key>[A-Z0-9]+)/(?P<day>\d{8})/(?P<region>[a-z0-9-]+)/execute-api/aws4_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


@pytest.mark.parametrize("session_token", ["token-from-sts", None])
def test_sigv4_headers_are_present_and_well_formed(
    local_stack: LocalStack, monkeypatch: pytest.MonkeyPatch, session_token: str | None
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    if session_token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", session_token)
    else:
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)

    code, output = run(
        "--api-url", local_stack.api_url, "--sigv4", "--region", "eu-west-1", "get", "USER001/dir/a b+c%.txt"
    )

    assert code == 0, output
    headers = {name.lower(): value for name, value in local_stack.headers[-1].items()}
    match = AUTHORIZATION.match(headers["authorization"])
    assert match, headers["authorization"]
    assert match["key"] == "AKIAEXAMPLEKEY"
    assert match["region"] == "eu-west-1"
    assert re.fullmatch(r"\d{8}T\d{6}Z", headers["x-amz-date"])
    assert headers["x-amz-date"].startswith(match["day"])
    signed = match["signed"].split(";")
    assert {"host", "x-amz-date"} <= set(signed)
    if session_token:
        assert headers["x-amz-security-token"] == session_token
        assert "x-amz-security-token" in signed
    else:
        assert "x-amz-security-token" not in headers


def _uri_encode(text: str) -> str:
    return quote(text, safe="-_.~")


def expected_signature(event: dict[str, Any], secret_key: str, region: str) -> str:
    """SigV4 as the receiving side computes it, written from AWS's specification (not botocore's signer):
    the query is decoded and re-encoded per RFC 3986, each path segment is encoded twice (all services
    but S3), and only the headers the client listed are signed."""
    headers = {name.lower(): value for name, value in event["headers"].items()}
    credential = AUTHORIZATION.match(headers["authorization"])
    assert credential
    signed = credential["signed"].split(";")
    query = sorted(
        (_uri_encode(name), _uri_encode(value))
        for name, values in (event["multiValueQueryStringParameters"] or {}).items()
        for value in values
    )
    canonical_request = "\n".join(
        [
            event["httpMethod"],
            quote(event["path"], safe="/-_.~"),
            "&".join(f"{name}={value}" for name, value in query),
            "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed),
            credential["signed"],
            hashlib.sha256(b"").hexdigest(),
        ]
    )
    scope = f"{credential['day']}/{region}/execute-api/aws4_request"
    string_to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            headers["x-amz-date"],
            scope,
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{secret_key}".encode()
    for part in (credential["day"], region, "execute-api", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    "argv",
    [
        ("get", "USER001/dir/a b+c%.txt"),
        ("search", "--user", "USER 001+x/y", "--from", "2017-08-20T09:15:00+09:00", "--to", "2017-08-21"),
        ("search", "--bucket", BUCKET, "--min-size", "1", "--order", "asc", "--limit", "2"),
    ],
)
def test_sigv4_signatures_verify_on_the_receiving_side(
    local_stack: LocalStack, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")

    code, output = run("--api-url", local_stack.api_url, "--sigv4", "--region", "eu-west-1", *argv)

    assert code == 0, output
    event = local_stack.events[-1]
    sent = AUTHORIZATION.match(event["headers"]["Authorization"])
    assert sent
    assert sent["signature"] == expected_signature(
        event, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-1"
    )


def test_a_reader_that_closes_stdout_early_ends_the_client_quietly_with_141(local_stack: LocalStack) -> None:
    # More JSON than a pipe holds (64 KiB on Linux): the client is still writing when the reader leaves,
    # as with `s3-file-search search --json | head -c 100`.
    with local_stack.table.batch_writer() as batch:
        for n in range(400):
            batch.put_item(
                Item={
                    "objectKey": f"USER003/many/{n:04}-{'x' * 100}.txt",
                    "bucketName": BUCKET,
                    "fileId": f"{n:04}.txt",
                    "size": Decimal(n),
                    "uploadUser": "USER003",
                    "uploadDate": "2017-08-21T10:00:00.000Z",
                    "sequencer": f"1{n:04}",
                }
            )
    reader = subprocess.Popen(
        [
            *(sys.executable, "-m", "file_search_client", "--api-url", local_stack.api_url),
            *("search", "--bucket", BUCKET, "--limit", "1000", "--json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None
    assert reader.stderr is not None
    first = reader.stdout.read(100)
    reader.stdout.close()  # what `head -c 100` does once it has its bytes
    errors = reader.stderr.read().decode()
    status = reader.wait(timeout=120)

    assert first.startswith(b"{")
    assert errors == ""  # no traceback, no "cannot reach", no "Exception ignored" at exit
    assert status == EXIT_OUTPUT_CLOSED == 141


def test_sort_asks_a_buckets_list_for_an_order(local_stack: LocalStack) -> None:
    code, output = run("--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--sort", "uploadDate")
    assert code == 0
    answer = run(
        "--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--sort", "uploadDate", "--json"
    )[1]
    assert json.loads(answer)["orderedBy"] == "uploadDate"
    # Newest first, in the table as in the JSON.
    assert [line.split()[0] for line in output.splitlines()[1:]] == [
        "USER002_x",
        "USER001/dir/a",
        "USER001_FILE001.txt",
    ]
    assert local_stack.events[-1]["queryStringParameters"]["sort"] == "uploadDate"
    code, output = run(
        "--api-url", local_stack.api_url, "search", "--bucket", BUCKET, "--sort", "size", "--order", "asc"
    )
    assert code == 0
    assert [line.split()[-3] for line in output.splitlines()[1:]] == ["5", "7", "12"]  # SIZE


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--bucket", BUCKET, "--sort", "size", "--q", "file"], "400: sort applies to a list of a user"),
    ],
)
def test_a_sort_the_api_refuses_is_one_line_and_exit_2(
    local_stack: LocalStack, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    code, output = run("--api-url", local_stack.api_url, "search", *arguments)
    err = capsys.readouterr().err
    assert code == 2
    assert output == ""
    assert err.startswith(f"error: {message}")
    assert err.count("\n") == 1


def test_sort_takes_only_the_apis_orders(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--api-url", "http://127.0.0.1:9", "search", "--bucket", BUCKET, "--sort", "name"])
    assert exit_info.value.code == 2
    assert "--sort: invalid choice: 'name' (choose from" in capsys.readouterr().err
