"""The client's pure parts: when to sign, the region, key paths, table output, argument checks."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import file_search_client
from file_search_client.cli import (
    build_parser,
    display_width,
    format_item,
    format_status,
    format_table,
    main,
)
from file_search_client.http import SearchApiClient, key_path, needs_signing, region_of

DEPLOYED = "https://abc123.execute-api.eu-central-1.amazonaws.com/prod"


@pytest.mark.parametrize(
    ("url", "signed"),
    [
        (DEPLOYED, True),
        ("http://127.0.0.1:8000", False),
        ("http://abc123.execute-api.eu-central-1.amazonaws.com/prod", False),
        ("https://search.example.com", False),
    ],
)
def test_deployed_apis_are_signed_local_ones_are_not(url: str, signed: bool) -> None:
    assert needs_signing(url) is signed


def test_the_region_comes_from_an_execute_api_host() -> None:
    assert region_of(DEPLOYED) == "eu-central-1"
    assert region_of("http://127.0.0.1:8000") is None


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("USER001_FILE001.txt", "/files/USER001_FILE001.txt"),
        ("USER001/a b+c%.txt", "/files/USER001%2Fa%20b%2Bc%25.txt"),
        ("日本", "/files/%E6%97%A5%E6%9C%AC"),
        ("a?b#c", "/files/a%3Fb%23c"),
    ],
)
def test_keys_are_percent_encoded_into_one_path_segment(key: str, path: str) -> None:
    assert key_path("files", key) == path


def test_signed_headers_carry_sigv4_for_execute_api() -> None:
    client = SearchApiClient(DEPLOYED)
    headers = client.signed_headers(DEPLOYED + "/files?user=U")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-central-1/execute-api/aws4_request," in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "testing"
    assert "X-Amz-Date" in headers


def test_plain_headers_for_the_local_stack() -> None:
    headers = SearchApiClient("http://127.0.0.1:8000").signed_headers("http://127.0.0.1:8000/files")
    assert "Authorization" not in headers


def test_table_aligns_columns_and_right_aligns_sizes() -> None:
    table = format_table(
        [
            {"objectKey": "a", "size": 5, "uploadUser": "U", "uploadDate": "2017-08-20T09:15:02.113Z"},
            {"objectKey": "long/key.txt", "size": 12345, "uploadUser": "U", "uploadDate": "2017"},
        ]
    ).splitlines()
    assert table[0] == "KEY            SIZE  USER  UPLOADED"
    assert table[1] == "a                 5  U     2017-08-20T09:15:02.113Z"
    assert table[2] == "long/key.txt  12345  U     2017"


def test_table_pads_by_display_width_so_cjk_names_line_up() -> None:
    # 会議資料 takes 8 columns of a terminal (2 a character), not 4; the decomposed é (e and U+0301) takes 1.
    table = format_table(
        [
            {"objectKey": "会議資料.pptx", "size": 5, "uploadUser": "山田", "uploadDate": "2024-05-01"},
            {"objectKey": "notes.txt", "size": 12345, "uploadUser": "U", "uploadDate": "2024-05-02"},
            {"objectKey": "cafe\u0301.txt", "size": 7, "uploadUser": "U", "uploadDate": "2024-05-03"},
            {"objectKey": "ＡＢ.txt", "size": 70, "uploadUser": "U", "uploadDate": "2024-05-04"},
        ]
    ).splitlines()
    assert table == [
        "KEY             SIZE  USER  UPLOADED",
        "会議資料.pptx      5  山田  2024-05-01",
        "notes.txt      12345  U     2024-05-02",
        "cafe\u0301.txt           7  U     2024-05-03",
        "ＡＢ.txt          70  U     2024-05-04",
    ]
    # On every line, in terminal columns: KEY, USER and UPLOADED start at the same place, SIZE ends at one.
    edges = set()
    for line in table:
        cells = list(re.finditer(r"\S+", line))
        assert len(cells) == 4, line
        edges.add(
            (
                display_width(line[: cells[0].start()]),
                display_width(line[: cells[1].end()]),
                display_width(line[: cells[2].start()]),
                display_width(line[: cells[3].start()]),
            )
        )
    assert len(edges) == 1, edges


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        ("notes.txt", 9),
        ("会議資料.pptx", 13),  # CJK ideographs: wide
        ("ファイル", 8),  # katakana: wide
        ("한국어", 6),  # Hangul syllables: wide
        ("\u1112\u1161\u11ab", 2),  # the same syllable 한 as jamo: the vowel and final join the first
        ("ＡＢ", 4),  # fullwidth Latin
        ("cafe\u0301", 4),  # a combining mark takes no column
        ("ｶﾅ", 2),  # halfwidth katakana: narrow
        ("über", 4),
    ],
)
def test_display_width_counts_terminal_columns(text: str, columns: int) -> None:
    assert display_width(text) == columns


def test_an_empty_list_is_just_the_header() -> None:
    assert format_table([]) == "KEY  SIZE  USER  UPLOADED"


def test_one_item_is_shown_field_by_field() -> None:
    assert format_item({"size": 3, "objectKey": "k"}) == "objectKey  k\nsize       3"


def test_user_and_bucket_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search", "--user", "U", "--bucket", "B"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search"])


def test_an_api_url_is_required(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("FILE_SEARCH_API_URL", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "--user", "U"], out=io.StringIO())
    assert exit_info.value.code == 2
    assert "FILE_SEARCH_API_URL" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["notaurl", "ftp://example.com/v1", "http://", "127.0.0.1:8000"])
def test_an_api_url_that_is_not_http_is_a_usage_error(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--api-url", url, "status"], out=io.StringIO())
    assert exit_info.value.code == 2
    assert "is not an http:// or https:// URL" in capsys.readouterr().err


def test_an_unreachable_api_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    # Port 9 (discard) on localhost: refused at once, no network involved.
    assert main(["--api-url", "http://127.0.0.1:9", "get", "k"], out=io.StringIO()) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_a_building_status_shows_the_run_its_progress_and_the_backlog() -> None:
    status = {
        "indexState": "BUILDING",
        "buckets": [
            {
                "bucket": "fileupload.a",
                "state": "BUILDING",
                "operation": "backfill",
                "runId": "run-1",
                "startedAt": "2024-05-01T10:00:00.000Z",
                "finishedAt": None,
                "updatedAt": "2024-05-01T10:05:00.000Z",
                "progress": {"listed": 10, "skipped": 3, "written": 7},
                "lastError": "throttled",
            }
        ],
        "queue": {
            "messagesWaiting": 4,
            "messagesInFlight": 1,
            "messagesDelayed": 0,
            "oldestMessageAgeSeconds": 42,
        },
        "deadLetterQueue": {"messages": 2},
        "unavailable": [],
    }
    assert format_status(status).splitlines() == [
        "index         BUILDING",
        "bucket        fileupload.a: BUILDING",
        "run           backfill run-1, started 2024-05-01T10:00:00.000Z, updated 2024-05-01T10:05:00.000Z",
        "progress      listed 10, skipped 3, written 7",
        "last error    throttled",
        "queue         4 waiting, 1 in flight, 0 delayed; oldest 42 s",
        "dead letters  2",
    ]


def test_unreadable_figures_show_as_unknown_never_as_zero() -> None:
    status = {
        "indexState": "READY",
        "buckets": [{"bucket": "b", "state": "READY", "operation": None, "progress": {}}],
        "queue": {
            "messagesWaiting": None,
            "messagesInFlight": None,
            "messagesDelayed": None,
            "oldestMessageAgeSeconds": None,
        },
        "deadLetterQueue": {"messages": None},
        "unavailable": ["queue", "deadLetterQueue"],
    }
    assert format_status(status).splitlines() == [
        "index         READY",
        "bucket        b: READY",
        "queue         ? waiting, ? in flight, ? delayed; oldest unknown",
        "dead letters  ?",
        "unavailable   queue, deadLetterQueue",
    ]


def test_status_takes_only_json() -> None:
    assert build_parser().parse_args(["status", "--json"]).json is True
    with pytest.raises(SystemExit):
        build_parser().parse_args(["status", "--user", "U"])


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"{parser.prog} {action.dest}"
        for parser in _parsers(build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert not missing


def test_version_prints_the_clients_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert file_search_client.__version__ == "0.3.0"
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == "file_search_client 0.3.0\n"


def test_help_ends_with_examples() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "file_search_client", "--help"], capture_output=True, text=True, check=True
    )
    examples = result.stdout.split("examples:\n", 1)[1]
    assert "search --user USER001 --date 2017-08-20" in examples
    assert "download USER001_FILE001.txt -o FILE001.txt --force" in examples


@pytest.mark.parametrize(
    ("where", "message"),
    [("directory", "is a directory: give a file name with -o"), ("missing", "does not exist")],
)
def test_an_unwritable_target_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, message: str
) -> None:
    target = tmp_path if where == "directory" else tmp_path / "missing" / "a.txt"
    # Port 9 refuses at once: had the client tried the API, it would say "cannot reach".
    code = main(["--api-url", "http://127.0.0.1:9", "download", "k", "-o", str(target)], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 3
    assert message in err
    assert "cannot reach" not in err


def test_an_existing_file_is_refused_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "a.txt"
    target.write_text("mine")
    code = main(["--api-url", "http://127.0.0.1:9", "download", "k", "-o", str(target)], out=io.StringIO())
    assert code == 3
    assert "exists: pass --force to replace it" in capsys.readouterr().err
    assert target.read_text() == "mine"
    # With --force the check passes, so the client goes on to the (unreachable) API.
    code = main(["--api-url", "http://127.0.0.1:9", "download", "k", "-o", str(target), "--force"])
    assert code == 1
    assert "cannot reach" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "name"), [("a/b.txt", "b.txt"), ("a/..", "download"), ("a/", "a")])
def test_the_default_file_name_stays_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text("there")
    assert main(["--api-url", "http://127.0.0.1:9", "download", key], out=io.StringIO()) == 3
    assert f"{name} exists" in capsys.readouterr().err


def test_control_characters_in_keys_are_shown_escaped() -> None:
    from file_search_client.cli import format_item, format_table

    key = "USER014_\x1b[31mRED\x1b[0m\tx.txt"
    table = format_table([{"objectKey": key, "size": 1}])
    assert "\x1b" not in table
    assert "\t" not in table
    assert "USER014_\\x1b[31mRED\\x1b[0m\\tx.txt" in table
    assert "\x1b" not in format_item({"objectKey": key})
    assert "ü" in format_table([{"objectKey": "USER1_über.txt"}])  # printable text stays as it is


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--user", "U", "--date", "2024-01-01", "--from", "2023-12-01"], "--date cannot be combined"),
        (["--user", "U", "--date", "2024-01-01", "--to", "2024-02-01"], "--date cannot be combined"),
        (["--bucket", "b", "--min-size", "10", "--max-size", "9"], "--min-size must not be greater"),
        (["--bucket", "b", "--min-size", "-1"], "--min-size must be 0 or more"),
        (["--bucket", "b", "--limit", "0"], "--limit must be at least 1"),
        (["--bucket", "b", "--meta", "project"], "--meta takes NAME=VALUE"),
        (["--bucket", "b", "--tag", "=x"], "--tag takes NAME=VALUE"),
    ],
)
def test_arguments_the_client_can_check_exit_2_before_any_request(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The API's address is unreachable: exit 2 (not 1) shows no request was made.
    with pytest.raises(SystemExit) as exit_info:
        main(["--api-url", "http://127.0.0.1:9", "search", *arguments], out=io.StringIO())
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_tells_every_exit_status_and_the_sort_orders() -> None:
    parser = build_parser()
    assert "141 the reader of stdout closed it early" in parser.format_help()
    (search,) = [sub for sub in _parsers(parser) if sub.prog.endswith(" search")]
    assert "--sort {uploadDate,size}" in search.format_help()


def _search_help(dest: str) -> str:
    (search,) = [sub for sub in _parsers(build_parser()) if sub.prog.endswith(" search")]
    (action,) = [action for action in search._actions if action.dest == dest]
    return " ".join((action.help or "").split())


def test_help_on_sort_says_what_the_api_does_for_a_user() -> None:
    from search.queries import ListParameters, build_query

    # The API: a user's list by size is largest first; by upload time (or unsorted) oldest first.
    by_size = build_query(ListParameters(user="U", sort="size"))
    assert (by_size.order_by, by_size.ascending) == ("size", False)
    for sort in (None, "uploadDate"):
        by_time = build_query(ListParameters(user="U", sort=sort))
        assert by_time.ascending is True
        assert by_time.order_by in (None, "uploadDate")
    newest = build_query(ListParameters(bucket="b", sort="uploadDate"))
    assert (newest.order_by, newest.ascending) == ("uploadDate", False)
    # The help says the same, and no longer that a user's list is always by upload time.
    sort_help, user_help, order_help = _search_help("sort"), _search_help("user"), _search_help("order")
    assert "always" not in sort_help
    assert "a user's or a bucket's list: size (largest first)" in sort_help
    assert "a bucket's newest first, a user's oldest first" in sort_help
    assert "unless --sort size" in user_help
    assert "desc for --user --sort size" in order_help
