"""The object events the index is built from, shared by every function that writes it.

An `ObjectEvent` is one change to one key of the indexed bucket: a create or a removal, from an S3 event
notification or an EventBridge event (the indexer parses both), or from a listing (backfill and reconcile
build creates without a sequencer).

Ordering (docs/consistency.md): each event gets an `order_key`, a string whose plain
comparison orders the events of one key.

- With a sequencer (real S3): the sequencer upper-cased and right-padded with "0" to 64 characters.
  Padding to one width makes string comparison equal to AWS's rule "right-pad the shorter with zeros,
  then compare lexicographically". A sequencer that is not 1-64 hex digits is refused.
- Without a sequencer (moto, some S3-compatible stores): `#` + the event time in UTC with microseconds.
  The guarantee is weaker and time-based: the event with the later `eventTime` wins; events of one key
  with the same `eventTime` go to the last one applied, and the indexer applies the events of one key in
  one batch in delivery order. So a put and a delete delivered in order end deleted, even within one
  millisecond, unless an older event is redelivered later. `#` sorts before every hex digit, so if a
  key ever mixes both kinds, an event with a sequencer beats any event without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

# How long a tombstone is kept by default (days).
DEFAULT_TOMBSTONE_TTL_DAYS = 30
# The versionId S3 gives an object written while versioning was off or suspended.
NULL_VERSION = "null"

ORDER_KEY_WIDTH = 64
# Below every hex digit: see the module docstring.
UNSEQUENCED_PREFIX = "#"

CREATE_PREFIXES = ("ObjectCreated:",)
REMOVE_PREFIXES = ("ObjectRemoved:", "LifecycleExpiration:")
# Tag changes: they change no object, only its tags (`file_index.store.enrich`).
TAGGING_PREFIXES = ("ObjectTagging:",)
_SEQUENCER = re.compile(rf"[0-9A-Fa-f]{{1,{ORDER_KEY_WIDTH}}}")
# S3's own limit on a key, in UTF-8 bytes; DynamoDB's partition key allows 2048.
MAX_KEY_BYTES = 1024
# Object sizes are bounded far above S3's largest object and well inside DynamoDB's 38-digit numbers, so
# a size that parses is a size that can be written.
MAX_OBJECT_SIZE = 10**18


class InvalidSequencerError(ValueError):
    """A sequencer that is not 1-64 hex digits: no position in a key's history can be given to it."""


# The index's own records (a bucket's state, its deployed configuration, its upload statistics) sit in the
# entry table under keys one byte longer than the longest S3 key, so no event writes one and a scan skips
# them (`is_record_key`). Bucket names never contain "~", so the padding keeps each key unambiguous.
RECORD_MARK = "~"


def record_key(kind: str, name: str) -> str:
    """The `objectKey` of the record `kind` of `name` (a bucket, or a bucket and a shard)."""
    return f"{RECORD_MARK}{kind}{RECORD_MARK}{name}".ljust(MAX_KEY_BYTES + 1, RECORD_MARK)


def is_record_key(object_key: str) -> bool:
    """Whether `object_key` is one of the index's records (`record_key`), not an object's entry."""
    return object_key.startswith(RECORD_MARK) and len(object_key.encode("utf-8")) > MAX_KEY_BYTES


def order_key_for_sequencer(sequencer: str) -> str:
    """The comparable position of a sequencer: upper case, right-padded with "0" to a fixed width."""
    if not _SEQUENCER.fullmatch(sequencer):
        raise InvalidSequencerError(f"sequencer {sequencer!r} is not 1-{ORDER_KEY_WIDTH} hex digits")
    return sequencer.upper().ljust(ORDER_KEY_WIDTH, "0")


def order_key_for_time(event_time: datetime) -> str:
    """The comparable position of an event without a sequencer: its UTC time, microseconds, fixed width."""
    # isoformat, unlike strftime("%Y"), always writes four year digits, so the width is fixed.
    utc = event_time.astimezone(UTC).replace(tzinfo=None)
    return UNSEQUENCED_PREFIX + utc.isoformat(timespec="microseconds") + "Z"


def iso_utc_millis(moment: datetime) -> str:
    """`2017-08-20T09:15:02.113Z`: the uploadDate format, sortable as a string."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="milliseconds") + "Z"


@dataclass(frozen=True)
class ObjectEvent:
    """One S3 record, decoded: a create or a removal of one object key."""

    event_name: str  # without the "s3:" prefix, e.g. ObjectCreated:Put
    bucket: str
    key: str  # URL-decoded
    event_time: datetime  # timezone-aware
    sequencer: str | None
    size: int | None  # required for creates, absent on removals
    e_tag: str | None
    version_id: str | None
    upload_user: str | None  # None when the key does not fit the key pattern
    file_id: str
    no_user_reason: str | None = None  # why upload_user is None, for the log
    # Read from S3 when `enrich` names them (`file_index.store.enrich`); None: not read.
    content_type: str | None = None
    metadata: dict[str, str] | None = None
    tags: dict[str, str] | None = None

    @property
    def is_removal(self) -> bool:
        return self.event_name.startswith(REMOVE_PREFIXES)

    @property
    def is_tagging(self) -> bool:
        return self.event_name.startswith(TAGGING_PREFIXES)

    @property
    def removes_one_version(self) -> bool:
        """A permanent delete of one version: it hides the object only if that version is the indexed one.

        A delete marker always hides the object, whatever version the index holds.
        """
        return (
            self.is_removal and self.version_id is not None and "DeleteMarkerCreated" not in self.event_name
        )

    @property
    def order_key(self) -> str:
        if self.sequencer is not None:
            return order_key_for_sequencer(self.sequencer)
        return order_key_for_time(self.event_time)

    @property
    def upload_date(self) -> str:
        return iso_utc_millis(self.event_time)
