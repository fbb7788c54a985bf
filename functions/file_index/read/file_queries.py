"""What a list asks and what it answers: a user's or a bucket's query (`UserQuery`, `BucketQuery`), the plans
that may read it (`Plan`, the Z-order walk `ZWalk`), a page of the answer (`Page`), its cursor (`ListCursor`)
and the public item (`public_item`). `file_index.read.reader` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from file_index.rules import schema, shard_merge, zorder
from file_index.rules.placement import ShardPlacement
from file_index.rules.shard_merge import (
    MergeCursor,
    Position,
)

# The attributes a search answers with (the README's attribute table); bookkeeping attributes stay private.
PUBLIC_ATTRIBUTES = (schema.OBJECT_KEY, *schema.OBJECT_ATTRIBUTES, *schema.ENRICHMENT_ATTRIBUTES)

# The Z-order walk asks at least this many items of a Query: about one read unit (4 KB) of entries, the
# least a Query is billed, so a short read costs no more than a jump and may save one.
Z_WALK_MIN_LIMIT = 10


@dataclass(frozen=True)
class ZWalk:
    """How the Z-order plan walks each shard.

    The walk reads the box's `max_ranges` z-ranges in order. A Query whose read stops on an entry outside
    the box goes on from the next address inside it (BIGMIN, or LITMAX reading downwards): whatever lies
    between is skipped, read by no Query. `min_limit` is the least a Query asks for (the page's need
    otherwise). `ZWalk()` is the deployed walk; other values make it jump more often (tests).
    """

    max_ranges: int = zorder.WALK_MAX_RANGES
    min_limit: int = Z_WALK_MIN_LIMIT


class Plan(StrEnum):
    """How a list is read, named by the attribute its answer is ordered by (the API's `orderedBy`)."""

    SIZE = "size"
    UPLOAD_DATE = "uploadDate"
    Z_ORDER = "zAddress"


@dataclass(frozen=True)
class UserQuery:
    """A user's files, `start`..`end` inclusive (ISO-8601 UTC strings), `min_size`..`max_size` bytes.

    `day_prefix` ("YYYY-MM-DD") selects one UTC day with `begins_with`; it excludes `start`/`end`.
    """

    user: str
    start: str | None = None
    end: str | None = None
    day_prefix: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    ascending: bool = True
    # The order asked for (the API's `sort`): "size" reads the user's size index; None: by upload time.
    order_by: str | None = None

    def __post_init__(self) -> None:
        _drop_zero_size(self)

    def key_bounds(self) -> tuple[str | None, str | None]:
        """The range of `uploadDate` (the user index's sort key) to read, inclusive, None for an open side.
        A day is the range of its timestamps: every `uploadDate` of it starts with the day and a "T"."""
        if self.day_prefix is not None:
            return self.day_prefix, self.day_prefix + "~"
        return self.start, self.end

    def has_time(self, date: str) -> bool:
        if self.day_prefix is not None:
            return date.startswith(self.day_prefix)
        return _between(date, self.start, self.end)


@dataclass(frozen=True)
class BucketQuery:
    """A bucket's files, `min_size`..`max_size` bytes, uploaded `start`..`end` (inclusive, ISO-8601 UTC)."""

    bucket: str
    min_size: int | None = None
    max_size: int | None = None
    start: str | None = None
    end: str | None = None
    ascending: bool = False
    # The order asked for (the API's `sort`): "size" or "uploadDate"; None leaves it to the plan.
    order_by: str | None = None

    def __post_init__(self) -> None:
        _drop_zero_size(self)

    @property
    def has_time_bounds(self) -> bool:
        return self.start is not None or self.end is not None

    @property
    def has_size_bounds(self) -> bool:
        return self.min_size is not None or self.max_size is not None

    def has_time(self, date: str) -> bool:
        return _between(date, self.start, self.end)

    def box(self) -> zorder.Box | None:
        """The query as a Z-order box, or None if the Z-order index cannot represent it (before 1970)."""
        try:
            from_ms = None if self.start is None else zorder.epoch_millis(self.start)
            to_ms = None if self.end is None else zorder.epoch_millis(self.end)
            # Bounds beyond what an address can hold (before 1970, after 2109) are open sides: every
            # address is inside them, so the box keeps the Z-order index (`from=1900-01-01`).
            return zorder.Box(
                from_ms=None if from_ms is not None and from_ms < 0 else from_ms,
                to_ms=None if to_ms is not None and to_ms > zorder.MAX_TIME_MS else to_ms,
                min_size=self.min_size,
                max_size=self.max_size,
            )
        except zorder.ZOrderError:
            return None


FileQuery = UserQuery | BucketQuery


def _drop_zero_size(query: FileQuery) -> None:
    """A smallest size of 0 bounds nothing (sizes are never negative): it is no bound, so it does not
    keep a list off the plans that read only what they return."""
    if query.min_size == 0:
        object.__setattr__(query, "min_size", None)


def holds_no_time(query: FileQuery) -> bool:
    """True when the time bounds hold no stored millisecond (`from` rounded up past `to`)."""
    return query.start is not None and query.end is not None and query.start > query.end


def has_size(query: FileQuery, size: int) -> bool:
    return _between(size, query.min_size, query.max_size)


def _between[V: (int, str)](value: V, low: V | None, high: V | None) -> bool:
    """`low` <= `value` <= `high`, a bound of None being open."""
    return (low is None or value >= low) and (high is None or value <= high)


class UnavailableOrder(ValueError):
    """The list was asked in an order no index of this deployment holds (the message says which)."""


class InvalidStartKey(ValueError):
    """A cursor position that is malformed, outside its query, or of a plan or placement not read now."""


@dataclass(frozen=True)
class ListCursor:
    """Where the next page of a list starts: the plan it was read with and each shard's place."""

    plan: Plan
    merge: MergeCursor

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.value, "merge": self.merge.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> ListCursor:
        """The cursor of `to_json`'s output; InvalidStartKey if it is not one."""
        if not isinstance(data, Mapping) or set(data) != {"plan", "merge"}:
            raise InvalidStartKey("not a list cursor")
        try:
            return cls(Plan(data["plan"]), MergeCursor.from_json(data["merge"]))
        except (ValueError, TypeError) as error:  # InvalidMergeCursorError is a ValueError
            raise InvalidStartKey(f"not a list cursor ({error})") from None


@dataclass(frozen=True)
class Page:
    """One page of a list: the items, the cursor of the next page (None: no more) and the read cost.

    `scanned_count` is what DynamoDB read (its ScannedCount, filtered items included), `request_count`
    the Queries made, `round_trips` how many of them ran one after the other (a round's shards run in
    parallel when the reader has an executor). `stopped_early`: the page reached its read bound before it
    was full.
    """

    items: list[dict[str, Any]]
    next_cursor: ListCursor | None
    scanned_count: int
    request_count: int
    ordered_by: Plan
    stopped_early: bool = False
    round_trips: int = 0  # Queries in sequence: rounds of the shards' Queries, each round in parallel
    _positions: tuple[Position, ...] = field(default=(), repr=False)
    _sources: tuple[int, ...] = field(default=(), repr=False)
    _start: MergeCursor | None = field(default=None, repr=False)

    def cursor_after(self, count: int) -> ListCursor:
        """The cursor just after the first `count` (at least one) items, for a page cut shorter: as bounded
        as the page's own (`shard_merge.cursor_after`)."""
        if not 1 <= count <= len(self.items) or self._start is None:
            raise ValueError(f"a page of {len(self.items)} items has no cursor after {count}")
        end = None if self.next_cursor is None else self.next_cursor.merge
        merge = shard_merge.cursor_after(self._start, self._sources, self._positions, count, end)
        return ListCursor(self.ordered_by, merge)


def public_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata fields of an item, numbers as int, absent fields omitted; the bucket and the user
    as they are, never a shard's partition value."""
    result: dict[str, Any] = {}
    for name in PUBLIC_ATTRIBUTES:
        value = item.get(name)
        if value is None:
            continue
        result[name] = int(value) if isinstance(value, Decimal) else value
    if isinstance(result.get(schema.BUCKET_NAME), str):
        result[schema.BUCKET_NAME] = ShardPlacement.public_bucket(result[schema.BUCKET_NAME])
    if isinstance(result.get(schema.UPLOAD_USER), str):
        user_shard = item.get(schema.USER_SHARD)
        result[schema.UPLOAD_USER] = ShardPlacement.public_user(
            result[schema.UPLOAD_USER], int(user_shard) if isinstance(user_shard, Decimal | int) else None
        )
    return result
