"""An in-process moto account with the bucket, the table and the queues, and a way to run the commands."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.store.entries import plain_item, scan_index
from file_search_admin.cli import main

BUCKET = "fileupload.a"
TABLE = "FileMetaData"


@dataclass
class Result:
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class Account:
    s3: Any
    dynamodb: Any
    sqs: Any
    calls: list[str] = field(default_factory=list)

    def admin(self, *argv: str) -> Result:
        out, err = io.StringIO(), io.StringIO()
        status = main(list(argv), stdout=out, stderr=err)
        return Result(status, out.getvalue(), err.getvalue())

    def item(self, key: str) -> dict[str, Any] | None:
        raw = self.dynamodb.get_item(TableName=TABLE, Key={"objectKey": {"S": key}})
        return plain_item(raw["Item"]) if "Item" in raw else None

    def live_index(self) -> dict[str, tuple[int, str | None]]:
        """Key -> (size, eTag) of every live entry."""
        return {
            item["objectKey"]: (int(item["size"]), item.get("eTag"))
            for item in scan_index(self.dynamodb, TABLE)
            if not item.get("deleted")
        }

    def bucket(self) -> dict[str, tuple[int, str | None]]:
        paginator = self.s3.get_paginator("list_objects_v2")
        return {
            entry["Key"]: (entry["Size"], entry["ETag"].strip('"'))
            for page in paginator.paginate(Bucket=BUCKET)
            for entry in page.get("Contents", [])
        }


@pytest.fixture
def account(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    # The commands read the shard placement from ./cdk.json: an empty context here (the unsharded placement),
    # so a test depends on the options it passes, never on the repository's cdk.json.
    (tmp_path / "cdk.json").write_text('{"context": {}}', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE))
        yield Account(s3, dynamodb, boto3.client("sqs", region_name="us-east-1"))


@pytest.fixture
def count_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every AWS request made by clients created from now on (service.Operation)."""
    calls: list[str] = []
    original = boto3.session.Session.client

    def client(self: Any, *args: Any, **kwargs: Any) -> Any:
        made = original(self, *args, **kwargs)

        def record(model: Any, **_: Any) -> None:
            calls.append(f"{model.service_model.service_name}.{model.name}")

        made.meta.events.register("before-call.*.*", record)
        return made

    monkeypatch.setattr(boto3.session.Session, "client", client)
    return calls
