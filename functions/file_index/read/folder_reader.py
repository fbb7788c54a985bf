"""Folder lists (`prefix`, `delimiter`) read from the name index's key items, a bounded page at a time.

A key item (`names.key_item`) has the scope `names.key_scope(partition)` of its bucket or user shard and
the object key as its sort key, so a folder is a key range of every shard. `FolderReader` merges the
shards in key order (`shard_merge.merge_page`, both orders): each round Queries the shards that need it in
parallel, a page makes at most `PAGE_ROUNDS` round trips (the last one the entries' BatchGetItem).

Each shard's read gives the merge files and **sub-folders**: the keys of one sub-folder that a Query
returns become one marker holding the keys whose names match. A Query that ends inside a sub-folder
jumps: the shard's next Query starts past it by its key condition (ascending: at the sub-folder with
the delimiter's next character, `a/b/` -> `a/b0`; descending: at the greatest key before `a/b/`), so a
sub-folder costs a shard one Query's worth of reads whatever its size. A page reads at most what it
returns plus one Query's worth per shard and round.

The entries decide (`NameReader.keeps`): one BatchGetItem reads the page's files and the first
`FOLDER_PROBES` keys of each sub-folder; a sub-folder is answered when one of them is kept. When none is,
the page stops before it and its shards go on inside it after what was probed, in the next round or
the next page, until a kept key answers it or the sub-folder ends.

The position (`next_position`, plain JSON for the caller to sign) is the merge's cursor: each shard's
next key (or past a sub-folder), and the last answered file or sub-folder, which a following page does
not answer again.

The keys around a key or a folder (`key_after`, `key_before`, `past_folder`): `file_index.read.folder_keys`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol

from boto3.dynamodb.conditions import Key

from file_index.read.file_queries import BucketQuery, InvalidStartKey, UserQuery
from file_index.read.folder_keys import key_after, key_before, past_folder, top_key
from file_index.read.name_query import ORDER_KEY, NamePage, NameQuery, folder_of, name_matches
from file_index.read.reader import PAGE_ROUNDS
from file_index.read.shard_reader import MAX_QUERY_ITEMS, READ_AHEAD_FACTOR
from file_index.read.term_reader import Counter
from file_index.rules import schema, shard_merge, shards
from file_index.rules.name_items import key_scope
from file_index.rules.shard_merge import (
    InvalidMergeCursorError,
    MergeCursor,
    MergedPage,
    Position,
    ShardBatch,
    compact,
)
from file_index.store import queries

# Keys of a sub-folder whose entries one page reads to answer it (in the read's order).
FOLDER_PROBES = 2


class NameReads(Protocol):
    """What a folder list reads through (`name_reader.NameReader`): the name table, the entries, and the
    checks of an entry, shared with the name reader's other plans."""

    name_table: str
    client: Any
    executor: Executor | None

    def partitions(self, listing: UserQuery | BucketQuery) -> tuple[list[str], str | None]: ...

    def entries(self, keys: Sequence[str], counter: Counter) -> dict[str, dict[str, Any]]: ...

    def keeps(self, query: NameQuery, entry: Mapping[str, Any] | None) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class _Found:
    """A file's key item, or a sub-folder's marker: the keys of it one Query read, in read order."""

    position: Position  # the key read first; a marker's object key is its sub-folder
    folder: str | None
    candidates: tuple[str, ...]  # keys whose names match (a file: its own)
    read_to: str  # the last key read


@dataclass(frozen=True)
class _Segment:
    """One merge of a page: what it returned, where it started and ended (`shard_merge.cursor_after`)."""

    merged: MergedPage[_Found]
    end: MergeCursor | None


@dataclass(frozen=True)
class FolderPage(NamePage):
    """A folder list page; `round_trips` made one after the other, `keys_read` key items read."""

    round_trips: int = 0
    keys_read: int = 0
    # For each answer in order (files and sub-folders): whether it is a file, its merge and the count of
    # that merge's items it ends.
    _answers: tuple[tuple[bool, int, int], ...] = field(default=(), repr=False)
    _segments: tuple[_Segment, ...] = field(default=(), repr=False)

    def _cut(self, count: int) -> int:
        if not 1 <= count <= len(self.items):
            raise ValueError(f"a page of {len(self.items)} items has no cursor after {count}")
        files = 0
        for index, (is_file, _, _) in enumerate(self._answers):
            files += is_file
            if files == count:
                return index
        raise AssertionError("unreachable: every item is an answer")

    def cursor_after(self, count: int) -> dict[str, Any]:
        """The position just after the first `count` items (files), for a page cut shorter: the
        sub-folders after that item are answered again by the next page (`prefixes_before`)."""
        _, segment_index, consumed = self._answers[self._cut(count)]
        segment = self._segments[segment_index]
        merged = segment.merged
        assert merged.start is not None
        positions = [found.position for found in merged.items]
        merge = shard_merge.cursor_after(merged.start, merged.sources, positions, consumed, segment.end)
        return {"merge": merge.to_json()}

    def prefixes_before(self, count: int) -> list[str]:
        """The sub-folders this page answered before its `count`-th item."""
        answers = self._answers[: self._cut(count)]
        return list((self.common_prefixes or [])[: sum(not is_file for is_file, _, _ in answers)])


class _KeyShard:
    """The fetcher of one shard's key items (`shard_merge.ShardFetch`): one Query per call."""

    def __init__(self, reader: _FolderList, query: NameQuery, index: str | None, partition: str) -> None:
        self._reader = reader
        self._query = query
        self._index = index
        self._scope = key_scope(partition)
        self.skip: str | None = None  # a sub-folder answered already: a start inside it jumps past it
        self.requests = self.read = self.kept = 0

    def _start(self, after: Position | None) -> str | None:
        """The first key to read (inclusive, in the read's order), None when nothing is left."""
        reader, ascending = self._reader, self._query.ascending
        if after is None:
            start: str | None = reader.low if ascending else reader.high
        elif not after.object_key:
            start = str(after.sort_value)
        elif reader.is_folder(after.object_key):
            start = past_folder(after.object_key, ascending)
        else:
            start = key_after(str(after.sort_value)) if ascending else key_before(str(after.sort_value))
        if start is not None and self.skip is not None and start.startswith(self.skip):
            start = past_folder(self.skip, ascending)
        if start is None or (start > reader.high if ascending else start < reader.low):
            return None
        return max(start, reader.low) if ascending else min(start, reader.high)

    def __call__(self, after: Position | None, count: int) -> ShardBatch[_Found]:
        start = self._start(after)
        if start is None:
            return ShardBatch([], exhausted=True)
        reader, query = self._reader, self._query
        ascending = query.ascending
        low, high = (start, reader.high) if ascending else (reader.low, start)
        sort_key = Key(schema.NAME_SORT)
        condition = sort_key.between(low, high) if low else sort_key.lte(high)
        wanted = -(-count * (self.read + 1) // (self.kept + 1))
        limit = max(1, min(MAX_QUERY_ITEMS, READ_AHEAD_FACTOR * count, max(count, wanted)))
        items, more = reader.query_once(self._index, self._scope, condition, ascending, limit)
        self.requests += 1
        self.read += len(items)
        found: list[_Found] = []
        open_folder: list[Any] = []  # [folder, first key, candidates, last key]

        def close() -> None:
            if open_folder and open_folder[2]:
                folder, first, candidates, last = open_folder
                found.append(_Found(Position(first, folder), folder, tuple(candidates), last))
            open_folder.clear()

        previous = None
        for item in items:
            key = str(item[schema.NAME_SORT])
            if key == previous:
                continue  # the key's item in a second bucket shard under one user shard: once is enough
            previous = key
            matches = name_matches(query, str(item.get(schema.FILE_NAME, "")))
            self.kept += matches  # a sub-folder's keys count: only names that do not match grow a Query
            folder = folder_of(query, reader.prefix, key)
            if folder is None:
                close()
                if matches:
                    found.append(_Found(Position(key, key), None, (key,), key))
                continue
            if not open_folder or open_folder[0] != folder:
                close()
                open_folder.extend([folder, key, [], key])
            open_folder[3] = key
            if matches:
                open_folder[2].append(key)
        if not more or previous is None:
            close()
            return ShardBatch(found, exhausted=True)
        resume: str | None
        if open_folder and open_folder[2]:
            resume = past_folder(open_folder[0], ascending)  # answered by what was read: jump past it
        else:
            resume = key_after(previous) if ascending else key_before(previous)
        close()
        # Past the list's range (a key that is the prefix itself, read last going down): the shard is done.
        if resume is None or (resume > reader.high if ascending else resume < reader.low):
            return ShardBatch(found, exhausted=True)
        return ShardBatch(found, exhausted=False, resume=compact(resume))


class _FolderList:
    """One folder list being read: its query, key range and tables (a `NameReader`'s)."""

    def __init__(self, names: NameReads, query: NameQuery) -> None:
        self.names = names
        self.query = query
        self.prefix = query.prefix or ""
        self.low, self.high = self.prefix, top_key(self.prefix)

    def is_folder(self, key: str) -> bool:
        """`key` names a sub-folder of the list (a marker's), not a file."""
        return bool(key) and folder_of(self.query, self.prefix, key) == key

    def query_once(
        self, index: str | None, scope: str, condition: Any, ascending: bool, limit: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """One Query of key items: its items and whether more follow."""
        names = self.names
        request: dict[str, Any] = {
            "TableName": names.name_table,
            "KeyConditionExpression": Key(schema.NAME_USER if index else schema.NAME_SCOPE).eq(scope)
            & condition,
            "ProjectionExpression": "#k, #n, #t",
            "ExpressionAttributeNames": {
                "#k": schema.OBJECT_KEY,
                "#n": schema.FILE_NAME,
                "#t": schema.NAME_SORT,
            },
            "ScanIndexForward": ascending,
            "Limit": limit,
        }
        if index is not None:
            request["IndexName"] = index
        page = queries.query_page(names.client, request)
        return page.items, bool(page.last_key)

    def cursor(self, position: Mapping[str, Any] | None, shard_count: int) -> MergeCursor | None:
        """The merge cursor of `position`, checked against the query; InvalidStartKey if it is not one."""
        if position is None:
            return None
        if isinstance(position, Mapping) and set(position) == {"k", "f"}:
            return self._key_cursor(position, shard_count)
        if not isinstance(position, Mapping) or set(position) != {"merge"}:
            raise InvalidStartKey("not a folder list cursor")
        try:
            cursor = MergeCursor.from_json(position["merge"])
            cursor.widened(shard_count)
        except InvalidMergeCursorError as error:
            raise InvalidStartKey(f"not a folder list cursor ({error})") from None
        places = [shard.after for shard in cursor.shards if shard.after is not None]
        if cursor.last is not None:
            places.append(cursor.last)
        for place in places:
            value, key = place.sort_value, place.object_key
            inside = isinstance(value, str) and self.low <= value <= self.high
            if not inside or (key and not (key.startswith(self.prefix) and key <= self.high)):
                raise InvalidStartKey("a position is outside the query")
        return cursor

    def _key_cursor(self, position: Mapping[str, Any], shard_count: int) -> MergeCursor:
        """The merge cursor of a `NameReader` keys-plan position (`k` the last key read, `f` the last
        sub-folder answered): every shard goes on after `k`, or past `f` when `k` lies in it."""
        key, folder = position["k"], position["f"]
        if not isinstance(key, str) or (folder is not None and not isinstance(folder, str)):
            raise InvalidStartKey("not a folder list cursor")
        if not key.startswith(self.prefix) or (folder is not None and not folder.startswith(self.prefix)):
            raise InvalidStartKey("a position is outside the query")
        ascending = self.query.ascending
        if folder is not None and key.startswith(folder) and self.is_folder(folder):
            start, last = past_folder(folder, ascending), Position(key, folder)
        else:
            start, last = (key_after if ascending else key_before)(key), Position(key, key)
        shard = (
            shard_merge.ShardCursor(exhausted=True)
            if start is None
            else shard_merge.ShardCursor(compact(start))
        )
        return MergeCursor((shard,) * shard_count, last)


class FolderReader:
    """Answers the folder lists of `NameQuery` (`prefix` and/or `delimiter`) with a `NameReader`'s
    tables, placement, executor and entry checks."""

    def __init__(self, names: NameReads) -> None:
        self._names = names

    def list_files(
        self, query: NameQuery, *, limit: int, position: Mapping[str, Any] | None = None
    ) -> FolderPage:
        """Up to `limit` files and sub-folders of `query` in key order, after `position`."""
        if not query.uses_keys:
            raise ValueError("a folder list has a prefix or a delimiter")
        if query.delimiter is not None and len(query.delimiter) != 1:
            raise ValueError(f"a delimiter is one character, not {query.delimiter!r}")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        folder_list = _FolderList(self._names, query)
        partitions, index = self._names.partitions(query.listing)
        fetchers = [_KeyShard(folder_list, query, index, partition) for partition in partitions]
        cursor = folder_list.cursor(position, len(fetchers))
        counter = Counter()
        page = _PageBuilder(folder_list, query, limit, fetchers, counter)
        page.read(cursor)
        keys_read = sum(fetcher.read for fetcher in fetchers)
        return FolderPage(
            items=page.items,
            next_position=None if page.next_cursor is None else {"merge": page.next_cursor.to_json()},
            common_prefixes=page.folders,
            scanned_count=counter.scanned + keys_read,
            request_count=counter.requests + sum(fetcher.requests for fetcher in fetchers),
            ordered_by=ORDER_KEY,
            round_trips=page.rounds,
            keys_read=keys_read,
            _answers=tuple(page.answers),
            _segments=tuple(page.segments),
        )


class _PageBuilder:
    """One page: merges of the shards, each followed by a BatchGetItem of its files and probes."""

    def __init__(
        self,
        reader: _FolderList,
        query: NameQuery,
        limit: int,
        fetchers: Sequence[_KeyShard],
        counter: Counter,
    ) -> None:
        self._reader = reader
        self._query = query
        self._limit = limit
        self._fetchers = fetchers
        self._counter = counter
        self.items: list[dict[str, Any]] = []
        self.folders: list[str] = []
        self.answers: list[tuple[bool, int, int]] = []
        self.segments: list[_Segment] = []
        self.rounds = 0
        self.next_cursor: MergeCursor | None = None

    def _answered(self) -> int:
        return len(self.items) + len(self.folders)

    def read(self, cursor: MergeCursor | None) -> None:
        names = self._reader.names
        ascending = self._query.ascending
        while True:
            last = None if cursor is None or cursor.last is None else cursor.last.object_key
            skip = last if last is not None and self._reader.is_folder(last) else None
            for fetcher in self._fetchers:
                fetcher.skip = skip
            budget = PAGE_ROUNDS - self.rounds - 1  # one round left for the entries
            need = self._limit - self._answered()
            merged = shard_merge.merge_page(
                self._fetchers,
                position_of=_position_of,
                limit=need,
                ascending=ascending,
                cursor=cursor,
                batch_size=shards.fair_share(need, len(self._fetchers)),
                executor=names.executor if len(self._fetchers) > 1 else None,
                max_rounds=budget,
                top_up=True,
            )
            self.rounds += merged.rounds
            self.segments.append(_Segment(merged, merged.cursor))
            groups = _groups(merged.items, None if cursor is None or cursor.last is None else cursor.last)
            probes = [key for group in groups for key in _probes(group[2], ascending)]
            entries = names.entries(probes, self._counter) if probes else {}
            self.rounds += 1 if probes else 0
            cut = self._answer(groups, entries, len(self.segments) - 1)
            if cut is None:
                cursor = merged.cursor
                if self._answered() >= self._limit or cursor is None or merged.stopped_early:
                    break
            else:
                consumed, unsure = cut
                cursor = self._cursor_at(merged, consumed, unsure)
                if self._answered() >= self._limit:
                    break
            if self.rounds + 2 > PAGE_ROUNDS:
                break
        self.next_cursor = None if cursor is None or cursor.finished else cursor

    def _answer(
        self, groups: list[tuple[int, int, list[_Found]]], entries: Mapping[str, Any], segment: int
    ) -> tuple[int, list[_Found] | None] | None:
        """Answer `groups` in order until the page is full (-> (items consumed, None)) or a sub-folder
        none of whose probes is kept (-> (items before it, its markers)); None: every group answered."""
        keeps = self._reader.names.keeps
        ascending = self._query.ascending
        for start, end, group in groups:
            first = group[0]
            if first.folder is None:
                item = keeps(self._query, entries.get(first.position.object_key))
                if item is not None:
                    self.items.append(item)
                    self.answers.append((True, segment, end))
            elif any(keeps(self._query, entries.get(key)) is not None for key in _probes(group, ascending)):
                self.folders.append(first.folder)
                self.answers.append((False, segment, end))
            else:
                return start, group
            if self._answered() >= self._limit:
                return end, None
        return None

    def _cursor_at(
        self, merged: MergedPage[_Found], consumed: int, unsure: list[_Found] | None
    ) -> MergeCursor:
        """The cursor after `consumed` items of `merged`; the shards of an `unsure` sub-folder go on
        inside it after the keys probed."""
        assert merged.start is not None
        positions = [found.position for found in merged.items]
        cursor = shard_merge.cursor_after(merged.start, merged.sources, positions, consumed, merged.cursor)
        if not unsure:
            return cursor
        probed = set(_probes(unsure, self._query.ascending))
        resumes = list(cursor.shards)
        ascending = self._query.ascending
        for offset, marker in enumerate(unsure):
            source = merged.sources[consumed + offset]
            left = [key for key in marker.candidates if key not in probed]
            resume = left[0] if left else (key_after if ascending else key_before)(marker.read_to)
            resumes[source] = (
                shard_merge.ShardCursor(exhausted=True)
                if resume is None
                else shard_merge.ShardCursor(compact(resume))
            )
        return MergeCursor(tuple(resumes), cursor.last)


def _position_of(found: _Found) -> Position:
    return found.position


def _groups(items: Sequence[_Found], last: Position | None) -> list[tuple[int, int, list[_Found]]]:
    """The merged items as (start, end, items) runs of one file or one sub-folder (a key read in two
    shards, a sub-folder read by several), without the run the previous page ended on."""
    groups: list[tuple[int, int, list[_Found]]] = []
    previous = None if last is None else last.object_key
    for index, found in enumerate(items):
        name = found.position.object_key
        if groups and name == previous:
            start, _, run = groups[-1]
            groups[-1] = (start, index + 1, [*run, found])
        elif name == previous:
            continue  # answered by the previous page
        else:
            groups.append((index, index + 1, [found]))
        previous = name
    return groups


def _probes(group: Sequence[_Found], ascending: bool) -> list[str]:
    """The keys whose entries decide a run: a file's key; a sub-folder's first FOLDER_PROBES keys."""
    if group[0].folder is None:
        return [group[0].position.object_key]
    keys = sorted({key for found in group for key in found.candidates}, reverse=not ascending)
    return keys[:FOLDER_PROBES]
