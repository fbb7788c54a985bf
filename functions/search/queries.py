"""Turn the list parameters of `GET /files` into one index query, or say clearly why not.

Times: `uploadDate` is stored as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds), so bounds are rendered
the same way and compared as strings by DynamoDB. `date=D` is the UTC day D (`begins_with "D T"`).
`from`/`to` accept a day (`from` = its first millisecond, `to` = its last: both days included) or an
ISO-8601 timestamp (without an offset it is taken as UTC); both bounds are inclusive, at millisecond
precision (a `from` between two milliseconds starts at the next one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from file_index.objects import MAX_KEY_BYTES, iso_utc_millis
from file_index.reader import BucketQuery, FileQuery, UserQuery
from search.errors import BadRequest

# S3 keys are at most MAX_KEY_BYTES of UTF-8; user names come from keys, bucket names are at most 63.
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T[0-9:.,+\-Z ]+", re.IGNORECASE)


@dataclass(frozen=True)
class ListParameters:
    """The query parameters of `GET /files`, as validated for type and range by the API layer."""

    user: str | None = None
    bucket: str | None = None
    date: str | None = None
    from_: str | None = None
    to: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    order: str | None = None


def utf8_length(name: str, value: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest(f"{name} is not valid text") from None


def check_key_value(name: str, value: str) -> str:
    """`value` if it is a usable key attribute value (non-empty, at most 1024 bytes of UTF-8)."""
    if not value:
        raise BadRequest(f"{name} must not be empty")
    if utf8_length(name, value) > MAX_KEY_BYTES:
        raise BadRequest(f"{name} is longer than {MAX_KEY_BYTES} bytes")
    return value


def parse_day(name: str, value: str) -> date:
    if not _DAY.fullmatch(value):
        raise BadRequest(f"{name} must be a date YYYY-MM-DD, not {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"{name} is not a valid date: {value!r}") from None


def parse_bound(name: str, value: str, *, upper: bool) -> str:
    """A `from` (upper=False) or `to` (upper=True) bound in the stored timestamp form, inclusive."""
    if _DAY.fullmatch(value):
        day = parse_day(name, value)
        return f"{day.isoformat()}T23:59:59.999Z" if upper else f"{day.isoformat()}T00:00:00.000Z"
    if not _TIMESTAMP.fullmatch(value):
        raise BadRequest(f"{name} must be a date YYYY-MM-DD or an ISO-8601 timestamp, not {value!r}")
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment = moment.astimezone(UTC)
        if not upper and moment.microsecond % 1000:
            # A lower bound between two milliseconds starts at the next stored millisecond.
            moment += timedelta(microseconds=1000 - moment.microsecond % 1000)
    except (ValueError, OverflowError):
        raise BadRequest(f"{name} is not a valid timestamp: {value!r}") from None
    return iso_utc_millis(moment)


def _user_query(params: ListParameters, user: str, ascending: bool) -> UserQuery:
    if params.min_size is not None or params.max_size is not None:
        raise BadRequest("minSize and maxSize apply to bucket searches, not user searches")
    if params.date is not None:
        if params.from_ is not None or params.to is not None:
            raise BadRequest("date cannot be combined with from or to")
        day = parse_day("date", params.date)
        return UserQuery(user=user, day_prefix=f"{day.isoformat()}T", ascending=ascending)
    start = parse_bound("from", params.from_, upper=False) if params.from_ is not None else None
    end = parse_bound("to", params.to, upper=True) if params.to is not None else None
    if start is not None and end is not None and start > end:
        raise BadRequest("from must not be after to")
    return UserQuery(user=user, start=start, end=end, ascending=ascending)


def _bucket_query(params: ListParameters, bucket: str, ascending: bool) -> BucketQuery:
    if params.date is not None or params.from_ is not None or params.to is not None:
        raise BadRequest("date, from and to apply to user searches, not bucket searches")
    if params.min_size is not None and params.max_size is not None and params.min_size > params.max_size:
        raise BadRequest("minSize must not be greater than maxSize")
    return BucketQuery(bucket=bucket, min_size=params.min_size, max_size=params.max_size, ascending=ascending)


def build_query(params: ListParameters) -> FileQuery:
    """The index query for `params`; BadRequest says what is wrong with them."""
    if (params.user is None) == (params.bucket is None):
        raise BadRequest("give exactly one of user or bucket")
    if params.order not in (None, "asc", "desc"):
        raise BadRequest("order must be asc or desc")
    if params.user is not None:
        user = check_key_value("user", params.user)
        return _user_query(params, user, ascending=params.order != "desc")
    assert params.bucket is not None
    bucket = check_key_value("bucket", params.bucket)
    return _bucket_query(params, bucket, ascending=params.order == "asc")
