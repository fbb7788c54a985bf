"""How an object key names its uploader and its file.

The guideline's keys are `{user}_{file}` (`USER001_FILE001.txt`); prefix layouts `{user}/{file}` are the
common S3 habit. The default key pattern accepts both: the user is the text before the first `_` or `/`, the
file id everything after it. A deployer can set any Python regular expression with the named groups
`user` and `file` instead; it must match the whole (decoded) key.

A key that does not fit the key pattern is still indexed: it has no user (so it is absent from the user index
but present in the bucket index) and its file id is the key's last `/` segment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_KEY_PATTERN = "default"

# The separator that comes first wins, so `USER001_a/b.txt` is USER001's `a/b.txt` and
# `team/USER_x.txt` is team's `USER_x.txt`.
_DEFAULT_PATTERN = re.compile(r"(?P<user>[^_/]+)[_/](?P<file>.+)", re.DOTALL)


class InvalidKeyPatternError(ValueError):
    """The configured key pattern is not a regular expression with the named groups `user` and `file`."""


@dataclass(frozen=True)
class KeyParts:
    """What a key says about its file: the uploader (None if the key does not fit) and the file id."""

    upload_user: str | None
    file_id: str
    # Why the key has no user, for the log; None when it has one.
    mismatch_reason: str | None = None


@dataclass(frozen=True)
class KeyPattern:
    """A compiled key pattern; build it with `KeyPattern.parse`."""

    source: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, key_pattern: str | None) -> KeyPattern:
        """`"default"` (or empty) for the default key pattern, else a regex with groups `user` and `file`."""
        if key_pattern is None or key_pattern.strip() in ("", DEFAULT_KEY_PATTERN):
            return cls(DEFAULT_KEY_PATTERN, _DEFAULT_PATTERN)
        try:
            pattern = re.compile(key_pattern, re.DOTALL)
        except re.error as error:
            raise InvalidKeyPatternError(f"not a regular expression: {error}") from error
        missing = {"user", "file"} - set(pattern.groupindex)
        if missing:
            raise InvalidKeyPatternError(
                f"needs the named groups (?P<user>...) and (?P<file>...); missing {sorted(missing)}"
            )
        return cls(key_pattern, pattern)

    def split(self, key: str) -> KeyParts:
        """The uploader and file id of a decoded object key."""
        match = self.pattern.fullmatch(key)
        if match is None:
            return KeyParts(None, _last_segment(key), f"key does not match the key pattern {self.source!r}")
        user, file_id = match.group("user"), match.group("file")
        # An empty user cannot be a GSI key (DynamoDB rejects empty key strings), so it counts as no match.
        if not user:
            return KeyParts(None, _last_segment(key), f"key pattern {self.source!r} gives an empty user")
        if not file_id:
            return KeyParts(None, _last_segment(key), f"key pattern {self.source!r} gives an empty file id")
        return KeyParts(user, file_id)


def _last_segment(key: str) -> str:
    # A key ending in "/" (a "folder" placeholder) has an empty last segment: keep the whole key then.
    return key.rsplit("/", 1)[-1] or key
