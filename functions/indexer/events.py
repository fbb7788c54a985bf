"""SQS message bodies, as the queue receives them, parsed into `ObjectEvent`s.

A body is one of:

- an S3 event notification: `{"Records": [...]}` with one or more records, or the `s3:TestEvent` S3
  sends when notifications are configured (acknowledged: no events);
- an EventBridge event of S3 (`"source": "aws.s3"`), forwarded by a rule whose target is the queue:
  `Object Created` and `Object Deleted` become the same `ObjectEvent`s an S3 notification gives (the
  names below), and every other detail type of S3 (restores, tagging, ACLs, storage classes) leaves the
  set of objects unchanged: no events.

| EventBridge | event name |
|---|---|
| Object Created, reason R | `ObjectCreated:<R as S3 names it: Put, Post, Copy, CompleteMultipartUpload>` |
| Object Deleted, deletion-type "Delete Marker Created" | `ObjectRemoved:DeleteMarkerCreated` |
| Object Deleted, deletion-type "Permanently Deleted" | `ObjectRemoved:Delete` |
| the same with reason "Lifecycle Expiration" | `LifecycleExpiration:DeleteMarkerCreated` / `:Delete` |

Both shapes carry S3's sequencer, so both get the same ordering rule (`file_index.rules.objects`). moto 5.2.5
sends a shape of its own, recognised by its reasons "ObjectCreated" / "ObjectRemoved" (AWS names the API
call): `eTag` spelled so, no deletion-type (it only reports deletes that remove the object), version-id
"null" for an object without versions, keys as they are, and one constant sequencer for every event,
which would make every event after a key's first look like a duplicate. Its sequencer is therefore
dropped and its events are ordered by their time, the rule for events without a sequencer.

A body that is none of these fails as a whole with `MalformedMessageError`, whose message is the reason
for the log. Keys of S3 notifications arrive URL-encoded (`my+file.txt` is `my file.txt`) and are decoded
with `unquote_plus`; for EventBridge see `eventbridge_key`.

Ordering, and the event model itself, live in `file_index.rules.objects`: the indexer only parses.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import (
    CREATE_PREFIXES,
    MAX_KEY_BYTES,
    MAX_OBJECT_SIZE,
    NULL_VERSION,
    REMOVE_PREFIXES,
    TAGGING_PREFIXES,
    InvalidSequencerError,
    ObjectEvent,
    order_key_for_sequencer,
)

TEST_EVENT = "s3:TestEvent"
EVENTBRIDGE_SOURCE = "aws.s3"
_DEFAULT_KEY_PATTERN = KeyPattern.parse(None)

# EventBridge's reasons for Object Created, as S3 notifications name the same event.
_CREATED_REASONS = {
    "PutObject": "Put",
    "POST Object": "Post",
    "CopyObject": "Copy",
    "CompleteMultipartUpload": "CompleteMultipartUpload",
}
_DELETION_TYPES = {"Delete Marker Created": "DeleteMarkerCreated", "Permanently Deleted": "Delete"}
_LIFECYCLE_REASON = "Lifecycle Expiration"
# moto 5.2.5's reasons; AWS's name the API call (see the module docstring).
_EMULATOR_REASONS = frozenset({"ObjectCreated", "ObjectRemoved"})
_OBJECT_DETAIL_TYPES = frozenset({"Object Created", "Object Deleted"})
# Tag changes, applied only where the deployment enriches tags (`file_index.store.enrich`).
_TAGGING_DETAIL_TYPES = {
    "Object Tags Added": "ObjectTagging:Put",
    "Object Tags Deleted": "ObjectTagging:Delete",
}


class MalformedMessageError(ValueError):
    """The message body is not an S3 notification this indexer can apply; the text says why."""


def parse_message(body: str, key_pattern: KeyPattern = _DEFAULT_KEY_PATTERN) -> list[ObjectEvent]:
    """The object events of one SQS message body; [] for a test event or events of other types.

    Raises `MalformedMessageError` if the body (or any of its records) cannot be applied: the whole
    message then fails, which is safe to retry because every write is conditional.
    """
    try:
        message = json.loads(body)
    except (TypeError, ValueError) as error:
        raise MalformedMessageError(f"body is not JSON: {error}") from None
    if not isinstance(message, dict):
        raise MalformedMessageError("body is not a JSON object")
    if message.get("Event") == TEST_EVENT:
        return []
    if "Records" not in message and "detail-type" in message:
        event = parse_eventbridge(message, key_pattern)
        return [] if event is None else [event]
    records = message.get("Records")
    if not isinstance(records, list) or not records:
        raise MalformedMessageError("body has no S3 Records, is not an s3:TestEvent nor an EventBridge event")
    events = []
    for position, record in enumerate(records):
        try:
            event = parse_record(record, key_pattern)
        except MalformedMessageError as error:
            raise MalformedMessageError(f"record {position}: {error}") from None
        if event is not None:
            events.append(event)
    return events


def parse_record(record: Any, key_pattern: KeyPattern = _DEFAULT_KEY_PATTERN) -> ObjectEvent | None:
    """One S3 record as an `ObjectEvent`; None for S3 events that do not change which objects exist."""
    if not isinstance(record, dict):
        raise MalformedMessageError("record is not a JSON object")
    if record.get("eventSource") != "aws:s3":
        raise MalformedMessageError(f"eventSource is {record.get('eventSource')!r}, not 'aws:s3'")
    event_name = _text(record, "eventName").removeprefix("s3:")
    if not event_name.startswith(CREATE_PREFIXES + REMOVE_PREFIXES + TAGGING_PREFIXES):
        # Restores, ACL and replication events leave the set of objects unchanged.
        return None
    s3 = record.get("s3")
    if (
        not isinstance(s3, dict)
        or not isinstance(s3.get("bucket"), dict)
        or not isinstance(s3.get("object"), dict)
    ):
        raise MalformedMessageError("record has no s3.bucket / s3.object")
    obj = s3["object"]
    return _object_event(
        event_name=event_name,
        bucket=_text(s3["bucket"], "name"),
        key=unquote_plus(_text(obj, "key")),  # unquote_plus replaces bytes that are not UTF-8
        event_time=_event_time(_text(record, "eventTime"), "eventTime"),
        sequencer=_optional_text(obj, "sequencer"),
        size=obj.get("size"),
        e_tag=_optional_text(obj, "eTag"),
        version_id=_optional_text(obj, "versionId"),
        key_pattern=key_pattern,
    )


def parse_eventbridge(
    message: dict[str, Any], key_pattern: KeyPattern = _DEFAULT_KEY_PATTERN
) -> ObjectEvent | None:
    """One EventBridge event of S3 as an `ObjectEvent`; None for detail types that change no object."""
    source = message.get("source")
    if source != EVENTBRIDGE_SOURCE:
        raise MalformedMessageError(f"EventBridge event of source {source!r:.60}, not {EVENTBRIDGE_SOURCE!r}")
    detail_type = _text(message, "detail-type")
    if detail_type not in _OBJECT_DETAIL_TYPES and detail_type not in _TAGGING_DETAIL_TYPES:
        return None
    detail = message.get("detail")
    if (
        not isinstance(detail, dict)
        or not isinstance(detail.get("bucket"), dict)
        or not isinstance(detail.get("object"), dict)
    ):
        raise MalformedMessageError("EventBridge event has no detail.bucket / detail.object")
    obj = detail["object"]
    reason = _optional_text(detail, "reason")
    emulated = reason in _EMULATOR_REASONS
    version_id = _optional_text(obj, "version-id")
    if emulated and version_id == NULL_VERSION:
        # moto names an object without versions "null"; an S3 notification leaves versionId out.
        version_id = None
    if detail_type in _TAGGING_DETAIL_TYPES:
        event_name = _TAGGING_DETAIL_TYPES[detail_type]
    elif detail_type == "Object Created":
        created = _CREATED_REASONS.get(reason or "", "Put")
        event_name = f"ObjectCreated:{created}"
    else:
        event_name = _deleted_event_name(detail, reason, emulated=emulated)
    return _object_event(
        event_name=event_name,
        bucket=_text(detail["bucket"], "name"),
        key=eventbridge_key(_text(obj, "key"), emulated=emulated),
        event_time=_event_time(_text(message, "time"), "time"),
        sequencer=None if emulated else _optional_text(obj, "sequencer"),
        size=obj.get("size"),
        e_tag=_optional_text(obj, "etag") or _optional_text(obj, "eTag"),
        version_id=version_id,
        key_pattern=key_pattern,
    )


def eventbridge_key(raw: str, *, emulated: bool = False) -> str:
    """The object key of an EventBridge event of S3, decoded: the one place that decides it.

    AWS's documentation of these events does not say whether `detail.object.key` is URL-encoded (its
    examples use keys with nothing to encode). Powertools' EventBridge S3 data class decodes it with
    `unquote_plus`, as S3 notifications need, and so does this, unverified against a real account.
    moto (`emulated`) sends the key as it is, so it is taken as it is.
    """
    return raw if emulated else unquote_plus(raw)


def _deleted_event_name(detail: dict[str, Any], reason: str | None, *, emulated: bool) -> str:
    prefix = "LifecycleExpiration:" if reason == _LIFECYCLE_REASON else "ObjectRemoved:"
    deletion_type = _optional_text(detail, "deletion-type")
    if deletion_type is None and emulated:
        # moto sends no event for a delete marker: its deletes remove the object.
        return f"{prefix}Delete"
    if deletion_type not in _DELETION_TYPES:
        raise MalformedMessageError(
            f"Object Deleted has deletion-type {deletion_type!r:.60}, "
            f"not one of {', '.join(map(repr, _DELETION_TYPES))}"
        )
    return prefix + _DELETION_TYPES[deletion_type]


def _object_event(
    *,
    event_name: str,
    bucket: str,
    key: str,
    event_time: datetime,
    sequencer: str | None,
    size: Any,
    e_tag: str | None,
    version_id: str | None,
    key_pattern: KeyPattern,
) -> ObjectEvent:
    """The checks both message shapes share, and the event."""
    if not key:
        raise MalformedMessageError("object key is empty after decoding")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise MalformedMessageError(f"object key is longer than S3's {MAX_KEY_BYTES} bytes")
    if sequencer is not None:
        try:
            order_key_for_sequencer(sequencer)
        except InvalidSequencerError as error:
            raise MalformedMessageError(str(error)) from None
    is_create = event_name.startswith(CREATE_PREFIXES)
    if is_create and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < MAX_OBJECT_SIZE):
        raise MalformedMessageError(f"create has no valid object size (0 <= size < 10**18): {size!r:.40}")
    parts = key_pattern.split(key)
    return ObjectEvent(
        event_name=event_name,
        bucket=bucket,
        key=key,
        event_time=event_time,
        sequencer=sequencer,
        size=size if is_create else None,
        e_tag=e_tag,
        version_id=version_id,
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


def _event_time(raw: str, name: str) -> datetime:
    """The event time in UTC; naive times (S3 always sends "Z", other stores may not) are taken as UTC."""
    try:
        moment = datetime.fromisoformat(raw)
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        # Converting can leave datetime's range (year 1 at +01:00): the same reason to reject as a bad text.
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise MalformedMessageError(f"{name} {raw!r:.60} is not an ISO-8601 timestamp in range") from None
