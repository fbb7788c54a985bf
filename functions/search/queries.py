"""The list parameters of `GET /files` (`ListQuery`, one model), and how they become one list query, or
why they cannot.

A user or a bucket, each with any of `minSize`/`maxSize` and `from`/`to` (or `date`): a box of size and
upload time. Which index answers it is the reader's plan (`file_index.read.reader.FileReader.plan`).

Times: `uploadDate` is stored as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds), so bounds are rendered
the same way and compared as strings by DynamoDB. `date=D` is the UTC day D (`begins_with "DT"` on a
user's list, its first to last millisecond on a bucket's). `from`/`to` accept a day (`from` = its first
millisecond, `to` = its last: both days included) or an ISO-8601 timestamp (without an offset it is
taken as UTC); both bounds are inclusive, at millisecond precision (a `from` between two milliseconds
starts at the next one).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from file_index.read.file_queries import BucketQuery, FileQuery, UserQuery
from file_index.read.name_query import ORDER_KEY, ORDER_SIZE, ORDER_UPLOAD_DATE, NameQuery
from file_index.rules.name_items import MAX_EXTENSION, normalize_extension
from file_index.rules.name_terms import query_words as read_query_words
from file_index.rules.objects import MAX_KEY_BYTES, iso_utc_millis
from file_index.rules.shards import SHARD_SEPARATOR
from file_index.rules.zorder import MAX_SIZE
from search.cursor import MAX_CURSOR_LENGTH
from search.errors import BadRequest

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_RANGE = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z (UTC)"
_CONTENT_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})"
)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T[0-9:.,+\-Z ]+", re.IGNORECASE)
# What an S3 bucket name may hold: letters, digits, dots, hyphens, and the underscores of buckets made
# in us-east-1 before 2018, at most 255 characters (those older rules; today's are 3 to 63 characters).
_BUCKET_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")

# A prefix list reads the name index's key items, whose sort key is the object key, with a key condition
# from the prefix to the prefix followed by one 4-byte character (U+10FFFF), and DynamoDB takes at most
# MAX_KEY_BYTES (1,024) bytes in a sort key's value: so a prefix may take 1,020 bytes of UTF-8.
MAX_PREFIX_BYTES = MAX_KEY_BYTES - 4
PREFIX_LIMIT = f"at most {MAX_PREFIX_BYTES} are allowed (the name index's key limit, less 4)"
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class ListQuery(BaseModel):
    """The list parameters of `GET /files` and `GET /me/files` (on the wire, the aliases), declared once:
    the routes take it as their query (`Annotated[ListQuery, Query()]`), which Powertools validates, and
    `search.openapi` documents each field as a query parameter with its JSON schema. A parameter given
    twice reaches the model as its first value: `search.routes.lists.check_list_query` refuses it.
    """

    # On the wire each field is named in camelCase, `from_` as `from` (`to_camel`, its aliases).
    model_config = ConfigDict(alias_generator=lambda name: to_camel(name.removesuffix("_")))

    # S3 keys are at most MAX_KEY_BYTES of UTF-8; user names come from keys, bucket names are at most 63.
    user: str | None = Field(
        default=None, description="Uploader whose files to list", max_length=MAX_KEY_BYTES
    )
    bucket: str | None = Field(
        default=None, description="Bucket whose files to list", max_length=MAX_KEY_BYTES
    )
    date: str | None = Field(default=None, description="One UTC day, YYYY-MM-DD; not with from or to")
    from_: str | None = Field(
        default=None, description="Earliest upload time, inclusive (a day or a timestamp)"
    )
    to: str | None = Field(default=None, description="Latest upload time, inclusive (a day: up to its end)")
    # Sizes are int64 to clients (MAX_SIZE); a larger bound would not survive DynamoDB's 38-digit numbers.
    min_size: int | None = Field(
        default=None, ge=0, le=MAX_SIZE, description="Smallest size in bytes, inclusive"
    )
    max_size: int | None = Field(
        default=None, ge=0, le=MAX_SIZE, description="Largest size in bytes, inclusive"
    )
    order: Literal["asc", "desc"] | None = Field(
        default=None, description="Direction of the order the answer's `orderedBy` names"
    )
    sort: Literal["uploadDate", "size"] | None = Field(
        default=None,
        description=(
            "The order of the list: `uploadDate` (a bucket's newest first unless `order=asc`; needs the "
            "bucket's time index, `bucketTimeIndex`) or `size` (largest first unless `order=asc`); "
            "without it the plan's (see the table above)"
        ),
    )
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=(
            "Most items per page; a page may hold fewer and still have a nextCursor (its keys are very "
            "long and it stays under Lambda's 6 MB response limit, or a filtered page reached its "
            "read bound)"
        ),
    )
    q: str | None = Field(
        default=None,
        description=(
            "Words of the file's name: each must start a word of the name (case and accents ignored); "
            "newest first unless `order=asc`"
        ),
    )
    prefix: str | None = Field(
        default=None,
        description=(
            f"Only keys that start with this (a folder, e.g. `USER001/reports/`); at most {MAX_PREFIX_BYTES} "
            "bytes of UTF-8, the longest the name index's key condition takes (its 1,024-byte key less 4)"
        ),
    )
    delimiter: str | None = Field(
        default=None, description="`/`: answer the sub-folders of `prefix` in `commonPrefixes`"
    )
    ext: str | None = Field(
        default=None, description="The name's extension, case-insensitive (`pdf`, `.PDF`, `tar.gz`)"
    )
    content_type: str | None = Field(
        default=None,
        description=(
            "The object's content type, exact (`image/png`) or any of a major type (`image/*`); with "
            "`enrich` naming contentType. Also `meta.NAME=VALUE` (user metadata) and `tag.NAME=VALUE` "
            "(tags), with `enrich` naming metadata or tags: every one given must match"
        ),
    )
    cursor: str | None = Field(
        default=None, max_length=MAX_CURSOR_LENGTH, description="nextCursor of the previous page"
    )


class ListParameters(ListQuery):
    """A ListQuery as `build_query` reads it: made by field name too (`from_`, `min_size`), with the
    `meta.NAME=VALUE` and `tag.NAME=VALUE` filters, which no model can declare (any NAME).

    The list routes make it with `model_construct` from a ListQuery Powertools validated: its validator is
    built only if one is validated (`defer_build`), not with the handler's import.
    """

    model_config = ConfigDict(validate_by_name=True, defer_build=True)

    meta: tuple[tuple[str, str], ...] = ()
    tags: tuple[tuple[str, str], ...] = ()

    @property
    def narrows_by_name(self) -> bool:
        """The list is narrowed by name, folder, extension or enrichment: the name reader answers it."""
        named = (self.q, self.prefix, self.delimiter, self.ext, self.content_type)
        return any(value is not None for value in named) or bool(self.meta or self.tags)


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


def bound_instant(name: str, value: str, *, upper: bool) -> datetime:
    """The instant a `from` (upper=False) or `to` (upper=True) bound names, in UTC: a day's first or last
    microsecond, or the timestamp itself (without an offset, UTC)."""
    if _DAY.fullmatch(value):
        day = parse_day(name, value)
        return datetime.combine(day, datetime.max.time() if upper else datetime.min.time(), tzinfo=UTC)
    if not _TIMESTAMP.fullmatch(value):
        raise BadRequest(f"{name} must be a date YYYY-MM-DD or an ISO-8601 timestamp, not {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"{name} is not a valid timestamp: {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # A valid timestamp whose UTC time falls outside years 1-9999 (0001-01-01T00:00:00+01:00).
        raise BadRequest(f"{name} {value!r} is outside the times the index holds: {_TIME_RANGE}") from None


def stored_bound(name: str, value: str, moment: datetime, *, upper: bool) -> str:
    """A bound's instant (`value` as given) in the stored timestamp form, inclusive: a lower bound between
    two milliseconds starts at the next stored millisecond, an upper one ends at the one before."""
    try:
        if not upper and moment.microsecond % 1000:
            moment += timedelta(microseconds=1000 - moment.microsecond % 1000)
    except OverflowError:
        raise BadRequest(f"{name} {value!r} is outside the times the index holds: {_TIME_RANGE}") from None
    return iso_utc_millis(moment)


def parse_bound(name: str, value: str, *, upper: bool) -> str:
    """A `from` (upper=False) or `to` (upper=True) bound in the stored timestamp form, inclusive."""
    return stored_bound(name, value, bound_instant(name, value, upper=upper), upper=upper)


def _time_bounds(params: ListParameters) -> tuple[str | None, str | None]:
    """`from`/`to` as stored timestamps (inclusive), or a `date`'s first and last millisecond.

    Bounds are compared as given: two inside one millisecond (`from` rounded up past `to`) are a valid,
    empty box, which the reader answers without a read.
    """
    if params.date is not None:
        if params.from_ is not None or params.to is not None:
            raise BadRequest("date cannot be combined with from or to")
        day = parse_day("date", params.date).isoformat()
        return f"{day}T00:00:00.000Z", f"{day}T23:59:59.999Z"
    low = None if params.from_ is None else bound_instant("from", params.from_, upper=False)
    high = None if params.to is None else bound_instant("to", params.to, upper=True)
    if low is not None and high is not None and low > high:
        raise BadRequest("from must not be after to")
    return (
        None if params.from_ is None or low is None else stored_bound("from", params.from_, low, upper=False),
        None if params.to is None or high is None else stored_bound("to", params.to, high, upper=True),
    )


def _check_sizes(params: ListParameters) -> None:
    if params.min_size is not None and params.max_size is not None and params.min_size > params.max_size:
        raise BadRequest("minSize must not be greater than maxSize")


def _user_query(params: ListParameters, user: str, ascending: bool) -> UserQuery:
    start, end = _time_bounds(params)
    _check_sizes(params)
    # One day is a prefix of its timestamps: `begins_with` on the user index's sort key.
    day_prefix = None if params.date is None else f"{parse_day('date', params.date).isoformat()}T"
    return UserQuery(
        user=user,
        start=None if day_prefix else start,
        end=None if day_prefix else end,
        day_prefix=day_prefix,
        min_size=params.min_size,
        max_size=params.max_size,
        ascending=ascending,
        order_by=params.sort,
    )


def _bucket_query(params: ListParameters, bucket: str, ascending: bool) -> BucketQuery:
    start, end = _time_bounds(params)
    _check_sizes(params)
    return BucketQuery(
        bucket=bucket,
        min_size=params.min_size,
        max_size=params.max_size,
        start=start,
        end=end,
        ascending=ascending,
        order_by=params.sort,
    )


# `sort`: the orders a list may be asked in.
SORTS = ("uploadDate", "size")

# `q`: at most this many characters and words (each word is checked against every candidate's name).
MAX_Q_LENGTH = 256
MAX_Q_WORDS = 16


def _name_query(params: ListParameters, listing: UserQuery | BucketQuery) -> NameQuery:
    """`listing` narrowed by `q`, `prefix`, `delimiter` and `ext` (README: "Finding files by name")."""
    query_words: tuple[str, ...] = ()
    if params.q is not None:
        if len(params.q) > MAX_Q_LENGTH:
            raise BadRequest(f"q is longer than {MAX_Q_LENGTH} characters")
        # The words `q` is matched by (`name_terms.query_words`): cut at white space only.
        query_words = tuple(read_query_words(params.q))
        if not query_words:
            raise BadRequest(f"q has no word in it (a word is letters or digits): {params.q!r}")
        if len(query_words) > MAX_Q_WORDS:
            raise BadRequest(f"q has more than {MAX_Q_WORDS} words")
    if params.delimiter is not None and params.delimiter != "/":
        raise BadRequest(f"delimiter must be '/', not {params.delimiter!r}")
    prefix = params.prefix
    if prefix is not None and (length := utf8_length("prefix", prefix)) > MAX_PREFIX_BYTES:
        raise BadRequest(f"prefix is {length} bytes of UTF-8; {PREFIX_LIMIT}")
    ext = None
    if params.ext is not None:
        ext = normalize_extension(params.ext)
        if not read_query_words(ext) or "/" in ext or len(ext) > MAX_EXTENSION:
            raise BadRequest(f"ext must be a file extension such as pdf or tar.gz, not {params.ext!r}")
    if prefix is not None or params.delimiter is not None:
        order_by, ascending = ORDER_KEY, params.order != "desc"
    elif query_words or (ext is not None and isinstance(listing, BucketQuery)):
        # Newest first: the term items' order (a bucket's `ext` list reads its extension's term).
        order_by, ascending = ORDER_UPLOAD_DATE, params.order == "asc"
    else:
        # The list's own order: a user's by upload time (ascending), a bucket's by size (descending).
        order_by = ORDER_UPLOAD_DATE if isinstance(listing, UserQuery) else ORDER_SIZE
        ascending = params.order == "asc" if params.order is not None else isinstance(listing, UserQuery)
    if params.content_type is not None and not _CONTENT_TYPE.fullmatch(params.content_type):
        raise BadRequest(
            f"contentType must be a media type such as image/png, or image/* for any image, not "
            f"{params.content_type!r}"
        )
    return NameQuery(
        listing=listing,
        words=query_words,
        q=params.q,
        prefix=prefix,
        delimiter=params.delimiter,
        ext=ext,
        order_by=order_by,
        ascending=ascending,
        content_type=params.content_type,
        meta=tuple(sorted((name.lower(), value) for name, value in params.meta)),
        tags=tuple(sorted(params.tags)),
    )


def build_query(params: ListParameters) -> FileQuery | NameQuery:
    """The index query for `params`; BadRequest says what is wrong with them."""
    listing = _listing_query(params)
    return _name_query(params, listing) if params.narrows_by_name else listing


def _listing_query(params: ListParameters) -> FileQuery:
    if (params.user is None) == (params.bucket is None):
        raise BadRequest("give exactly one of user or bucket")
    if params.order not in (None, "asc", "desc"):
        raise BadRequest("order must be asc or desc")
    if params.sort not in (None, *SORTS):
        raise BadRequest(f"sort must be {' or '.join(SORTS)}, not {params.sort!r}")
    if params.sort is not None and params.narrows_by_name:
        raise BadRequest(
            "sort applies to a list of a user or a bucket; a list by name (q, prefix, ext...) "
            "has its own order"
        )
    if params.user is not None:
        user = check_key_value("user", params.user)
        # By upload time oldest first, by size largest first (as a bucket's), unless `order` says.
        by_size = params.sort == "size"
        return _user_query(
            params, user, ascending=params.order == "asc" if by_size else params.order != "desc"
        )
    assert params.bucket is not None
    bucket = check_key_value("bucket", params.bucket)
    if SHARD_SEPARATOR in bucket:
        # Shard values are `bucket#k`: a name with `#` is no S3 bucket, and would read another's shard.
        raise BadRequest(f"bucket is not an S3 bucket name: {bucket!r} contains {SHARD_SEPARATOR!r}")
    if not _BUCKET_NAME.fullmatch(bucket):
        # Bytes that are not UTF-8 (`%FF`) arrive as U+FFFD: no bucket has such a name, or a space.
        raise BadRequest(
            f"bucket is not an S3 bucket name: {bucket!r} (letters, digits, '.', '-' and '_' only)"
        )
    return _bucket_query(params, bucket, ascending=params.order == "asc")
