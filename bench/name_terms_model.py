"""Measure 16's model of the terms plan: what a name-search page reads when it reads one term's items in
upload-time order (the term items of `file_index.rules.name_items`: `{partition}|:{term}` /
`{uploadDate} {digest}`).

A page is read by the reader's own code (`file_index.read.term_reader`: its `TermShard` fetchers, their Limits
and checks, its merge with its round bound) over `TermTable`, a stand-in for the one call it makes, a
Query of one partition's term items inside a `nameSort` range; then one entry per candidate (the page's
BatchGetItem, one round trip). The model counts what the Queries read (resumed items included), the
entries, the round trips and the items the page holds.

A partition's items are a `Stream`: the real items of materialised files (`ListStream`, exact), or,
for a bucket too large to materialise, `SampledStream`: as many items as the term has in a sample, scaled
to the bucket's size, split over the partitions by binomial draws, their upload times drawn as the order
statistics of uniform times over the data's year (made lazily, newest or oldest first: a page makes only
what it reads), each item's name and size drawn from the sample's items of the term.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from file_index.read import term_reader
from file_index.read.file_queries import UserQuery
from file_index.rules import schema
from file_index.rules.name_items import term_scope, time_term
from file_index.rules.shard_merge import MergeCursor

# Entries one BatchGetItem reads at most (a page of up to 100 candidates is one request).
MAX_BATCH_GET = 100


@dataclass(frozen=True)
class TermItem:
    """One term item as a page sees it: its sort value (`nameSort`) and what the filter reads."""

    sort_value: str
    key: str
    name: str
    size: int


class ListStream:
    """A partition's items of one term inside the time bounds, in read order (exact)."""

    def __init__(self, items: Sequence[TermItem], *, beyond: bool = False) -> None:
        self._items = list(items)
        self._index = {item.sort_value: number for number, item in enumerate(self._items)}
        self.beyond = beyond  # the partition holds items of the term past the far time bound

    def get(self, number: int) -> TermItem | None:
        return self._items[number] if number < len(self._items) else None

    def index_at(self, value: str) -> int:
        """Where a read from `value` starts: at its item, or at the start for a bound of the list's own."""
        return self._index.get(value, 0)


class SampledStream:
    """`count` items with upload times uniform over `low_ms`..`high_ms`, in read order, made as read: the
    order statistics of uniform draws (the largest of n is U^(1/n), each next one that times U^(1/k)),
    each item's name and size drawn from `pool`."""

    def __init__(
        self,
        count: int,
        low_ms: int,
        high_ms: int,
        pool: Sequence[tuple[str, int]],
        *,
        ascending: bool,
        rng: random.Random,
        label: str,
    ) -> None:
        self._left = count
        self._low, self._span = low_ms, high_ms - low_ms
        self._pool = pool
        self._ascending = ascending
        self._rng = rng
        self._label = label
        self._at = 1.0  # the last fraction made (of the span, from the far end of the read)
        self._items: list[TermItem] = []
        self._index: dict[str, int] = {}
        self.beyond = False

    def _make(self) -> TermItem:
        self._at *= (1.0 - self._rng.random()) ** (1.0 / self._left)
        self._left -= 1
        fraction = 1.0 - self._at if self._ascending else self._at
        moment = datetime.fromtimestamp((self._low + fraction * self._span) / 1000, UTC)
        upload_date = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        name, size = self._rng.choice(self._pool)
        key = f"{self._label}/{len(self._items)}/{name}"
        return TermItem(time_term(upload_date, key), key, name, size)

    def get(self, number: int) -> TermItem | None:
        while len(self._items) <= number and self._left > 0:
            item = self._make()
            self._index[item.sort_value] = len(self._items)
            self._items.append(item)
        return self._items[number] if number < len(self._items) else None

    def index_at(self, value: str) -> int:
        return self._index.get(value, 0)


Stream = ListStream | SampledStream


class TermTable:
    """The name table's Query as `term_reader.TermShard` makes it, answered from `streams` (a stream per
    `nameScope`/`nameUser` value, holding the items inside the list's time bounds in its read order).

    A Query reads from where the key condition's near end puts it (a resumed position's item itself
    included), at most `Limit` items, and stops with a `LastEvaluatedKey` on its Limit: always, as
    DynamoDB does; `moto=True`: only when the partition holds a further item, in or out of the key
    condition (moto's rule, for the cross-check)."""

    def __init__(self, streams: Mapping[str, Stream], *, moto: bool = False) -> None:
        self._streams = streams
        self._moto = moto

    def query(self, **request: Any) -> dict[str, Any]:
        if "ExclusiveStartKey" in request:
            raise NotImplementedError("a key's items in two shards: not in the model's data")
        value, low, high = _key_condition(request["KeyConditionExpression"])
        stream = self._streams[value]
        near = high if not request.get("ScanIndexForward", True) else low
        start = stream.index_at(near) if near is not None else 0
        read: list[TermItem] = []
        while len(read) < request["Limit"] and (item := stream.get(start + len(read))) is not None:
            read.append(item)
        response: dict[str, Any] = {"Items": [_plain(item) for item in read], "ScannedCount": len(read)}
        further = stream.get(start + len(read)) is not None or stream.beyond
        if len(read) == request["Limit"] and (further or not self._moto):
            response["LastEvaluatedKey"] = {schema.NAME_SORT: read[-1].sort_value}
        return response


def _key_condition(condition: Any) -> tuple[str, str | None, str | None]:
    """(partition value, low, high) of `Key(partition).eq(v) & Key(nameSort).<range>`."""
    expression = condition.get_expression()
    if expression["operator"] != "AND":
        return str(expression["values"][1]), None, None
    partition, sort = expression["values"]
    value = str(partition.get_expression()["values"][1])
    expression = sort.get_expression()
    operator, bounds = expression["operator"], expression["values"][1:]
    if operator == "BETWEEN":
        return value, str(bounds[0]), str(bounds[1])
    return (
        value,
        (str(bounds[0]) if operator == ">=" else None),
        (str(bounds[0]) if operator == "<=" else None),
    )


def _plain(item: TermItem) -> dict[str, Any]:
    return {
        schema.NAME_SORT: item.sort_value,
        schema.OBJECT_KEY: item.key,
        schema.FILE_NAME: item.name,
        schema.SIZE: item.size,
        schema.UPLOAD_DATE: item.sort_value.split(" ", 1)[0],
    }


@dataclass(frozen=True)
class TermsPage:
    returned: int
    name_items: int  # term items the page's Queries read (filtered ones and resumed ones included)
    entries: int  # entries of the page's candidates (one BatchGetItem)
    rounds: int  # round trips in sequence: the merge's rounds of Queries, then the BatchGetItem
    requests: int
    held: int  # items held at the page's end: the name items kept (returned or read ahead) + entries
    cursor: MergeCursor | None

    @property
    def items_read(self) -> int:
        return self.name_items + self.entries


def terms_page(
    table: TermTable,
    partitions: Sequence[str],
    search: term_reader.TermSearch,
    *,
    limit: int,
    cursor: MergeCursor | None = None,
) -> TermsPage:
    """One page of the terms plan from `cursor` on: the reader's own fetchers and merge over `table`,
    then one entry per candidate (every entry of the model's data is live and current)."""
    counter = term_reader.Counter()
    index = schema.NAME_USER_INDEX.name if isinstance(search.listing, UserQuery) else None
    term = search.term
    fetchers = [
        term_reader.TermShard(
            table, "model", index=index, scope_value=term_scope(value, term), search=search, counter=counter
        )
        for value in partitions
    ]
    merged = term_reader.merge(
        fetchers, limit=limit, ascending=search.ascending, cursor=cursor, executor=None
    )
    floor = None if merged.start is None else merged.start.last
    entries = len(
        {item[schema.OBJECT_KEY] for item in merged.items if term_reader.position_of(item) != floor}
    )
    gets = math.ceil(entries / MAX_BATCH_GET)
    return TermsPage(
        returned=entries,
        name_items=counter.scanned,
        entries=entries,
        rounds=merged.rounds + (1 if entries else 0),
        requests=counter.requests + gets,
        held=merged.items_read + entries,
        cursor=merged.cursor,
    )


@dataclass(frozen=True)
class TermsCost:
    """The pages of one list read in order (up to `max_pages`): totals, the deepest and the largest page."""

    pages: int
    complete: bool  # read to its end
    returned: int
    items_read: int
    first_page_read: int
    deepest: int  # round trips of the deepest page
    peak_held: int
    queries: int  # requests of the first page

    @property
    def per_item_returned(self) -> float | None:
        return None if self.returned == 0 else self.items_read / self.returned


def terms_list(
    make_table: Callable[[], TermTable],
    partitions: Sequence[str],
    search: term_reader.TermSearch,
    *,
    limit: int,
    max_pages: int,
) -> TermsCost:
    """Read a list page after page through its cursors (the table made once: pages read the same data)."""
    table = make_table()
    cursor: MergeCursor | None = None
    pages: list[TermsPage] = []
    while len(pages) < max_pages:
        page = terms_page(table, partitions, search, limit=limit, cursor=cursor)
        pages.append(page)
        cursor = page.cursor
        if cursor is None:
            break
    return TermsCost(
        pages=len(pages),
        complete=cursor is None,
        returned=sum(page.returned for page in pages),
        items_read=sum(page.items_read for page in pages),
        first_page_read=pages[0].items_read,
        deepest=max(page.rounds for page in pages),
        peak_held=max(page.held for page in pages),
        queries=pages[0].requests,
    )


def split(count: int, parts: int, rng: random.Random) -> list[int]:
    """`count` items spread over `parts` partitions by an even hash: a multinomial draw."""
    left, shares = count, []
    for part in range(parts, 0, -1):
        share = left if part == 1 else rng.binomialvariate(left, 1 / part)
        shares.append(share)
        left -= share
    return shares
