"""Black-box through `serve`: the local stack records its configuration in the table, and the admin tools,
run as a user runs them (processes, AWS_ENDPOINT_URL, from any folder), write owners with its key pattern
and refuse settings that differ from it, naming both values, before any write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest

from tests.integration.local_stack.conftest import REPO_ROOT, ServeProcess, serving

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("deployed-configuration")

PATTERN = r"uploads/(?P<user>[^/]+)/(?P<file>.+)"
FILES = 20


def admin(ready: dict[str, Any], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": ready["awsEndpoint"],
        # serve keeps the table in DynamoDB Local: its endpoint is in the READY line.
        "AWS_ENDPOINT_URL_DYNAMODB": ready["dynamodbEndpoint"],
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": ready["region"],
        # The admin tools from any folder: the checkout's packages on the path, as installed they would be.
        "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'functions'}",
    }
    return subprocess.run(
        [sys.executable, "-m", "file_search_admin", *argv, "--bucket", ready["bucket"]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def listed(ready: dict[str, Any], **query: str) -> list[str]:
    keys: list[str] = []
    params = {"limit": "1000", **query}
    while True:
        url = f"{ready['apiUrl']}/files?{urlencode(params)}"
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (the local stack)
            page = json.load(response)
        keys += [item["objectKey"] for item in page["items"]]
        if not page.get("nextCursor"):
            return keys
        params["cursor"] = page["nextCursor"]


def client(ready: dict[str, Any], service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=ready["dynamodbEndpoint"] if service == "dynamodb" else ready["awsEndpoint"],
        region_name=ready["region"],
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def serving_uploads_placement(start_serve: Any) -> Any:
    serve: ServeProcess = start_serve(
        API_PORT="0", AWS_PORT="0", POWERTOOLS_LOG_LEVEL="WARNING", KEY_LAYOUT=PATTERN
    )
    return serve.wait_ready()


def test_the_admin_tools_write_owners_with_the_deployed_key_pattern_and_refuse_another(
    serving_uploads_placement: dict[str, Any], tmp_path: Path
) -> None:
    ready = serving_uploads_placement
    s3, dynamodb = client(ready, "s3"), client(ready, "dynamodb")
    keys = [f"uploads/alice/report-{n:02d}.txt" for n in range(FILES)]
    for key in keys:
        s3.put_object(Bucket=ready["bucket"], Key=key, Body=b"x")
    deadline = time.monotonic() + 120
    while len(listed(ready, user="alice")) < FILES:
        assert time.monotonic() < deadline, "the uploads were not indexed"
        time.sleep(0.5)
    # Files from before the index: their entries are gone, only a backfill brings them back.
    for key in keys:
        dynamodb.delete_item(TableName=ready["table"], Key={"objectKey": {"S": key}})
    assert listed(ready, user="alice") == []

    # From the CDK app's folder, whose cdk.json says keyLayout "default": refused before any write.
    refused = admin(ready, REPO_ROOT, "backfill")
    assert refused.returncode == 2, refused.stderr
    assert (
        'keyLayout is "uploads/(?P<user>[^/]+)/(?P<file>.+)" in the deployed configuration but "default" '
        "for this command (cdk.json)"
    ) in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert listed(ready, user="uploads") == []

    # From anywhere else: the recorded configuration is the one written with.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    backfill = admin(ready, elsewhere, "backfill", "--json")
    assert backfill.returncode == 0, backfill.stderr
    assert f'keyLayout="{PATTERN}"' in backfill.stderr
    assert "enrich" not in backfill.stderr  # the note names only what a backfill writes with
    assert sorted(listed(ready, user="alice")) == keys
    assert listed(ready, user="uploads") == []

    # A reconcile's repair of a missing entry names the same owner.
    dynamodb.delete_item(TableName=ready["table"], Key={"objectKey": {"S": keys[0]}})
    reconcile = admin(ready, elsewhere, "reconcile", "--json", "--key-layout", PATTERN)
    assert reconcile.returncode == 0, reconcile.stderr
    assert sorted(listed(ready, user="alice")) == keys


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--bucket-index-shards", "32"], "bucketIndexShards is 16 in the deployed configuration but 32"),
        (["--hot-users", '{"alice": 4}'], 'hotUsers is {} in the deployed configuration but {"alice": 4}'),
        (["--multi-attribute-index"], "multiAttributeIndex is false in the deployed configuration but true"),
    ],
)
def test_settings_the_local_stack_does_not_run_with_are_refused_before_any_write(
    default_serve: dict[str, Any], tmp_path: Path, options: list[str], named: str
) -> None:
    ready = default_serve
    s3 = client(ready, "s3")
    s3.put_object(Bucket=ready["bucket"], Key="bob/a.txt", Body=b"x")
    for command in ("backfill", "reconcile"):
        result = admin(ready, tmp_path, command, *options)
        assert result.returncode == 2, result.stderr
        assert named in result.stderr
        assert "this command (--" in result.stderr
    dry_run = admin(ready, tmp_path, "reconcile", "--dry-run", *options)
    assert dry_run.returncode == 0, dry_run.stderr
    assert f"warning: the deployed configuration of s3://{ready['bucket']}" in dry_run.stderr


@pytest.fixture(scope="module")
def default_serve() -> Any:
    """`serve` with the repository's cdk.json, for the whole module."""
    with serving() as ready:
        yield ready


def test_the_human_summaries_tell_the_name_index_step(default_serve: dict[str, Any], tmp_path: Path) -> None:
    ready = default_serve
    client(ready, "s3").put_object(Bucket=ready["bucket"], Key="carol/notes.txt", Body=b"x")
    names = admin(ready, tmp_path, "index-names")
    assert names.returncode == 0, names.stderr
    assert names.stdout.startswith(f"index-names of s3://{ready['bucket']}: ")
    assert " name items; put " in names.stdout
    backfill = admin(ready, tmp_path, "backfill")
    assert backfill.returncode == 0, backfill.stderr
    lines = backfill.stdout.splitlines()
    assert lines[0].startswith(f"backfill of s3://{ready['bucket']} into ")
    assert lines[1].startswith("  name index: ")
    assert lines[2].endswith("s in all; index READY")
    summary = json.loads(admin(ready, tmp_path, "backfill", "--json").stdout)
    assert summary["totalSeconds"] >= summary["seconds"] + summary["names"]["seconds"] - 0.01
