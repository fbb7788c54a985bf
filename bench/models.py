"""The bench's own cost models: what the production code never computes, only the bench and its tests.

- `item_bytes`: the size DynamoDB bills an item at (the write models and the in-memory table);
- `range_pages`, `range_read_units`: reading `n` consecutive items of one key range in one go, built on
  the planner's `file_index.rules.cost.query_read_units`; a plan spread over `s` shards pays that per
  shard, and its round trips in sequence are the shards' pages (shards run in parallel);
- `read_cost`: what a box query over some Z-order ranges reads (`file_index.rules.zorder`);
- `split_sharded_key`: the (value, shard) of a sharded partition key value (`file_index.rules.shards`).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from file_index.rules.cost import QUERY_MIN_READ_UNITS, QUERY_RESPONSE_BYTES, query_read_units
from file_index.rules.shards import SHARD_SEPARATOR, UnshardableValueError
from file_index.rules.zorder import Box, ZRange, encode


def _value_bytes(value: Any) -> int:
    if isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, int | Decimal):
        digits = len(str(abs(value)).strip("0").replace(".", "")) or 1
        return math.ceil(digits / 2) + 1
    if isinstance(value, set | frozenset | list | tuple):
        return sum(_value_bytes(member) for member in value)
    if isinstance(value, Mapping):
        return sum(len(str(name).encode("utf-8")) + _value_bytes(inner) for name, inner in value.items())
    if value is None:
        return 1
    raise TypeError(f"no DynamoDB size rule for {type(value).__name__}")


def item_bytes(item: Mapping[str, Any]) -> int:
    """The size DynamoDB bills an item at: per attribute, the UTF-8 length of its name plus its value
    (strings by UTF-8 length, numbers about one byte per two significant digits plus one)."""
    return sum(len(name.encode("utf-8")) + _value_bytes(value) for name, value in item.items())


def range_pages(items: float, entry_bytes: float) -> int:
    """Queries to read `items` consecutive items of one key range: at least one, one per 1 MB."""
    return max(1, math.ceil(items * entry_bytes / QUERY_RESPONSE_BYTES))


def range_read_units(items: float, entry_bytes: float) -> float:
    """Read units of reading `items` consecutive items of one key range, in as few Queries as DynamoDB
    allows (every Query is billed, an empty one too)."""
    pages = range_pages(items, entry_bytes)
    return max(pages * QUERY_MIN_READ_UNITS, query_read_units(items * entry_bytes))


@dataclass(frozen=True)
class ReadCost:
    """What a box query over some ranges reads: entries read, entries in the box, ranges (queries)."""

    read: int
    matched: int
    ranges: int

    @property
    def amplification(self) -> float:
        """Entries read per entry returned (1.0 is exact; an empty answer that read nothing is 1.0)."""
        if self.matched == 0:
            return 1.0 if self.read == 0 else float("inf")
        return self.read / self.matched


def read_cost(ranges: Sequence[ZRange], entries: Iterable[tuple[int, int]], box: Box) -> ReadCost:
    """The read cost of answering `box` from `ranges`, over entries given as (upload ms, size)."""
    entry_list = list(entries)
    addresses = sorted(encode(upload_ms, size) for upload_ms, size in entry_list)
    read = sum(bisect_right(addresses, hi) - bisect_left(addresses, lo) for lo, hi in ranges)
    matched = sum(1 for upload_ms, size in entry_list if box.contains(upload_ms, size))
    return ReadCost(read=read, matched=matched, ranges=len(ranges))


def split_sharded_key(key: str) -> tuple[str, int]:
    """(value, shard) of a partition key value made by `sharded_key`."""
    value, separator, shard = key.rpartition(SHARD_SEPARATOR)
    if not separator:
        return key, 0
    if not shard.isdigit() or shard != str(int(shard)) or SHARD_SEPARATOR in value or not value:
        raise UnshardableValueError(f"{key!r} is not a sharded key value")
    return value, int(shard)
