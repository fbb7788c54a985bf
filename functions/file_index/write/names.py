"""The writer of the name index (`NameIndex`): a live entry's items put, moved and removed in an order that
never leaves a live entry without them (docs/searching.md).

The items are `file_index.rules.name_items`'s (one term item per term of the name, one key item for
folders; the terms are `file_index.rules.name_terms`'s), and whether a bucket's name index is complete is
`file_index.store.name_index_flag`'s.

The bucket and user partition values are the entry's own (`ShardPlacement`: shards and hot users apply as
on the entry indexes), so a read of a term queries every shard of its bucket or user, as a list does.
The key item holds only what never changes while its key exists in one place (key, name, bucket, user);
the term items hold the upload time too, so an overwrite moves them: the new time's items are put, then
the old time's removed. An overwrite (or a repair, or a restored version) that lands in another shard
than the entry it replaces, as after a raise of `bucketIndexShards` or of a hot user's count, moves the
items with it (`NameIndex.move_entry`): the new shard's items are put, then the old shard's removed. A
delete removes the items of the shards the replaced entry's stored values name.

**Removing never takes a live entry's items for good.** Items are removed without a condition, 25 to a
BatchWriteItem (one conditional DeleteItem an item cost the indexer 17 requests a delete); then the key's
entry is read (consistent) and those of the removed items that its live entry has are put back. Every
writer puts an entry's items after writing the entry, so a write that made an entry live either came
before that read (the read sees it, and its removed items go back) or after it (its own puts come after
the removal). Only an entry of the same key with the same upload time and name has an item of the same
key: a restored version, or a create delivered again.

The items are a lead, never the answer: a search reads the entry of every candidate and keeps it only if
it is live and matches, so an item left behind by a race (a create and a delete of one key written at
once by two indexers) is never shown, and `index-names` removes it. A key with items in two shards is
read once (`name_reader`). What must not happen is a live entry without its items; the writes are
ordered for that (`NameIndex`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from file_index.rules import schema
from file_index.rules.name_items import entry_items, is_live_entry, item_key
from file_index.store import unprocessed
from file_index.store.entries import get_items
from file_index.store.sdk import serialize

# DynamoDB takes at most 25 puts or deletes in one BatchWriteItem.
_BATCH_WRITE_ITEMS = 25


def _key_of(item: Mapping[str, Any]) -> tuple[Any, Any]:
    return item[schema.NAME_SCOPE], item[schema.NAME_SORT]


class NameIndex:
    """Writes the name index items of entries, through a low-level DynamoDB client.

    Order of writes (module docstring): an entry's items are put after the entry, with `since` = the
    entry's orderKey; items are removed unconditionally, then the key's entry (in `entry_table`) is read
    and those of the removed items its live entry has are put back. Puts and removals are BatchWriteItems
    (25 items each, in parallel through `executor` when given): a put that lands after a removal leaves
    items without a live entry, which searches skip and `index-names` removes.
    """

    def __init__(
        self, client: Any, table_name: str, *, entry_table: str, executor: Executor | None = None
    ) -> None:
        self.client = client
        self.table_name = table_name
        self.entry_table = entry_table
        self._executor = executor
        # Write requests made (BatchWriteItem items), for the benchmarks.
        self.items_written = 0
        self._count_lock = threading.Lock()

    def items_of(self, entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
        """The items live `entry` has (`entry_items`)."""
        return entry_items(entry, since)

    def put_entry(self, entry: Mapping[str, Any], since: str | None) -> None:
        """Put the items of live `entry` (plain values; `since` its orderKey, None for none)."""
        self.put_items(self.items_of(entry, since or ""))

    def put_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        requests = [{"PutRequest": {"Item": serialize(item)}} for item in items]
        self._run(self._batch_write, _chunks(requests))

    def delete_keys(self, keys: Iterable[Mapping[str, Any]]) -> None:
        """Delete items by their keys (unconditionally, 25 to a BatchWriteItem)."""
        requests = [{"DeleteRequest": {"Key": serialize(dict(key))}} for key in keys]
        self._run(self._batch_write, _chunks(requests))

    def delete_entry(self, entry: Mapping[str, Any]) -> None:
        """Remove the items of `entry`, which a delete (or a repair) replaced; those its key's live entry
        has, should one be there by then, are put back."""
        self._remove(entry, self.items_of(entry, ""))

    def move_entry(self, old: Mapping[str, Any], new: Mapping[str, Any], since: str | None) -> None:
        """Give live `new` its items in place of those of live `old`, the entry of the same key it replaced
        (`since`: `new`'s orderKey, None for none). `new`'s items that `old` lacks (or holds with other
        values: an overwrite moves the term items to its upload time, a shard raise moves every item) are
        put, then `old`'s that `new` lacks are removed (those the key's live entry has by then put back).
        Nothing when both have the same items."""
        old_items = self.items_of(old, "")
        had = {_content(item) for item in old_items}
        self.put_items([item for item in self.items_of(new, since or "") if _content(item) not in had])
        self._delete_left(old, old_items, new)

    def delete_left_behind(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Remove the items of `old` that `new`, the entry of the same key that replaced it, lacks (those
        the key's live entry has by then put back)."""
        self._delete_left(old, self.items_of(old, ""), new)

    def _delete_left(
        self, old: Mapping[str, Any], old_items: list[dict[str, Any]], new: Mapping[str, Any]
    ) -> None:
        kept = {_key_of(item) for item in self.items_of(new, "")}
        self._remove(old, [item for item in old_items if _key_of(item) not in kept])

    def _remove(self, entry: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> None:
        """Delete `items` of `entry`'s key, then put back those the key's live entry has (module
        docstring: a write that made it live before the read gets its items back here, one after it puts
        them itself)."""
        if not items:
            return
        self.delete_keys(item_key(item) for item in items)
        object_key = str(entry[schema.OBJECT_KEY])
        current = get_items(self.client, self.entry_table, [object_key]).get(object_key)
        if not is_live_entry(current):
            return
        removed = {_key_of(item) for item in items}
        since = str(current.get(schema.ORDER_KEY) or "")
        self.put_items([item for item in self.items_of(current, since) if _key_of(item) in removed])

    def _run(self, call: Callable[[Any], None], tasks: Sequence[Any]) -> None:
        if self._executor is None or len(tasks) < 2:
            for task in tasks:
                call(task)
            return
        for _ in self._executor.map(call, tasks):
            pass

    def _count(self, written: int) -> None:
        with self._count_lock:
            self.items_written += written

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        self._count(len(requests))
        unprocessed.batch_write(self.client, {self.table_name: requests})


def _chunks(requests: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    size = _BATCH_WRITE_ITEMS
    return [requests[start : start + size] for start in range(0, len(requests), size)]


def _content(item: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """An item's key and values, `since` aside (an item whose values do not change is not written again)."""
    return tuple(sorted((name, value) for name, value in item.items() if name != schema.NAME_SINCE))
