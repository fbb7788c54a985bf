"""The admin command line's arguments: what goes together, what is refused, and the help."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from file_index.rules.placement import ShardPlacement
from file_search_admin.cli import build_parser, main, parse_args
from file_search_admin.errors import PlacementMismatchError
from file_search_admin.writer_settings import WriterSettings, check_table_placement, resolve_writer_settings


def parse(*argv: str) -> argparse.Namespace:
    return parse_args(build_parser(), list(argv))


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_backfill_defaults() -> None:
    args = parse("backfill", "--bucket", "b")
    assert (args.table, args.concurrency, args.page_size, args.restart, args.json) == (
        "FileMetaData",
        16,
        1000,
        False,
        False,
    )
    assert args.key_pattern is None  # resolved from cdk.json or the deployed configuration
    assert not args.deployed


def test_common_options_go_after_the_command() -> None:
    args = parse(
        "reconcile",
        "--bucket",
        "b",
        "--table",
        "T",
        "--dry-run",
        "--json",
        "--profile",
        "p",
        "--region",
        "eu-west-1",
    )
    assert (args.table, args.dry_run, args.json, args.profile, args.region) == (
        "T",
        True,
        True,
        "p",
        "eu-west-1",
    )


def test_a_custom_key_layout_is_compiled() -> None:
    args = parse("backfill", "--bucket", "b", "--key-layout", r"(?P<user>[^/]+)/(?P<file>.+)")
    assert resolve_writer_settings(args).key_pattern.split("u1/x.txt").upload_user == "u1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["backfill"], "backfill needs --bucket"),
        (["reconcile", "--table", "T"], "reconcile needs --bucket"),
        (["status"], "status needs --bucket"),
        (["backfill", "--deployed"], "needs exactly one of --stack-name, --state-machine-arn"),
        (
            ["backfill", "--deployed", "--stack-name", "S", "--state-machine-arn", "arn"],
            "needs exactly one of --stack-name, --state-machine-arn",
        ),
        (["reconcile", "--deployed", "--stack-name", "S", "--bucket", "b"], "leave out --bucket"),
        (["backfill", "--bucket", "b", "--state-machine-arn", "S"], "goes with --deployed"),
        (["backfill", "--bucket", "b", "--concurrency", "0"], "'0' must be at least 1"),
        (["backfill", "--bucket", "b", "--page-size", "ten"], "'ten' is not a whole number"),
        (["backfill", "--bucket", "b", "--key-layout", "(?P<user>.+)"], "missing ['file']"),
        (["redrive", "--dlq-url", "d"], "--queue-url"),
        (["rebuild"], "invalid choice: 'rebuild'"),
        (["migrate"], "migrate needs --bucket"),
        (["migrate", "--bucket", "b", "--segments", "0"], "'0' must be at least 1"),
        (["migrate", "--bucket", "b", "--deployed"], "unrecognized arguments: --deployed"),
    ],
)
def test_bad_arguments_exit_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert message in refused(capsys, *argv)


@pytest.mark.parametrize("command", ["backfill", "reconcile", "migrate", "redrive", "status"])
def test_help_shows_examples(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert "python -m file_search_admin backfill --bucket my-bucket" in out
    assert "--json" in out


def test_redrive_refuses_the_same_queue_twice() -> None:
    from file_search_admin.errors import AdminError
    from file_search_admin.redrive import redrive

    with pytest.raises(AdminError, match="name the same queue"):
        redrive(None, dlq_url="https://q/a", queue_url="https://q/a/")


def test_migrate_defaults_and_the_placement_options() -> None:
    args = parse("migrate", "--bucket", "b")
    assert (args.table, args.segments, args.cdk_json, args.multi_attribute_index) == (
        "FileMetaData",
        4,
        None,
        None,
    )
    assert (args.bucket_index_shards, args.hot_users) == (None, None)
    args = parse(
        "backfill",
        "--bucket",
        "b",
        "--bucket-index-shards",
        "16",
        "--hot-users",
        '{"bot": 2}',
        "--no-multi-attribute-index",
        "--cdk-json",
        "deploy/cdk.json",
    )
    assert (args.bucket_index_shards, args.hot_users, args.multi_attribute_index) == (
        "16",
        '{"bot": 2}',
        False,
    )
    assert str(args.cdk_json) == "deploy/cdk.json"
    with pytest.raises(SystemExit):
        parse("status", "--bucket", "b", "--bucket-index-shards", "2")  # status writes nothing


@pytest.mark.parametrize(
    ("options", "note"),
    [
        (
            [],
            "the unsharded placement (1 bucket shard, no hot users, no Z-order index, "
            "the default key pattern)",
        ),
        (
            ["--hot-users", "{}"],
            "1 bucket shard, no Z-order index and the default key pattern "
            "(the built-in defaults; no option sets them)",
        ),
        (
            ["--bucket-index-shards", "4", "--multi-attribute-index", "--key-layout", "default"],
            "no hot users (the built-in defaults; no option sets it)",
        ),
        (
            ["--bucket-index-shards", "4", "--hot-users", "{}", "--no-multi-attribute-index"],
            "the default key pattern (the built-in defaults; no option sets it)",
        ),
        (
            [
                *("--bucket-index-shards", "4", "--hot-users", "{}", "--no-multi-attribute-index"),
                *("--key-layout", "default"),
            ],
            None,
        ),
    ],
)
def test_without_cdk_json_the_note_names_the_defaults_the_options_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str], note: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    resolved = resolve_writer_settings(parse("backfill", "--bucket", "b", *options))
    if note is None:
        assert resolved.note is None
    else:
        hint = "pass --cdk-json or the placement options to match the deployment"
        assert resolved.note == f"no cdk.json here: writing with {note}; {hint}"
    (tmp_path / "cdk.json").write_text('{"context": {}}')
    assert resolve_writer_settings(parse("backfill", "--bucket", "b", *options)).note is None


def _table(*indexes: tuple[str, str]) -> dict[str, Any]:
    """DescribeTable's `Table`, with the named GSIs in the given IndexStatus."""
    return {
        "GlobalSecondaryIndexes": [{"IndexName": name, "IndexStatus": status} for name, status in indexes]
    }


Z_INDEX = "bucketName-zAddress-index"


@pytest.mark.parametrize(
    ("table", "on", "refused"),
    [
        (_table(("bucketName-size-index", "ACTIVE")), False, None),
        (_table((Z_INDEX, "ACTIVE")), True, None),
        (_table((Z_INDEX, "CREATING")), True, None),  # switched on, still being built: entries need addresses
        (_table((Z_INDEX, "CREATING")), False, "has the Z-order index"),
        (_table((Z_INDEX, "ACTIVE")), False, "has the Z-order index"),
        (_table((Z_INDEX, "DELETING")), False, None),  # switched off: no search reads it any more
        (_table((Z_INDEX, "DELETING")), True, "has no Z-order index"),
        ({}, True, "has no Z-order index"),
    ],
)
def test_the_table_placement_check_compares_the_z_order_index(
    table: dict[str, Any], on: bool, refused: str | None
) -> None:
    resolved = WriterSettings(ShardPlacement(multi_attribute_index=on), multi_attribute_source="cdk.json")
    if refused is None:
        check_table_placement("T", table, resolved)
    else:
        with pytest.raises(PlacementMismatchError, match=refused) as error:
            check_table_placement("T", table, resolved)
        assert "\n" not in str(error.value)
        assert "(cdk.json)" in str(error.value)


def test_settings_taken_from_the_deployed_configuration_are_only_those_a_writer_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from file_index.store.deployment import DeployedConfiguration

    monkeypatch.chdir(tmp_path)  # no cdk.json: nothing named
    recorded = DeployedConfiguration.of(
        placement=ShardPlacement(bucket_shards=8),
        key_pattern="default",
        bucket_time_index=True,
        enrich=["tags"],
    )
    adopted = resolve_writer_settings(parse("backfill", "--bucket", "b")).adopt(recorded, "the record")
    assert adopted.placement == ShardPlacement(bucket_shards=8)
    assert set(adopted.given) == {"bucketIndexShards", "hotUsers", "multiAttributeIndex", "keyLayout"}
    assert adopted.own_configuration() == DeployedConfiguration.of(
        placement=ShardPlacement(bucket_shards=8), key_pattern="default"
    )
