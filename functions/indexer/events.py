"""S3 event notifications, as SQS delivers them, parsed into `ObjectEvent`s.

One SQS message body is one S3 notification: `{"Records": [...]}` with one or more records, or the
`s3:TestEvent` S3 sends when notifications are configured (acknowledged: no events). A body that is
neither fails as a whole with `MalformedMessageError`, whose message is the reason for the log.

Keys arrive URL-encoded (`my+file.txt` is `my file.txt`) and are decoded with `unquote_plus`.

Ordering, and the event model itself, live in `file_index.objects`: the indexer only parses.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

from file_index.key_layout import KeyLayout
from file_index.objects import (
    CREATE_PREFIXES,
    MAX_KEY_BYTES,
    MAX_OBJECT_SIZE,
    REMOVE_PREFIXES,
    InvalidSequencerError,
    ObjectEvent,
    order_key_for_sequencer,
)

TEST_EVENT = "s3:TestEvent"
_DEFAULT_LAYOUT = KeyLayout.parse(None)


class MalformedMessageError(ValueError):
    """The message body is not an S3 notification this indexer can apply; the text says why."""


def parse_message(body: str, layout: KeyLayout = _DEFAULT_LAYOUT) -> list[ObjectEvent]:
    """The object events of one SQS message body; [] for a test event or records of other event types.

    Raises `MalformedMessageError` if the body (or any of its records) cannot be applied: the whole
    message then fails, which is safe to retry because every write is conditional.
    """
    try:
        notification = json.loads(body)
    except (TypeError, ValueError) as error:
        raise MalformedMessageError(f"body is not JSON: {error}") from None
    if not isinstance(notification, dict):
        raise MalformedMessageError("body is not a JSON object")
    if notification.get("Event") == TEST_EVENT:
        return []
    records = notification.get("Records")
    if not isinstance(records, list) or not records:
        raise MalformedMessageError("body has no S3 Records and is not an s3:TestEvent")
    events = []
    for position, record in enumerate(records):
        try:
            event = parse_record(record, layout)
        except MalformedMessageError as error:
            raise MalformedMessageError(f"record {position}: {error}") from None
        if event is not None:
            events.append(event)
    return events


def parse_record(record: Any, layout: KeyLayout = _DEFAULT_LAYOUT) -> ObjectEvent | None:
    """One S3 record as an `ObjectEvent`; None for S3 events that do not change which objects exist."""
    if not isinstance(record, dict):
        raise MalformedMessageError("record is not a JSON object")
    if record.get("eventSource") != "aws:s3":
        raise MalformedMessageError(f"eventSource is {record.get('eventSource')!r}, not 'aws:s3'")
    event_name = _text(record, "eventName").removeprefix("s3:")
    if not event_name.startswith(CREATE_PREFIXES + REMOVE_PREFIXES):
        # Restores, tagging, ACL and replication events leave the set of objects unchanged.
        return None
    s3 = record.get("s3")
    if (
        not isinstance(s3, dict)
        or not isinstance(s3.get("bucket"), dict)
        or not isinstance(s3.get("object"), dict)
    ):
        raise MalformedMessageError("record has no s3.bucket / s3.object")
    bucket = _text(s3["bucket"], "name")
    obj = s3["object"]
    key = unquote_plus(_text(obj, "key"))  # unquote_plus replaces bytes that are not UTF-8
    if not key:
        raise MalformedMessageError("object key is empty after decoding")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise MalformedMessageError(f"object key is longer than S3's {MAX_KEY_BYTES} bytes")
    event_time = _event_time(_text(record, "eventTime"))
    sequencer = _optional_text(obj, "sequencer")
    if sequencer is not None:
        try:
            order_key_for_sequencer(sequencer)
        except InvalidSequencerError as error:
            raise MalformedMessageError(str(error)) from None
    size = obj.get("size")
    is_create = event_name.startswith(CREATE_PREFIXES)
    if is_create and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < MAX_OBJECT_SIZE):
        raise MalformedMessageError(f"create has no valid object size (0 <= size < 10**18): {size!r:.40}")
    parts = layout.split(key)
    return ObjectEvent(
        event_name=event_name,
        bucket=bucket,
        key=key,
        event_time=event_time,
        sequencer=sequencer,
        size=size if is_create else None,
        e_tag=_optional_text(obj, "eTag"),
        version_id=_optional_text(obj, "versionId"),
        upload_user=parts.upload_user,
        file_id=parts.file_id,
        no_user_reason=parts.mismatch_reason,
    )


def _text(container: dict[str, Any], name: str) -> str:
    value = container.get(name)
    if not isinstance(value, str) or not value:
        raise MalformedMessageError(f"{name} is missing or not a string")
    return _utf8(value, name)


def _optional_text(container: dict[str, Any], name: str) -> str | None:
    value = container.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MalformedMessageError(f"{name} is not a string")
    return _utf8(value, name)


def _utf8(value: str, name: str) -> str:
    """`value`, if it can be written as UTF-8: JSON can carry lone surrogates (`"\\ud800"`), DynamoDB not."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedMessageError(f"{name} is not valid UTF-8 (it holds a lone surrogate)") from None
    return value


def _event_time(raw: str) -> datetime:
    """The event time in UTC; naive times (S3 always sends "Z", other stores may not) are taken as UTC."""
    try:
        moment = datetime.fromisoformat(raw)
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        # Converting can leave datetime's range (year 1 at +01:00): the same reason to reject as a bad text.
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise MalformedMessageError(f"eventTime {raw!r:.60} is not an ISO-8601 timestamp in range") from None
