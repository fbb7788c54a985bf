"""The terms plan of a name list: the items of one term, by upload time, every shard merged, a page at a time.

A name list with query words (or an extension alone, which is indexed as a word of the name) reads the term
items (`file_index.write.names`: `nameScope` `{partition}|:{term}`, `nameSort` `{uploadDate} {key digest}`) of
`name_terms.lookup_term(longest query word)` in every partition of its bucket (the table) or of its user
(the `nameUser` GSI). Time bounds are key conditions on `nameSort`; each partition is read in the list's
order (newest first, or ascending) and the partitions are merged (`shard_merge.merge_page`, as the entry lists
are: each shard asked for its fair share, topped up as it runs low) by `nameSort`, so the answer is ordered
by upload time, then by key digest. Each item is checked on its own attributes (every query word on its
`fileName` with `name_terms.matches`, the extension, the size bounds) and the page's candidates' entries are
read in one BatchGetItem: an entry answers only if it is live, matches the list (`keeps`) and has the
item's `uploadDate` (else the item is stale, its file overwritten since, and the newer item sits elsewhere
in the order).

A page makes at most `reader.PAGE_ROUNDS` round trips: at most `PAGE_ROUNDS - 1` rounds of Queries (the
shards of a round in parallel), then the BatchGetItem. A filter that drops items (a longer query word than
the term, a second word, size bounds, enrichment filters, stale items) makes a page end after that bounded
read, shorter or empty, with a cursor past what it read. It holds the page and the shards' read-ahead.

Cursor: `{"terms": MergeCursor}` (each shard's place by `nameSort`, the last item answered).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import Key

from file_index.read.file_queries import BucketQuery, InvalidStartKey, UserQuery
from file_index.read.reader import PAGE_ROUNDS
from file_index.read.shard_reader import MAX_QUERY_ITEMS, READ_AHEAD_FACTOR
from file_index.rules import name_terms, schema, shard_merge
from file_index.rules.name_items import has_extension
from file_index.rules.objects import MAX_KEY_BYTES
from file_index.rules.shard_merge import InvalidMergeCursorError, MergeCursor, Position, ShardBatch
from file_index.store import queries

# Above every `nameSort` of an upload time that starts with a bound ("{uploadDate} {hex digest}").
_AFTER_TIME = "~"
# Query rounds a page makes at most: one round trip of the page is its BatchGetItem.
QUERY_ROUNDS = PAGE_ROUNDS - 1


@dataclass(frozen=True)
class TermSearch:
    """What a terms plan reads: the term, where, in which order, and what an item must pass."""

    listing: UserQuery | BucketQuery
    query_words: tuple[str, ...]  # what every name must match (`name_terms.matches`)
    lookup_words: tuple[str, ...]  # the words the term is chosen from: the query's, and the extension's
    ext: str | None
    ascending: bool

    @property
    def term(self) -> str:
        """The term of the longest word (the first among equals)."""
        # The most selective term: the longest of the words' own lookup terms.
        return max((name_terms.lookup_term(word) for word in self.lookup_words), key=len)

    def bounds(self) -> tuple[str | None, str | None]:
        """The `nameSort` range of the list's time bounds, inclusive, None for an open side."""
        if isinstance(self.listing, UserQuery):
            low, high = self.listing.key_bounds()
            if self.listing.day_prefix is not None:
                return low, high
        else:
            low, high = self.listing.start, self.listing.end
        return low, None if high is None else high + _AFTER_TIME

    def holds_nothing(self) -> bool:
        low, high = self.listing.start, self.listing.end
        return low is not None and high is not None and low > high

    def passes(self, item: Mapping[str, Any]) -> bool:
        """An item's own attributes pass the list: every word, the extension, the time and size bounds."""
        name = str(item.get(schema.FILE_NAME, ""))
        if not name_terms.matches(name, self.query_words):
            return False
        if self.ext and not has_extension(name, self.ext):
            return False
        date = str(item.get(schema.UPLOAD_DATE, ""))
        if not self.listing.has_time(date):
            return False
        size = item.get(schema.SIZE)
        if size is None:
            return False
        low, high = self.listing.min_size, self.listing.max_size
        return (low is None or size >= low) and (high is None or size <= high)


class Counter:
    """Items read (name items and entries) and requests made, by every shard of a page: the shards' threads
    `add` at once (`rounds` is counted by the page's own thread)."""

    def __init__(self) -> None:
        self.scanned = 0
        self.requests = 0
        self.rounds = 0  # requests made one after the other
        self._lock = threading.Lock()

    def add(self, scanned: int, requests: int = 1) -> None:
        with self._lock:
            self.scanned += scanned
            self.requests += requests


class TermShard:
    """The fetcher of one partition's term items (`shard_merge.ShardFetch`): one Query per call, as a rule.

    `after` with an object key resumes strictly after its `nameSort` (a key condition from it, inclusive,
    the item itself dropped: a `nameSort` names one key in a partition); a compact one from it, inclusive.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        index: str | None,
        scope_value: str,
        search: TermSearch,
        counter: Counter,
    ) -> None:
        self._client = client
        self._table_name = table_name
        self._index = index
        self._scope_value = scope_value
        self._search = search
        self._counter = counter
        self._scanned = 0
        self._kept = 0

    def _limit(self, count: int) -> int:
        # What the page needs, grown by what this shard's checks dropped so far (as the entry lists do).
        wanted = math.ceil(count * (self._scanned + 1) / (self._kept + 1))
        return max(1, min(MAX_QUERY_ITEMS, READ_AHEAD_FACTOR * count, max(count, wanted)))

    def __call__(self, after: Position | None, count: int) -> ShardBatch[dict[str, Any]]:
        low, high = self._search.bounds()
        skip: str | None = None
        if after is not None:
            value = str(after.sort_value)
            if self._search.ascending:
                low = value if low is None else max(low, value)
            else:
                high = value if high is None else min(high, value)
            if after.object_key:
                skip = value
        if low is not None and high is not None and low > high:
            return ShardBatch([], exhausted=True)
        attribute = schema.NAME_USER if self._index is not None else schema.NAME_SCOPE
        condition = Key(attribute).eq(self._scope_value)
        sort_key = Key(schema.NAME_SORT)
        if low is not None and high is not None:
            condition &= sort_key.between(low, high)
        elif low is not None:
            condition &= sort_key.gte(low)
        elif high is not None:
            condition &= sort_key.lte(high)
        request: dict[str, Any] = {
            "TableName": self._table_name,
            "KeyConditionExpression": condition,
            "ScanIndexForward": self._search.ascending,
            # One more than needed when the first item read is the one resumed after.
            "Limit": self._limit(count) + (1 if skip is not None else 0),
        }
        if self._index is not None:
            request["IndexName"] = self._index
        items: list[dict[str, Any]] = []
        while True:
            page = queries.query_page(self._client, request)
            read: list[dict[str, Any]] = [_plain(raw) for raw in page.items]
            self._counter.add(page.scanned)
            self._scanned += len(read)
            kept = [item for item in read if item[schema.NAME_SORT] != skip and self._search.passes(item)]
            self._kept += len(kept)
            items += kept
            evaluated = page.last_key
            if evaluated is None:
                return ShardBatch(items, exhausted=True)
            last = read[-1]
            resume = Position(str(last[schema.NAME_SORT]), str(last[schema.OBJECT_KEY]))
            if items or resume.sort_value != skip:
                return ShardBatch(items, exhausted=False, resume=resume)
            # Only copies of the item resumed after were read (a key's items left in two shards share
            # a user partition): read on, or the shard would not move.
            request["ExclusiveStartKey"] = evaluated


def position_of(item: Mapping[str, Any]) -> Position:
    return Position(str(item[schema.NAME_SORT]), str(item[schema.OBJECT_KEY]))


def batch_size(limit: int, shard_count: int) -> int:
    """A shard's Query size: its expected part of the page plus one standard deviation (the entry lists'
    `shards.fair_share` adds two). A page reads its entries too, so the name items must stay under two per
    item returned for three items read in all; a shard that runs short is topped up in the next round."""
    expected = limit / shard_count
    return min(limit, math.ceil(expected) + math.ceil(math.sqrt(expected)))


def merge(
    fetchers: Sequence[TermShard],
    *,
    limit: int,
    ascending: bool,
    cursor: MergeCursor | None,
    executor: Executor | None,
) -> shard_merge.MergedPage[dict[str, Any]]:
    """One page of candidates: at most `QUERY_ROUNDS` rounds of the shards' Queries."""
    return shard_merge.merge_page(
        fetchers,
        position_of=position_of,
        limit=limit,
        ascending=ascending,
        cursor=cursor,
        batch_size=batch_size(limit, len(fetchers)),
        executor=executor if len(fetchers) > 1 else None,
        max_rounds=QUERY_ROUNDS,
        top_up=True,
    )


def start_cursor(position: Any, *, shard_count: int, search: TermSearch) -> MergeCursor | None:
    """The merge cursor a page starts from. InvalidStartKey if it is not a terms cursor, names more shards
    than are read, or lies outside the list."""
    if position is None:
        return None
    if not isinstance(position, Mapping) or set(position) != {"terms"}:
        raise InvalidStartKey("not a name list cursor")
    try:
        cursor = MergeCursor.from_json(position["terms"]).widened(shard_count)
    except (InvalidMergeCursorError, ValueError, TypeError) as error:
        raise InvalidStartKey(f"not a name list cursor ({error})") from None
    low, high = search.bounds()
    points = [shard.after for shard in cursor.shards if shard.after is not None]
    for point in [*points, *([cursor.last] if cursor.last is not None else [])]:
        value = point.sort_value
        if (
            not isinstance(value, str)
            or len(point.object_key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES
            or (low is not None and value < low)
            or (high is not None and value > high)
        ):
            raise InvalidStartKey("a position is outside the query")
    return cursor


def _plain(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {name: int(value) if isinstance(value, Decimal) else value for name, value in raw.items()}
