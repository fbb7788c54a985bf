"""Key patterns: the default `{user}_{file}` / `{user}/{file}`, and a deployer's regex."""

from __future__ import annotations

import pytest

from file_index.rules.key_pattern import InvalidKeyPatternError, KeyParts, KeyPattern

DEFAULT = KeyPattern.parse("default")


@pytest.mark.parametrize(
    ("key", "user", "file_id"),
    [
        ("USER001_FILE001.txt", "USER001", "FILE001.txt"),
        ("USER001/FILE001.txt", "USER001", "FILE001.txt"),
        ("USER001_dir/FILE_001.txt", "USER001", "dir/FILE_001.txt"),  # the first separator wins
        ("team/USER_x.txt", "team", "USER_x.txt"),
        ("日本_ファイル.txt", "日本", "ファイル.txt"),
    ],
)
def test_default_key_pattern(key: str, user: str, file_id: str) -> None:
    assert DEFAULT.split(key) == KeyParts(user, file_id)


@pytest.mark.parametrize(
    ("key", "file_id"),
    [
        ("FILE001.txt", "FILE001.txt"),  # no separator
        ("_FILE001.txt", "_FILE001.txt"),  # empty user
        ("/a/b.txt", "b.txt"),
        ("USER001_", "USER001_"),  # empty file id
        ("folder/", "folder/"),
    ],
)
def test_keys_outside_the_default_key_pattern(key: str, file_id: str) -> None:
    parts = DEFAULT.split(key)
    assert parts.upload_user is None
    assert parts.file_id == file_id
    assert parts.mismatch_reason


def test_unset_and_empty_mean_default() -> None:
    assert KeyPattern.parse(None) == DEFAULT
    assert KeyPattern.parse("  ") == DEFAULT


def test_a_custom_regex_must_match_the_whole_key() -> None:
    key_pattern = KeyPattern.parse(r"uploads/(?P<user>[^/]+)/(?P<file>.+)")
    assert key_pattern.split("uploads/alice/2024/report.pdf") == KeyParts("alice", "2024/report.pdf")
    outside = key_pattern.split("tmp/uploads/alice/x")
    assert outside.upload_user is None
    assert outside.file_id == "x"


@pytest.mark.parametrize(
    ("key_pattern", "reason"), [("(?P<user>[a-z", "not a regular expression"), (r"(?P<user>\w+)_.*", "file")]
)
def test_invalid_layouts(key_pattern: str, reason: str) -> None:
    with pytest.raises(InvalidKeyPatternError, match=reason):
        KeyPattern.parse(key_pattern)
