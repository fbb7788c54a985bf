"""The admin tools write with the deployed placement only: the stack's indexer environment is the truth.

The review's case: `bucketIndexShards` raised in cdk.json (or a hot user added) and a backfill run before the
deploy put entries in shards the deployed search never queries, and marked the index READY. Now the command
reads the placement the stack's indexer runs with (its `IndexerFunctionName` output) and refuses another; a
reconcile run with the deployed placement moves entries that sit outside it.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import boto3

from file_index.read.file_queries import BucketQuery
from file_index.read.reader import FileReader
from file_index.rules.placement import DEFAULT_BUCKET_INDEX_SHARDS, ShardPlacement
from tests.integration.admin.conftest import BUCKET, TABLE, Account

DEPLOYED_ENV = {"BUCKET_INDEX_SHARDS": "4", "HOT_USERS": "{}", "MULTI_ATTRIBUTE_INDEX": "false"}
KEYS = [f"USER001_file-{index:03d}.txt" for index in range(40)]


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def lambda_handler(event, context):\n    return None\n")
    return buffer.getvalue()


def deploy(stack_name: str = "S3FileSearch", environment: dict[str, str] | None = None) -> None:
    """A stack whose output names an indexer function with `environment` (the deployed placement)."""
    role = boto3.client("iam", region_name="us-east-1").create_role(
        RoleName=f"{stack_name}-indexer",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    boto3.client("lambda", region_name="us-east-1").create_function(
        FunctionName=f"{stack_name}-indexer",
        Runtime="python3.13",
        Role=role,
        Handler="handler.lambda_handler",
        Code={"ZipFile": _zip()},
        Environment={"Variables": {**DEPLOYED_ENV, **(environment or {})}},
    )
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"IndexerFunctionName": {"Value": f"{stack_name}-indexer"}},
    }
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName=stack_name, TemplateBody=json.dumps(template)
    )


def upload(account: Account) -> None:
    for key in KEYS:
        account.s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")


def listed_by_the_deployed_search(account: Account) -> set[str]:
    reader = FileReader(
        boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE),
        placement=ShardPlacement(bucket_shards=4),
    )
    found: set[str] = set()
    start = None
    while True:
        page = reader.list_files(BucketQuery(bucket=BUCKET), limit=1000, start=start)
        found |= {item["objectKey"] for item in page.items}
        if page.next_cursor is None:
            return found
        start = page.next_cursor


def test_a_placement_ahead_of_the_deployment_is_refused(account: Account) -> None:
    deploy()
    upload(account)
    # cdk.json raised to 16 shards, not deployed yet (the deployment runs 4).
    result = account.admin("backfill", "--bucket", BUCKET, "--bucket-index-shards", "16")
    assert result.status == 2
    assert "the deployment writes and reads with bucketIndexShards=4" in result.stderr
    assert "was given bucketIndexShards=16" in result.stderr
    assert account.live_index() == {}  # nothing written
    hot = account.admin(
        "reconcile", "--bucket", BUCKET, "--bucket-index-shards", "4", "--hot-users", '{"USER001": 8}'
    )
    assert hot.status == 2
    assert 'hotUsers={"USER001": 8}' in hot.stderr


def test_without_a_cdk_json_the_deployed_placement_is_written(account: Account, tmp_path: Any) -> None:
    (tmp_path / "cdk.json").unlink()
    deploy()
    upload(account)
    result = account.admin("backfill", "--bucket", BUCKET, "--json")
    assert result.status == 0, result.stderr
    assert "writing with the deployed shard placement of stack 'S3FileSearch'" in result.stderr
    shards = {account.item(key)["bucketName"] for key in KEYS}  # type: ignore[index]
    assert shards == {BUCKET, *(f"{BUCKET}#{shard}" for shard in range(1, 4))}
    assert listed_by_the_deployed_search(account) == set(KEYS)


def test_the_matching_placement_runs_and_a_missing_stack_is_a_note_or_an_error(account: Account) -> None:
    deploy()
    upload(account)
    assert account.admin("backfill", "--bucket", BUCKET, "--bucket-index-shards", "4").status == 0
    assert listed_by_the_deployed_search(account) == set(KEYS)
    # No such stack (the local stack has none): checked when named, a note when the default is missing.
    named = account.admin(
        "reconcile", "--bucket", BUCKET, "--bucket-index-shards", "4", "--stack-name", "Nope"
    )
    assert named.status == 2
    assert "cannot check the deployed shard placement: there is no stack 'Nope'" in named.stderr


def test_without_the_default_stack_the_given_placement_is_written_as_before(account: Account) -> None:
    upload(account)
    result = account.admin("backfill", "--bucket", BUCKET)
    assert result.status == 0, result.stderr
    assert result.stderr == ""
    shards = {account.item(key)["bucketName"] for key in KEYS}  # type: ignore[index]
    default_shards = {BUCKET, *(f"{BUCKET}#{shard}" for shard in range(1, DEFAULT_BUCKET_INDEX_SHARDS))}
    assert len(shards) > 4  # the default placement's 16 shards, unchecked
    assert shards <= default_shards


def test_reconcile_moves_entries_written_outside_the_deployed_placement(account: Account) -> None:
    # The review's run: backfilled with 32 shards and a hot user before the deploy (no check then).
    upload(account)
    ahead = account.admin(
        "backfill",
        "--bucket",
        BUCKET,
        "--bucket-index-shards",
        "32",
        "--hot-users",
        '{"USER001": 8}',
        "--stack-name",
        "S3FileSearch",
    )
    assert ahead.status == 2  # no stack yet to check against: refused when named
    assert (
        account.admin(
            "backfill", "--bucket", BUCKET, "--bucket-index-shards", "32", "--hot-users", '{"USER001": 8}'
        ).status
        == 0
    )
    deploy()
    missed = set(KEYS) - listed_by_the_deployed_search(account)
    assert missed  # entries in shards 4-31: the deployed search never sees them
    result = account.admin("reconcile", "--bucket", BUCKET, "--bucket-index-shards", "4", "--json")
    assert result.status == 0, result.stderr
    summary = result.json()
    assert summary["unplaced"]["found"] == summary["unplaced"]["fixed"] >= len(missed)
    assert listed_by_the_deployed_search(account) == set(KEYS)
    for key in KEYS:
        item = account.item(key)
        assert item is not None
        assert "userShard" not in item
        assert item["uploadUser"] == "USER001"


def test_a_guessed_placement_never_moves_entries_and_a_known_one_says_what_it_moved(account: Account) -> None:
    """No cdk.json, no option, no stack: the one-shard fallback is a guess, so reconcile leaves the shard
    values alone; given the placement, it moves what sits outside it and says so in words."""
    upload(account)
    assert account.admin("backfill", "--bucket", BUCKET, "--bucket-index-shards", "16").status == 0
    before = {key: account.item(key)["bucketName"] for key in KEYS}  # type: ignore[index]
    assert len(set(before.values())) > 4
    guessed = account.admin("reconcile", "--bucket", BUCKET, "--json")
    assert guessed.status == 0, guessed.stderr
    assert guessed.json()["unplaced"]["found"] == 0
    assert {key: account.item(key)["bucketName"] for key in KEYS} == before  # type: ignore[index]
    known = account.admin("reconcile", "--bucket", BUCKET, "--bucket-index-shards", "4")
    assert known.status == 0, known.stderr
    assert "entry out of place" in known.stdout
    assert "in a shard the placement's readers never query" in known.stdout
    assert "the index matches the bucket" not in known.stdout
