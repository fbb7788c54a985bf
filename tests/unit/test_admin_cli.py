"""The admin command line's arguments: what goes together, what is refused, and the help."""

from __future__ import annotations

import argparse

import pytest

from file_search_admin.cli import build_parser, main, parse_args


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
    assert args.key_layout.source == "default"
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
    assert args.key_layout.split("u1/x.txt").upload_user == "u1"


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
        (["backfill", "--bucket", "b", "--stack-name", "S"], "go with --deployed"),
        (["backfill", "--bucket", "b", "--concurrency", "0"], "'0' must be at least 1"),
        (["backfill", "--bucket", "b", "--page-size", "ten"], "'ten' is not a whole number"),
        (["backfill", "--bucket", "b", "--key-layout", "(?P<user>.+)"], "missing ['file']"),
        (["redrive", "--dlq-url", "d"], "--queue-url"),
        (["rebuild"], "invalid choice: 'rebuild'"),
    ],
)
def test_bad_arguments_exit_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert message in refused(capsys, *argv)


@pytest.mark.parametrize("command", ["backfill", "reconcile", "redrive", "status"])
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
