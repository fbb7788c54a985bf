"""`migrate` and the shard placement of the commands: Z-order addresses filled in, concurrent events win, the
pending flag cleared only after a whole run; placements read from cdk.json, overridable, refused when bad."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema, shards
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import scan_index
from file_index.store.sdk import serialize
from file_index.store.state import IndexStateStore
from file_index.write.differences import expected_z_address, is_live
from file_index.write.repair import place_entry
from file_index.write.writer import apply_event
from file_search_admin.migrate import ZOrderIndexOffError, run_migrate
from tests.integration.admin.conftest import BUCKET, TABLE, Account

HOT = "USER001"
CONTEXT = {"bucketIndexShards": 4, "hotUsers": {HOT: 2}, "multiAttributeIndex": True}
PLACEMENT = ShardPlacement.from_context(CONTEXT)


def write_cdk_json(directory: Path, context: Mapping[str, Any]) -> None:
    (directory / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": context}))


def _account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, z_order_index: bool) -> Iterator[Account]:
    write_cdk_json(tmp_path, CONTEXT)
    monkeypatch.chdir(tmp_path)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**schema.create_table_request(TABLE, multi_attribute_index=z_order_index))
        yield Account(s3, dynamodb, boto3.client("sqs", region_name="us-east-1"))


@pytest.fixture
def z_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    """The account of `account`, with the Z-order index on the table and in ./cdk.json."""
    yield from _account(tmp_path, monkeypatch, z_order_index=True)


@pytest.fixture
def legacy_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Account]:
    """./cdk.json of `z_account`, but a table deployed before the Z-order index was switched on: its
    entries are written with the index off (as the deployment did), then `switch_on` adds the index."""
    yield from _account(tmp_path, monkeypatch, z_order_index=False)


def switch_on(account: Account) -> None:
    """What the deployment that switches multiAttributeIndex on does to the table: add the Z-order index."""
    request = schema.create_table_request(TABLE, multi_attribute_index=True)
    (created,) = [i for i in request["GlobalSecondaryIndexes"] if i["IndexName"] == schema.Z_ORDER_INDEX.name]
    account.dynamodb.update_table(
        TableName=TABLE,
        AttributeDefinitions=request["AttributeDefinitions"],
        GlobalSecondaryIndexUpdates=[{"Create": created}],
    )


def upload(account: Account, count: int) -> list[str]:
    keys = [f"{'USER001' if n % 2 else 'USER002'}_{n:04d}.txt" for n in range(count)]
    for n, key in enumerate(keys):
        account.s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" * (n * 100 + 1))
    return keys


def live_entries(account: Account) -> dict[str, dict[str, Any]]:
    return {
        item["objectKey"]: item
        for item in scan_index(account.dynamodb, TABLE)
        if is_live(item) and PLACEMENT.public_bucket(item["bucketName"]) == BUCKET
    }


def z_index_keys(account: Account) -> set[str]:
    found: set[str] = set()
    for partition in PLACEMENT.bucket_partitions(BUCKET):
        response = account.dynamodb.query(
            TableName=TABLE,
            IndexName=schema.Z_ORDER_INDEX.name,
            KeyConditionExpression="bucketName = :b",
            ExpressionAttributeValues={":b": {"S": partition}},
        )
        found |= {raw["objectKey"]["S"] for raw in response["Items"]}
    return found


def pending(account: Account) -> bool:
    state = IndexStateStore(account.dynamodb, TABLE).read(BUCKET)
    return state is not None and state.z_order_pending


def new_event(key: str, sequencer: str, size: int) -> ObjectEvent:
    return ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=BUCKET,
        key=key,
        event_time=datetime(2030, 1, 2, tzinfo=UTC),
        sequencer=sequencer,
        size=size,
        e_tag="live",
        version_id=None,
        upload_user=key.split("_")[0],
        file_id=key.split("_", 1)[1],
        no_user_reason=None,
    )


def test_migrate_fills_exactly_the_missing_addresses_then_clears_the_flag(legacy_account: Account) -> None:
    keys = upload(legacy_account, 12)
    # Entries of a release without the Z-order index: a backfill with the index off.
    backfill = legacy_account.admin("backfill", "--bucket", BUCKET, "--no-multi-attribute-index", "--json")
    assert backfill.status == 0, backfill.stderr
    switch_on(legacy_account)
    entries = live_entries(legacy_account)
    assert set(entries) == set(keys)
    assert not any("zAddress" in entry for entry in entries.values())
    # Placed by the sharded placement nevertheless (from cdk.json): shard values, hot user's userShard.
    assert {entry["bucketName"] for entry in entries.values()} == set(PLACEMENT.bucket_partitions(BUCKET))
    assert any(entry.get("userShard") == 1 for entry in entries.values())
    # Two already placed, one with a wrong address; a tombstone, and an entry of another bucket.
    for key in keys[:2]:
        place_entry(legacy_account.dynamodb, TABLE, entries[key], PLACEMENT)
    legacy_account.dynamodb.update_item(
        TableName=TABLE,
        Key={"objectKey": {"S": keys[2]}},
        UpdateExpression="SET zAddress = :wrong",
        ExpressionAttributeValues={":wrong": {"S": "0" * 21}},
    )
    apply_event(legacy_account.dynamodb, TABLE, _removal(keys[3]), s3=legacy_account.s3, placement=PLACEMENT)
    other = {"objectKey": "other-bucket-key", "bucketName": "other.bucket", "size": 1, "uploadDate": "x"}
    legacy_account.dynamodb.put_item(TableName=TABLE, Item=serialize(other))
    IndexStateStore(legacy_account.dynamodb, TABLE).mark_z_order_pending(BUCKET)
    assert z_index_keys(legacy_account) == set(keys[:3])  # one of them under a wrong address

    result = legacy_account.admin("migrate", "--bucket", BUCKET, "--json")
    assert result.status == 0, result.stderr
    summary = result.json()
    # 12 entries (one now a tombstone), the other bucket's entry and the state record.
    assert summary == {
        "command": "migrate",
        "bucket": BUCKET,
        "table": TABLE,
        "segments": 4,
        "scanned": 14,
        "updated": 9,  # 8 without an address, 1 with a wrong one
        "already": 2,
        "skipped": 0,
        "seconds": summary["seconds"],
        "zOrderPending": False,
    }
    live = live_entries(legacy_account)
    assert set(live) == set(keys) - {keys[3]}
    for entry in live.values():
        assert entry["zAddress"] == expected_z_address(entry, PLACEMENT)
    assert z_index_keys(legacy_account) == set(live)
    assert "zAddress" not in (legacy_account.item(keys[3]) or {})
    assert "zAddress" not in (legacy_account.item("other-bucket-key") or {})
    assert not pending(legacy_account)
    state = IndexStateStore(legacy_account.dynamodb, TABLE).read(BUCKET)
    assert state is not None
    assert state.state.value == "READY"  # the backfill's run record, untouched but for the flag

    again = legacy_account.admin("migrate", "--bucket", BUCKET, "--json", "--segments", "2").json()
    assert (again["updated"], again["already"], again["skipped"], again["zOrderPending"]) == (0, 11, 0, False)


def _removal(key: str) -> ObjectEvent:
    created = new_event(key, "0F", 1)
    return ObjectEvent(
        **{**created.__dict__, "event_name": "ObjectRemoved:Delete", "size": None, "e_tag": None}
    )


def test_an_event_between_the_scan_and_the_update_wins(legacy_account: Account) -> None:
    keys = upload(legacy_account, 6)
    assert legacy_account.admin("backfill", "--bucket", BUCKET, "--no-multi-attribute-index").status == 0
    switch_on(legacy_account)
    raced: dict[str, ObjectEvent] = {}

    def live_event_lands(item: Mapping[str, Any]) -> None:
        key = item["objectKey"]
        if key == keys[0] and key not in raced:
            # The indexer with the Z-order placement: its write carries the address of its own size.
            raced[key] = new_event(key, "0A", 4242)
            apply_event(legacy_account.dynamodb, TABLE, raced[key], s3=legacy_account.s3, placement=PLACEMENT)
        if key == keys[1] and key not in raced:
            # A writer without the Z-order placement (a process of the release before the switch): no address.
            raced[key] = new_event(key, "0A", 99)
            apply_event(
                legacy_account.dynamodb, TABLE, raced[key], s3=legacy_account.s3, placement=ShardPlacement()
            )

    summary = run_migrate(
        dynamodb=legacy_account.dynamodb,
        bucket=BUCKET,
        table=TABLE,
        placement=PLACEMENT,
        before_update=live_event_lands,
    )
    assert summary.counts.as_dict() == {"scanned": 7, "updated": 5, "already": 0, "skipped": 1}
    assert summary.z_order_pending is False
    won = legacy_account.item(keys[0])
    assert won is not None
    assert (won["size"], won["sequencer"]) == (4242, "0A")  # the event's entry, not the scanned one
    assert won["zAddress"] == expected_z_address(won, PLACEMENT)
    placed_again = legacy_account.item(keys[1])
    assert placed_again is not None
    assert (placed_again["size"], placed_again["zAddress"]) == (
        99,
        expected_z_address(placed_again, PLACEMENT),
    )
    assert z_index_keys(legacy_account) == set(keys)


def test_the_flag_stays_set_unless_every_segment_finished(legacy_account: Account) -> None:
    upload(legacy_account, 8)
    assert legacy_account.admin("backfill", "--bucket", BUCKET, "--no-multi-attribute-index").status == 0
    switch_on(legacy_account)
    seen: list[str] = []

    def fail_on_the_third(item: Mapping[str, Any]) -> None:
        seen.append(item["objectKey"])
        if len(seen) == 3:
            raise ConnectionError("the network went away")

    with pytest.raises(ConnectionError):
        run_migrate(
            dynamodb=legacy_account.dynamodb,
            bucket=BUCKET,
            table=TABLE,
            placement=PLACEMENT,
            segments=1,
            before_update=fail_on_the_third,
        )
    assert pending(legacy_account)  # set by the run, not cleared: searches keep off the Z-order index
    finished = run_migrate(dynamodb=legacy_account.dynamodb, bucket=BUCKET, table=TABLE, placement=PLACEMENT)
    assert (finished.counts.updated, finished.counts.already) == (6, 2)
    assert not pending(legacy_account)


def test_migrate_refuses_when_the_z_order_index_is_off(
    z_account: Account, tmp_path: Path, count_requests: list[str]
) -> None:
    write_cdk_json(tmp_path, {"bucketIndexShards": 4})
    result = z_account.admin("migrate", "--bucket", BUCKET)
    assert result.status == 2
    assert "the Z-order index is off" in result.stderr
    assert result.stderr.count("\n") == 1
    assert count_requests == []  # nothing read, nothing written
    overridden = z_account.admin("migrate", "--bucket", BUCKET, "--no-multi-attribute-index")
    assert overridden.status == 2
    with pytest.raises(ZOrderIndexOffError):
        run_migrate(dynamodb=z_account.dynamodb, bucket=BUCKET, table=TABLE, placement=ShardPlacement())
    assert not pending(z_account)


def test_migrate_turned_on_by_the_option_and_a_human_summary(legacy_account: Account, tmp_path: Path) -> None:
    write_cdk_json(tmp_path, {})
    upload(legacy_account, 3)
    assert legacy_account.admin("backfill", "--bucket", BUCKET).status == 0
    switch_on(legacy_account)
    result = legacy_account.admin("migrate", "--bucket", BUCKET, "--multi-attribute-index")
    assert result.status == 0, result.stderr
    assert "updated 3" in result.stdout
    assert "Z-order index complete" in result.stdout


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--bucket-index-shards", "0"], "--bucket-index-shards"),
        (["--bucket-index-shards", "many"], "--bucket-index-shards"),
        (["--bucket-index-shards", "257"], "--bucket-index-shards"),
        (["--hot-users", "{"], "--hot-users"),
        (["--hot-users", '{"bot#1": 2}'], "--hot-users"),
        (["--hot-users", '{"bot": 0}'], "--hot-users"),
        (["--cdk-json", "nowhere/cdk.json"], "--cdk-json"),
    ],
)
@pytest.mark.parametrize("command", ["backfill", "reconcile", "migrate"])
def test_a_bad_placement_option_exits_2_naming_it(
    z_account: Account, command: str, options: list[str], named: str, count_requests: list[str]
) -> None:
    result = z_account.admin(command, "--bucket", BUCKET, *options)
    assert result.status == 2
    assert named in result.stderr
    assert result.stderr.startswith("file_search_admin: error: ")
    assert count_requests == []


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"bucketIndexShards": 0}, "bucketIndexShards"),
        ({"hotUsers": ["bot"]}, "hotUsers"),
        ({"multiAttributeIndex": "yes"}, "multiAttributeIndex"),
    ],
)
def test_a_bad_cdk_json_context_exits_2_naming_the_key(
    z_account: Account, tmp_path: Path, context: dict[str, Any], named: str
) -> None:
    write_cdk_json(tmp_path, context)
    result = z_account.admin("backfill", "--bucket", BUCKET)
    assert result.status == 2
    assert named in result.stderr
    (tmp_path / "cdk.json").write_text("{not json")
    assert z_account.admin("backfill", "--bucket", BUCKET).status == 2


def test_without_cdk_json_the_commands_write_the_0_2_0_placement_with_a_note(
    legacy_account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    keys = upload(legacy_account, 4)
    result = legacy_account.admin("backfill", "--bucket", BUCKET, "--json")
    assert result.status == 0
    assert result.stderr == (
        "file_search_admin: note: no cdk.json here: writing with the unsharded placement (1 bucket shard, "
        "no hot users, no Z-order index, the default key pattern); pass --cdk-json or the placement options "
        "to match the deployment\n"
    )
    for key in keys:
        entry = legacy_account.item(key)
        assert entry is not None
        assert entry["bucketName"] == BUCKET
        assert "zAddress" not in entry
        assert "userShard" not in entry
    # --cdk-json names the deployment's file from anywhere.
    switch_on(legacy_account)
    reconciled = legacy_account.admin(
        "reconcile", "--bucket", BUCKET, "--cdk-json", str(tmp_path / "cdk.json"), "--json"
    )
    assert reconciled.status == 0, reconciled.stderr
    assert "note:" not in reconciled.stderr
    assert reconciled.json()["unplaced"] == {"found": 4, "fixed": 4}


def test_the_note_names_only_the_defaults_no_option_overrides(
    legacy_account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    upload(legacy_account, 2)
    shards = legacy_account.admin("backfill", "--bucket", BUCKET, "--bucket-index-shards", "4")
    assert shards.status == 0, shards.stderr
    assert shards.stderr == (
        "file_search_admin: note: no cdk.json here: writing with no hot users, no Z-order index and the "
        "default key pattern (the built-in defaults; no option sets them); pass --cdk-json or the placement "
        "options to match the deployment\n"
    )
    every = [
        *("--bucket-index-shards", "4", "--hot-users", "{}", "--no-multi-attribute-index"),
        *("--key-layout", "default"),
    ]
    overridden = legacy_account.admin("reconcile", "--bucket", BUCKET, *every)
    assert overridden.status == 0, overridden.stderr
    assert overridden.stderr == ""


def _writes(requests: list[str]) -> list[str]:
    names = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")
    return [call for call in requests if call.split(".")[1] in names]


def test_a_placement_without_the_tables_z_order_index_is_refused_before_any_write(
    z_account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count_requests: list[str]
) -> None:
    # The table has the Z-order index; run from a folder without the deployment's cdk.json.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    upload(z_account, 4)
    refused = (
        "file_search_admin: error: table 'FileMetaData' has the Z-order index bucketName-zAddress-index, "
        "but the shard placement has multiAttributeIndex off ({source}): the entries it wrote would be "
        "missing "
        "from box searches; run from the CDK app's folder, pass --cdk-json PATH, or --multi-attribute-index\n"
    )
    for command in ("backfill", "reconcile"):
        result = z_account.admin(
            command, "--bucket", BUCKET, "--bucket-index-shards", "4", "--hot-users", "{}"
        )
        assert (result.status, result.stdout) == (2, "")
        assert result.stderr.endswith(refused.format(source="the built-in default: no cdk.json here"))
        assert result.stderr.count("\n") == 2  # the note on the placement, then the refusal
        explicit = z_account.admin(command, "--bucket", BUCKET, "--no-multi-attribute-index")
        assert explicit.status == 2
        assert explicit.stderr.endswith(refused.format(source="--no-multi-attribute-index"))
    write_cdk_json(elsewhere, {"bucketIndexShards": 4})  # another app's cdk.json
    other = z_account.admin("backfill", "--bucket", BUCKET)
    assert other.status == 2
    assert other.stderr == refused.format(source="cdk.json")
    assert _writes(count_requests) == []
    assert list(scan_index(z_account.dynamodb, TABLE)) == []  # no entry, no state record

    # A dry run writes nothing: it runs, and warns.
    count_requests.clear()
    dry = z_account.admin("reconcile", "--bucket", BUCKET, "--dry-run", "--json")
    assert dry.status == 0, dry.stderr
    assert dry.json()["found"]["missing"] == 4
    assert dry.stderr == refused.format(source="cdk.json").replace(": error: ", ": warning: ")
    assert _writes(count_requests) == []
    # The check reads the DescribeTable that finds the table anyway: no request of its own.
    assert count_requests.count("dynamodb.DescribeTable") == 1

    # A missing table is still that, exit 1.
    missing = z_account.admin("backfill", "--bucket", BUCKET, "--table", "NoTable")
    assert (missing.status, missing.stderr) == (
        1,
        "file_search_admin: error: table 'NoTable' does not exist\n",
    )

    # The deployment's placement writes.
    placed = z_account.admin("backfill", "--bucket", BUCKET, "--cdk-json", str(tmp_path / "cdk.json"))
    assert placed.status == 0, placed.stderr
    assert z_index_keys(z_account) == {item["objectKey"] for item in live_entries(z_account).values()}
    assert len(z_index_keys(z_account)) == 4


@pytest.mark.parametrize("command", ["backfill", "reconcile", "migrate"])
def test_a_z_order_placement_for_a_table_without_the_index_is_refused(
    legacy_account: Account, command: str, count_requests: list[str]
) -> None:
    # ./cdk.json switched multiAttributeIndex on, but the table was not deployed with it yet.
    upload(legacy_account, 2)
    result = legacy_account.admin(command, "--bucket", BUCKET)
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "file_search_admin: error: table 'FileMetaData' has no Z-order index bucketName-zAddress-index, but "
        "the shard placement has multiAttributeIndex on (cdk.json): the placement is not the deployed one; "
        "deploy "
        "it first, pass the deployment's --cdk-json PATH, or --no-multi-attribute-index\n"
    )
    assert _writes(count_requests) == []
    assert not pending(legacy_account)


def test_reconcile_leaves_entries_of_a_smaller_shard_count_alone_and_places_missing_addresses(
    legacy_account: Account, count_requests: list[str]
) -> None:
    keys = upload(legacy_account, 10)
    # Written under one shard and without the Z-order index: every entry in shard 0.
    one_shard = ["--bucket-index-shards", "1", "--hot-users", "{}", "--no-multi-attribute-index"]
    assert legacy_account.admin("backfill", "--bucket", BUCKET, *one_shard).status == 0
    before = {key: legacy_account.item(key) for key in keys}
    assert {entry["bucketName"] for entry in before.values() if entry} == {BUCKET}
    # Read under 4 shards and a hot user, Z-order off: nothing to repair, nothing written.
    count_requests.clear()
    sharded = legacy_account.admin(
        "reconcile", "--bucket", BUCKET, "--no-multi-attribute-index", "--json"
    ).json()
    assert sharded["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    assert sharded["unplaced"] == {"found": 0, "fixed": 0}
    writes = [
        call for call in count_requests if call.split(".")[1] in ("PutItem", "UpdateItem", "DeleteItem")
    ]
    assert writes == ["dynamodb.PutItem", "dynamodb.UpdateItem", "dynamodb.UpdateItem"]  # the state record
    assert {key: legacy_account.item(key) for key in keys} == before
    # With the Z-order index on: each entry gets its address, in place (still shard 0), without a HEAD.
    switch_on(legacy_account)
    count_requests.clear()
    placed = legacy_account.admin("reconcile", "--bucket", BUCKET, "--json").json()
    assert placed["unplaced"] == {"found": 10, "fixed": 10}
    assert placed["found"] == {"missing": 0, "stale": 0, "orphaned": 0}
    assert "s3.HeadObject" not in count_requests
    for key in keys:
        entry = legacy_account.item(key)
        assert entry is not None
        assert entry["bucketName"] == BUCKET
        assert entry["zAddress"] == expected_z_address(entry, PLACEMENT)
        assert {**entry, "zAddress": None} == {**(before[key] or {}), "zAddress": None}
    assert legacy_account.admin("reconcile", "--bucket", BUCKET, "--json").json()["unplaced"]["found"] == 0


def test_backfill_places_new_entries_by_the_cdk_json_placement(z_account: Account) -> None:
    keys = upload(z_account, 16)
    assert z_account.admin("backfill", "--bucket", BUCKET).status == 0
    for key in keys:
        entry = z_account.item(key)
        assert entry is not None
        assert entry["bucketName"] == PLACEMENT.bucket_partition(BUCKET, key)
        user = key.split("_")[0]
        assert entry["uploadUser"] == PLACEMENT.user_partition(user, key)
        assert entry.get("userShard", 0) == PLACEMENT.user_shard(user, key)
        assert entry["zAddress"] == expected_z_address(entry, PLACEMENT)
    assert {shards.shard_of(key, 4) for key in keys} == set(range(4))
    assert z_index_keys(z_account) == set(keys)


def test_a_run_over_a_complete_index_never_moves_searches_off_it(legacy_account: Account) -> None:
    upload(legacy_account, 5)
    assert legacy_account.admin("backfill", "--bucket", BUCKET, "--no-multi-attribute-index").status == 0
    switch_on(legacy_account)
    assert run_migrate(dynamodb=legacy_account.dynamodb, bucket=BUCKET, table=TABLE, placement=PLACEMENT)
    seen: list[bool] = []
    again = run_migrate(
        dynamodb=legacy_account.dynamodb,
        bucket=BUCKET,
        table=TABLE,
        placement=PLACEMENT,
        segments=1,
        on_progress=lambda _counts: seen.append(pending(legacy_account)),
    )
    assert again.counts.updated == 0
    assert seen
    assert not any(seen)
