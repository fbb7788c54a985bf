"""Read side of the name index (`file_index.write.names`): lists by words of the name, folder and extension.

A `NameQuery` is a list of a user or a bucket (`UserQuery`/`BucketQuery`, with their size and time
bounds) narrowed by any of: query words (`q`), a key prefix (`prefix`, a folder), sub-folders
(`delimiter` "/") and an extension (`ext`). Its plans:

- **terms** (words or an extension, in upload-time order): the items of one term by upload time, a
  bounded page at a time (`file_index.read.term_reader`);
- **keys** (`prefix` or `delimiter`, or key order): the key items under the prefix, every shard merged in
  key order, a bounded page at a time (`file_index.read.folder_reader`; `_list_keys` without sub-folders);
- a bucket's list by extension in size order: the bucket's size index, each entry checked; enrichment
  filters alone: the list's own entry index, each entry checked.

Every candidate's entry is read (BatchGetItem) and kept only if it is live, in the list's bucket or
user, inside the bounds, and its name (from the entry) matches every query word (`name_terms.matches`)
and the extension: the name index finds candidates, the entries decide.

A list that reads name items answers only once the bucket's name index is complete (`terms_complete`:
every live entry has its items); before, it raises `names.NameIndexIncomplete` rather than answer without
the files indexed before the name index.

A key whose items sit in more than one shard (left by a release before the name index followed shard
moves) is a candidate once: a page holds each file once, and no BatchGetItem names a key twice (DynamoDB
refuses such a request).

Cursors (`position`, plain JSON, signed by the caller): the keys plan's last key read and the last
sub-folder answered, so no sub-folder is answered twice; the terms plan's merge cursor.
`NamePage.cursor_after(count)` is the cursor just after a page's first `count` items, for a page cut
shorter (`NamePage.cut`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

from boto3.dynamodb.conditions import Key

from file_index.read import term_reader
from file_index.read.file_queries import (
    BucketQuery,
    InvalidStartKey,
    ListCursor,
    Plan,
    UserQuery,
    public_item,
)
from file_index.read.folder_reader import FolderReader
from file_index.read.name_query import (
    DELIMITER,
    ORDER_KEY,
    ORDER_UPLOAD_DATE,
    NamePage,
    NameQuery,
    enrichment_matches,
    folder_of,
    name_matches,
)
from file_index.read.reader import FileReader
from file_index.rules import schema, shard_merge
from file_index.rules.name_items import key_scope, name_of, term_scope
from file_index.rules.placement import ShardPlacement
from file_index.store import queries, unprocessed
from file_index.store.expressions import SharedClient
from file_index.store.name_index_flag import NameIndexIncomplete, terms_complete

MAX_BATCH_GET = 100
# Key items one keys-plan page reads at most before it ends with a cursor.
KEY_PAGE_READ_BUDGET = 5000
_KEY_CHUNK = 250
_MAX_KEY_BYTES = 1024


_Counter = term_reader.Counter
# Rounds of one entry read's BatchGetItem under throttling (`file_index.store.unprocessed`): fewer than a
# writer's, at most 0.35 s of pauses, because a page may read entries several times within the search's
# 10 s; a read still left is a 503 with Retry-After, and the caller asks again.
ENTRY_READ_ROUNDS = 4


class NameReader:
    """Answers `NameQuery`s from the name index table and the entries of `FileMetaData`."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        name_table_name: str,
        placement: ShardPlacement | None = None,
        executor: Executor | None = None,
        entries: FileReader | None = None,
        terms_complete: bool | Callable[[], bool] | None = None,
        state_client: Any | None = None,
        bucket: str | None = None,
    ) -> None:
        """`entries`: the reader of the entry indexes, for the lists that check each entry (None: those
        lists are refused). `terms_complete`: whether the bucket's name index is complete, or a check asked
        at each list; None: the name table's flag (`names.terms_complete`) for the list's bucket (a user's:
        `bucket`), read with `state_client` (a low-level DynamoDB client); without a state client the name
        index is taken as complete."""
        self._terms_complete = terms_complete
        self._state_client = state_client
        self._bucket = bucket
        self._entries_reader = entries
        self.client = SharedClient(client)  # the shard threads query through it at once
        self._table_name = table_name
        self.name_table = name_table_name
        self._placement = placement if placement is not None else ShardPlacement()
        self.executor = executor

    def list_files(
        self, query: NameQuery, *, limit: int, position: Mapping[str, Any] | None = None
    ) -> NamePage:
        """Up to `limit` items of `query` after `position` (a previous page's `next_position`)."""
        counter = _Counter()
        if query.filters_only:
            # The entry indexes alone: no name item is read.
            if position is not None and (not isinstance(position, Mapping) or set(position) != {"filter"}):
                raise InvalidStartKey("not a filtered list cursor")
            return self._list_filtered(
                query, limit, None if position is None else position["filter"], counter
            )
        if not self._terms_ready(query.listing):
            raise NameIndexIncomplete(self._bucket_of(query.listing))
        if query.uses_keys:
            return FolderReader(self).list_files(query, limit=limit, position=position)
        if query.order_by == ORDER_UPLOAD_DATE:
            return self._list_terms(query, limit, position, counter)
        if query.order_by == ORDER_KEY:
            return self._list_keys(query, limit, position, counter)
        # A bucket's list by extension in size order: its size index, each entry checked.
        if position is not None and (not isinstance(position, Mapping) or set(position) != {"filter"}):
            raise InvalidStartKey("not a filtered list cursor")
        cursor = None if position is None else position["filter"]
        return self._list_checked(query, limit, cursor, counter, "filter", order=Plan.SIZE)

    # -- shared ----------------------------------------------------------------------------------------

    def _bucket_of(self, listing: UserQuery | BucketQuery) -> str | None:
        return listing.bucket if isinstance(listing, BucketQuery) else self._bucket

    def _terms_ready(self, listing: UserQuery | BucketQuery) -> bool:
        """Whether the list's bucket has a complete name index (so a list of its name items answers)."""
        if callable(self._terms_complete):
            return self._terms_complete()
        if self._terms_complete is not None:
            return self._terms_complete
        if self._state_client is None:
            return True
        bucket = self._bucket_of(listing)
        return bucket is not None and terms_complete(self._state_client, self.name_table, bucket)

    def partitions(self, listing: UserQuery | BucketQuery) -> tuple[list[str], str | None]:
        """The partition values to read, and the index (None: the table) that holds them."""
        if isinstance(listing, UserQuery):
            return self._placement.user_partitions(listing.user), schema.NAME_USER_INDEX.name
        return self._placement.bucket_partitions(listing.bucket), None

    def _map(self, function: Any, values: Sequence[Any]) -> list[Any]:
        if self.executor is None or len(values) < 2:
            return [function(value) for value in values]
        return list(self.executor.map(function, values))

    def _query(
        self, index: str | None, scope_value: str, condition: Any, counter: _Counter, **extra: Any
    ) -> Iterator[list[dict[str, Any]]]:
        """Pages of name items of one partition value (plain values)."""
        attribute = schema.NAME_USER if index is not None else schema.NAME_SCOPE
        request: dict[str, Any] = {
            "TableName": self.name_table,
            "KeyConditionExpression": Key(attribute).eq(scope_value) & condition,
            "ProjectionExpression": "#k, #n, #t",
            "ExpressionAttributeNames": {
                "#k": schema.OBJECT_KEY,
                "#n": schema.FILE_NAME,
                "#t": schema.NAME_SORT,
            },
            **extra,
        }
        if index is not None:
            request["IndexName"] = index
        for page in queries.query_pages(self.client, request):
            counter.add(page.scanned)
            yield page.items

    def entries(self, keys: Sequence[str], counter: _Counter) -> dict[str, dict[str, Any]]:
        """The entries of `keys` (absent ones absent; a key given twice is read once: BatchGetItem refuses
        a request that names a key twice), BatchGetItem in parallel chunks."""
        keys = list(dict.fromkeys(keys))
        chunks = [keys[start : start + MAX_BATCH_GET] for start in range(0, len(keys), MAX_BATCH_GET)]

        def fetch(chunk: Sequence[str]) -> tuple[list[dict[str, Any]], int]:
            request = {self._table_name: {"Keys": [{schema.OBJECT_KEY: key} for key in chunk]}}
            got = unprocessed.batch_get(self.client, request, count=ENTRY_READ_ROUNDS).raise_if_left()
            return got.of(self._table_name), got.calls

        entries: dict[str, dict[str, Any]] = {}
        fetched = self._map(fetch, chunks)
        for found, requests in fetched:
            counter.add(len(found), requests)
            for item in found:
                entries[str(item[schema.OBJECT_KEY])] = item
        sequence = [requests for _, requests in fetched]
        parallel = self.executor is not None and len(chunks) > 1
        counter.rounds += (max(sequence) if parallel else sum(sequence)) if sequence else 0
        return entries

    def keeps(self, query: NameQuery, entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The public item of `entry` if it is live and matches every condition of `query`."""
        if entry is None or entry.get(schema.DELETED) or schema.BUCKET_NAME not in entry:
            return None
        item = public_item(entry)
        listing = query.listing
        if isinstance(listing, UserQuery):
            if item.get(schema.UPLOAD_USER) != listing.user or not listing.has_time(item[schema.UPLOAD_DATE]):
                return None
        else:
            if item.get(schema.BUCKET_NAME) != listing.bucket:
                return None
            date = item[schema.UPLOAD_DATE]
            if (listing.start is not None and date < listing.start) or (
                listing.end is not None and date > listing.end
            ):
                return None
        size = item[schema.SIZE]
        if (listing.min_size is not None and size < listing.min_size) or (
            listing.max_size is not None and size > listing.max_size
        ):
            return None
        if query.prefix and not item[schema.OBJECT_KEY].startswith(query.prefix):
            return None
        name = name_of(str(item.get(schema.FILE_ID) or item[schema.OBJECT_KEY]))
        if not name_matches(query, name) or not enrichment_matches(query, item):
            return None
        return item

    # -- the terms plan (`file_index.read.term_reader`) ---------------------------------------------------

    def _list_terms(
        self, query: NameQuery, limit: int, position: Mapping[str, Any] | None, counter: _Counter
    ) -> NamePage:
        search = term_reader.TermSearch(
            listing=query.listing,
            query_words=query.term_words,
            lookup_words=query.term_lookup_words,
            ext=query.ext,
            ascending=query.ascending,
        )
        partitions, index = self.partitions(query.listing)
        cursor = term_reader.start_cursor(position, shard_count=len(partitions), search=search)
        if search.holds_nothing():
            return NamePage([], None, None, 0, 0, ORDER_UPLOAD_DATE)
        term = search.term
        fetchers = [
            term_reader.TermShard(
                self.client,
                self.name_table,
                index=index,
                scope_value=term_scope(partition, term),
                search=search,
                counter=counter,
            )
            for partition in partitions
        ]
        merged = term_reader.merge(
            fetchers, limit=limit, ascending=query.ascending, cursor=cursor, executor=self.executor
        )
        counter.rounds += merged.rounds
        floor = None if merged.start is None else merged.start.last
        candidates: list[tuple[int, dict[str, Any]]] = []
        seen: set[str] = set()
        for at, item in enumerate(merged.items):
            key = str(item[schema.OBJECT_KEY])
            # A key's items in two shards: once on a page, and not again just after the previous one.
            if key not in seen and term_reader.position_of(item) != floor:
                seen.add(key)
                candidates.append((at, item))
        entries = self.entries([str(item[schema.OBJECT_KEY]) for _, item in candidates], counter)
        kept: list[tuple[int, dict[str, Any]]] = []
        for at, item in candidates:
            entry = entries.get(str(item[schema.OBJECT_KEY]))
            # An entry of another upload time than its item's: the file was overwritten, its newer item
            # sits elsewhere in the order (or this item was left behind).
            if entry is None or entry.get(schema.UPLOAD_DATE) != item.get(schema.UPLOAD_DATE):
                continue
            public = self.keeps(query, entry)
            if public is not None:
                kept.append((at, public))
        positions = [term_reader.position_of(item) for item in merged.items]

        def after(count: int) -> dict[str, Any]:
            assert merged.start is not None
            through = kept[count - 1][0] + 1  # the page's candidates up to this item are done
            cut = shard_merge.cursor_after(merged.start, merged.sources, positions, through, merged.cursor)
            return {"terms": cut.to_json()}

        return NamePage(
            [public for _, public in kept],
            None if merged.cursor is None else {"terms": merged.cursor.to_json()},
            None,
            counter.scanned,
            counter.requests,
            ORDER_UPLOAD_DATE,
            round_trips=counter.rounds,
            _after=after,
        )

    # -- the entry indexes, each entry checked (enrichment filters alone; an extension by size) ----------

    def _list_filtered(self, query: NameQuery, limit: int, cursor: Any, counter: _Counter) -> NamePage:
        """Enrichment filters alone: the list's own index and order (a user's by time, a bucket's by size)."""
        return self._list_checked(query, limit, cursor, counter, "filter")

    def _list_checked(
        self,
        query: NameQuery,
        limit: int,
        cursor: Any,
        counter: _Counter,
        plan: str,
        *,
        order: Plan | None = None,
    ) -> NamePage:
        """A page of the listing's entry index (`FileReader`; read in `order` if given), keeping the entries
        `_keeps` keeps; the cursor is the reader's, under `plan`."""
        if self._entries_reader is None:
            raise InvalidStartKey(f"made with the {plan} plan, which this reader cannot read")
        listing = replace(query.listing, ascending=query.ascending)
        start = None if cursor is None else ListCursor.from_json(cursor)
        page = self._entries_reader.list_files(
            listing,
            limit=limit,
            start=start,
            z_order_ready=False,
            keep=lambda entry: self.keeps(query, entry) is not None,
            plan=order if start is None else None,
        )
        next_position = None if page.next_cursor is None else {plan: page.next_cursor.to_json()}
        return NamePage(
            page.items,
            next_position,
            None,
            counter.scanned + page.scanned_count,
            counter.requests + page.request_count,
            str(page.ordered_by),
            round_trips=page.round_trips,
            _after=lambda count: {plan: page.cursor_after(count).to_json()},
        )

    # -- the keys plan -----------------------------------------------------------------------------------

    def _list_keys(
        self, query: NameQuery, limit: int, position: Mapping[str, Any] | None, counter: _Counter
    ) -> NamePage:
        prefix = query.prefix or ""
        after_key, after_folder = _keys_position(query, position)
        partitions, index = self.partitions(query.listing)
        room = (_MAX_KEY_BYTES - len(prefix.encode("utf-8", "surrogatepass"))) // 4
        low, high = prefix, prefix + "\U0010ffff" * max(1, room)
        if after_key is not None:
            if query.ascending:
                low = after_key
                if after_folder is not None and after_key.startswith(after_folder):
                    # Past every key of the sub-folder last answered ("a/" -> from "a0").
                    low = after_folder[:-1] + chr(ord(DELIMITER) + 1)
            else:
                high = after_key
        condition = Key(schema.NAME_SORT).between(low, high) if low else Key(schema.NAME_SORT).lte(high)

        def stream(partition: str) -> Iterator[dict[str, Any]]:
            scope_value = key_scope(partition)
            forward = query.ascending
            for page in self._query(
                index, scope_value, condition, counter, ScanIndexForward=forward, Limit=_KEY_CHUNK
            ):
                yield from page

        merged = heapq.merge(
            *[stream(partition) for partition in partitions],
            key=lambda item: str(item[schema.NAME_SORT]),
            reverse=not query.ascending,
        )
        items: list[dict[str, Any]] = []
        folders: list[str] = []
        # Per item: the sub-folders answered before it, and the sub-folder last answered then.
        marks: list[tuple[int, str | None]] = []
        state = {"folder": after_folder, "stopped": None}
        pending: list[dict[str, Any]] = []
        batch = min(MAX_BATCH_GET, max(limit, 10))

        def settle() -> bool:
            """Check the pending candidates against their entries, in order; True once the page is full."""
            entries = self.entries([str(candidate[schema.OBJECT_KEY]) for candidate in pending], counter)
            try:
                for candidate in pending:
                    key = str(candidate[schema.OBJECT_KEY])
                    item = self.keeps(query, entries.get(key))
                    if item is None:
                        continue
                    folder = folder_of(query, prefix, key)
                    if folder is None:
                        items.append(item)
                        marks.append((len(folders), state["folder"]))
                    elif folder != state["folder"]:
                        folders.append(folder)
                        state["folder"] = folder
                    else:
                        continue
                    if len(items) + len(folders) >= limit:
                        state["stopped"] = key
                        return True
                return False
            finally:
                pending.clear()

        full = exhausted = False
        read = 0
        last_read: str | None = None
        for candidate in merged:
            if read >= KEY_PAGE_READ_BUDGET:
                break
            key = str(candidate[schema.NAME_SORT])
            read += 1
            if key == last_read:
                continue  # the key's item in another shard too (left by a shard move): once is enough
            last_read = key
            folder = state["folder"]
            if key == after_key or (folder is not None and key.startswith(folder)):
                continue  # answered already, or in a sub-folder answered already
            if not name_matches(query, str(candidate.get(schema.FILE_NAME, ""))):
                continue
            pending.append(candidate)
            if len(pending) >= batch and settle():
                full = True
                break
        else:
            exhausted = True
        if not full and pending:
            full = settle()
        next_position: dict[str, Any] | None
        if full:
            next_position = {"k": state["stopped"], "f": state["folder"]}
        elif exhausted or last_read is None:
            next_position = None
        else:
            next_position = {"k": last_read, "f": state["folder"]}
        return NamePage(
            items,
            next_position,
            folders,
            counter.scanned,
            counter.requests,
            ORDER_KEY,
            _after=lambda count: {"k": items[count - 1][schema.OBJECT_KEY], "f": marks[count - 1][1]},
            _folders_before=tuple(before for before, _ in marks),
        )


def _keys_position(query: NameQuery, position: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if position is None:
        return None, None
    if not isinstance(position, Mapping) or set(position) != {"k", "f"}:
        raise InvalidStartKey("not a folder list cursor")
    key, folder = position["k"], position["f"]
    if not isinstance(key, str) or (folder is not None and not isinstance(folder, str)):
        raise InvalidStartKey("not a folder list cursor")
    prefix = query.prefix or ""
    if not key.startswith(prefix) or (folder is not None and not folder.startswith(prefix)):
        raise InvalidStartKey("a position is outside the query")
    return key, folder
