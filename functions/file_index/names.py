"""The name index that finds a file by the terms of its name, by folder and by extension (docs/searching.md).

A file's **name** is the last `/` segment of its file id: `USER001_FILE001.txt` is named `FILE001.txt`,
`USER001/reports/Q3.pdf` is named `Q3.pdf`. What a name is indexed under and which query words match it
are `file_index.name_terms`'s rules, the only ones.

The name index is a table of its own (`schema.NAME_TABLE_NAME`). For each live entry it holds:

- one **term item** per distinct term of its name (`name_terms.name_terms`): `nameScope` (partition key)
  `{bucket partition}|:{term}`, `nameTerm` (sort key) `{uploadDate} {key digest}` (so a term's items
  read newest first), `nameUser` (the GSI's partition key) `{user partition}|:{term}`, and the
  `objectKey`, `fileName`, `size`, `uploadDate` a search filters on before reading the entry;
- one **key item** for folders: `nameScope` `{bucket partition}|/`, `nameTerm` the key, `nameUser`
  `{user partition}|/`.

A bucket's name index is **complete** when its term and key items cover every live entry of the bucket:
its state item (`{bucket}|!`, `termItems`) or the table's (`*|!`) says so (`TermItemsState`, kept a
minute while not set; `terms_complete` for a reader). Writers always write the items, so a name table
created together with an entry table that holds no entry yet is complete from the start
(`mark_table_complete`, at deploy and at the local stack's start); a name table added beside entries
(a table of 0.3.0, which had no name index) is complete once `file_search_admin index-names` has given
every entry its items and set the flag. Until then a name list is refused (`NameIndexIncomplete`)
rather than answered without the files written before.

The bucket and user partition values are the entry's own (`ShardPlacement`: shards and hot users apply as
on the entry indexes), so a read of a term queries every shard of its bucket or user, as a list does.
The key item holds only what never changes while its key exists in one place (key, name, bucket, user);
the term items hold the upload time too, so an overwrite moves them: the new time's items are put, then
the old time's removed where no newer than the replaced entry. An overwrite (or a repair, or a restored
version) that lands in another shard than the entry it replaces, as after a raise of `bucketIndexShards`
or of a hot user's count, moves the items with it (`NameIndex.move_entry`): the new shard's items are put,
then the old shard's removed where no newer than the replaced entry. A delete removes the items of the
shards the replaced entry's stored values name.

The items are a lead, never the answer: a search reads the entry of every candidate and keeps it only if
it is live and matches, so an item left behind by a race (a create and a delete of one key written at
once by two indexers) is never shown, and `index-names` removes it. A key with items in two shards is
read once (`name_reader`). What must not happen is a live entry without its items; the writes are
ordered for that (`NameIndex`).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any, TypeGuard

from boto3.dynamodb.types import TypeSerializer

from file_index import schema, unprocessed
from file_index.name_terms import name_terms
from file_index.unprocessed import UnprocessedKeysError

# The longest `ext` a list takes, in characters.
MAX_EXTENSION = 64
# `nameScope` suffix of the key items (no term starts with "/": a term is letters and digits).
KEY_SCOPE = "/"
SCOPE_SEPARATOR = "|"
# `nameScope` suffix mark of the term items (`{partition}|:{term}`).
TERM_MARK = ":"
# The state items (`{bucket}|!`, or `*|!` for every bucket of the table): in no scope a search reads.
STATE_MARK = "!"
ALL_BUCKETS = "*"
STATE_TERM = "termItems"
TERMS_COMPLETE = "complete"  # BOOL: the name index of the bucket (every bucket for `*`) is complete
COMPLETED_AT = "completedAt"  # ISO time the flag was first set
# How long a reader keeps a flag it read unset (a set flag is kept: it never goes back).
STATE_TTL_SECONDS = 60.0
# DynamoDB takes at most 25 puts or deletes in one BatchWriteItem.
_BATCH_WRITE_ITEMS = 25

_serializer = TypeSerializer()


class NameIndexIncomplete(RuntimeError):
    """A name list of a bucket whose name index is not complete yet (`file_search_admin index-names` has
    not run on it): its answer would miss the files indexed before the name index. The search answers it
    with 503, a `Retry-After` of minutes and this message."""

    def __init__(self, bucket: str | None) -> None:
        self.bucket = bucket
        named = f"bucket {bucket}" if bucket is not None else "this bucket"
        flag = f" --bucket {bucket}" if bucket is not None else ""
        super().__init__(
            f"the name index of {named} is not complete yet: name, folder and extension lists answer "
            f"once `file_search_admin index-names{flag}` has run"
        )


def name_of(file_id: str) -> str:
    """A file's name: the last `/` segment of its file id."""
    return file_id.rsplit("/", 1)[-1]


def normalize_extension(ext: str) -> str:
    """An `ext` parameter as compared: without a leading dot, case-folded."""
    return ext.removeprefix(".").casefold()


def has_extension(name: str, ext: str) -> bool:
    """`name` ends with "." + `ext` (normalized), case-insensitively: `a.TAR.gz` has `gz` and `tar.gz`."""
    return bool(ext) and name.casefold().endswith("." + ext)


def key_scope(partition: str) -> str:
    return f"{partition}{SCOPE_SEPARATOR}{KEY_SCOPE}"


def key_digest(object_key: str) -> str:
    return hashlib.blake2b(object_key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def term_scope(partition: str, term: str) -> str:
    """`nameScope` (or `nameUser`, with a user partition) of the term items of `term`."""
    return f"{partition}{SCOPE_SEPARATOR}{TERM_MARK}{term}"


def time_term(upload_date: str, object_key: str) -> str:
    """`nameTerm` of a term item: the entry's upload time, then its key's digest (newest last)."""
    return f"{upload_date} {key_digest(object_key)}"


def term_items(entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
    """The term items of a live entry: one per distinct term of its name (`name_terms.name_terms`), in
    its stored `bucketName` (and `uploadUser`) partition, ordered by its `uploadDate`."""
    object_key = str(entry[schema.OBJECT_KEY])
    bucket_partition = str(entry[schema.BUCKET_NAME])
    user_partition = entry.get(schema.UPLOAD_USER)
    name = name_of(str(entry.get(schema.FILE_ID) or object_key))
    upload_date = str(entry[schema.UPLOAD_DATE])
    sort_key = time_term(upload_date, object_key)
    items: list[dict[str, Any]] = []
    for term in name_terms(name):
        item: dict[str, Any] = {
            schema.NAME_SCOPE: term_scope(bucket_partition, term),
            schema.NAME_TERM: sort_key,
            schema.OBJECT_KEY: object_key,
            schema.FILE_NAME: name,
            schema.SIZE: entry[schema.SIZE],
            schema.UPLOAD_DATE: upload_date,
            schema.NAME_SINCE: since,
        }
        if user_partition is not None:
            item[schema.NAME_USER] = term_scope(str(user_partition), term)
        items.append(item)
    return items


def key_item(entry: Mapping[str, Any], since: str) -> dict[str, Any]:
    """The key item of a live entry (its stored `bucketName` and `uploadUser` partition values)."""
    object_key = str(entry[schema.OBJECT_KEY])
    user_partition = entry.get(schema.UPLOAD_USER)
    item = {
        schema.OBJECT_KEY: object_key,
        schema.FILE_NAME: name_of(str(entry.get(schema.FILE_ID) or object_key)),
        schema.NAME_SINCE: since,
        schema.NAME_SCOPE: key_scope(str(entry[schema.BUCKET_NAME])),
        schema.NAME_TERM: object_key,
    }
    if user_partition is not None:
        item[schema.NAME_USER] = key_scope(str(user_partition))
    return item


def state_key(bucket: str) -> dict[str, str]:
    """The key of the state item of `bucket`'s name index (a public bucket name, or ALL_BUCKETS)."""
    return {schema.NAME_SCOPE: f"{bucket}{SCOPE_SEPARATOR}{STATE_MARK}", schema.NAME_TERM: STATE_TERM}


class TermItemsState:
    """Whether a bucket's name index is complete, read from one name table (an unset flag kept `ttl`
    seconds).

    Complete when the bucket's state item or the table's (`ALL_BUCKETS`, written when the table was
    created beside an entry table without entries) says so; one BatchGetItem of both reads it. A flag never
    goes back to incomplete, so a complete bucket is not read again.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        ttl: float = STATE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self._ttl = ttl
        self._clock = clock
        # bucket: (when read, complete)
        self._read: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def complete(self, bucket: str) -> bool:
        now = self._clock()
        with self._lock:
            cached = self._read.get(bucket)
        if cached is not None and (cached[1] or now - cached[0] < self._ttl):
            return cached[1]
        complete, whole = self._fetch(bucket)
        if not complete and not whole:
            # Unsure (DynamoDB kept leaving the read unprocessed): a throttle, not an incomplete index.
            raise UnprocessedKeysError(f"the name index state of bucket {bucket} was left unread")
        with self._lock:
            self._read[bucket] = (now, complete)
        return complete

    def mark_complete(self, bucket: str, now: datetime) -> float:
        """Set the bucket's flag (its first `completedAt` kept); returns that `completedAt` (POSIX time)."""
        response = self.client.update_item(
            TableName=self.table_name,
            Key=_serialize(state_key(bucket)),
            UpdateExpression="SET #c = :true, #at = if_not_exists(#at, :now)",
            ExpressionAttributeNames={"#c": TERMS_COMPLETE, "#at": COMPLETED_AT},
            ExpressionAttributeValues={":true": {"BOOL": True}, ":now": {"S": _iso(now)}},
            ReturnValues="ALL_NEW",
        )
        with self._lock:
            self._read[bucket] = (self._clock(), True)
        return datetime.fromisoformat(response["Attributes"][COMPLETED_AT]["S"]).timestamp()

    def _fetch(self, bucket: str) -> tuple[bool, bool]:
        """Whether a flag was found set, and whether both items were read."""
        # The bucket's state item and the table's; the table's once when asked for itself.
        keys = [_serialize(state_key(name)) for name in dict.fromkeys((bucket, ALL_BUCKETS))]
        got = unprocessed.batch_get(self.client, {self.table_name: {"Keys": keys, "ConsistentRead": True}})
        found = any(item.get(TERMS_COMPLETE, {}).get("BOOL") for item in got.of(self.table_name))
        return found, got.whole


def mark_table_complete(client: Any, table_name: str, now: datetime) -> bool:
    """Mark every bucket of `table_name` complete if the table holds no item at all. Returns whether it did.

    Only for a name table whose entry table holds no live entry (checked by the caller): every entry it
    will hold then gets its items from its first write."""
    if client.scan(TableName=table_name, Limit=1).get("Items"):
        return False
    item = {**state_key(ALL_BUCKETS), TERMS_COMPLETE: True, COMPLETED_AT: _iso(now)}
    client.put_item(TableName=table_name, Item=_serialize(item))
    return True


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_states: weakref.WeakKeyDictionary[Any, dict[str, TermItemsState]] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def terms_complete(client: Any, table_name: str, bucket: str) -> bool:
    """Whether `bucket`'s name index is complete in `table_name` (while not, a read at most every
    STATE_TTL_SECONDS per client, table and bucket)."""
    with _states_lock:
        state = _states.setdefault(client, {}).get(table_name)
        if state is None:
            state = _states[client][table_name] = TermItemsState(client, table_name)
    return state.complete(bucket)


def item_key(item: Mapping[str, Any]) -> dict[str, Any]:
    return {schema.NAME_SCOPE: item[schema.NAME_SCOPE], schema.NAME_TERM: item[schema.NAME_TERM]}


def entry_items(entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
    """Every item a live entry has: its key item and its term items."""
    return [key_item(entry, since), *term_items(entry, since)]


def _key_of(item: Mapping[str, Any]) -> tuple[Any, Any]:
    return item[schema.NAME_SCOPE], item[schema.NAME_TERM]


def is_live_entry(item: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """An entry in the indexes (not a tombstone, not a bare bookkeeping item)."""
    return item is not None and not item.get(schema.DELETED) and schema.BUCKET_NAME in item


class NameIndex:
    """Writes the name index items of entries, through a low-level DynamoDB client.

    Order of writes (module docstring): an entry's items are put after the entry, with `since` = the
    entry's orderKey; a delete removes the items of the entry it replaced only where `since` is older than
    the delete, so a newer create's items, put before or after, survive. Puts are unconditional
    BatchWriteItems (25 items each, in parallel through `executor` when given): a put that lands after a
    delete leaves items without a live entry, which searches skip and `index-names` removes.
    """

    def __init__(self, client: Any, table_name: str, executor: Executor | None = None) -> None:
        self.client = client
        self.table_name = table_name
        self._executor = executor
        # Write requests made (PutItem/DeleteItem items, BatchWriteItem items), for the benchmarks.
        self.items_written = 0
        self._count_lock = threading.Lock()

    def items_of(self, entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
        """The items live `entry` has (`entry_items`)."""
        return entry_items(entry, since)

    def put_entry(self, entry: Mapping[str, Any], since: str | None) -> None:
        """Put the items of live `entry` (plain values; `since` its orderKey, None for none)."""
        self.put_items(self.items_of(entry, since or ""))

    def put_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        requests = [{"PutRequest": {"Item": _serialize(item)}} for item in items]
        self._run(self._batch_write, _chunks(requests))

    def delete_keys(self, keys: Iterable[Mapping[str, Any]]) -> None:
        """Delete items by their keys (unconditionally, 25 to a BatchWriteItem)."""
        requests = [{"DeleteRequest": {"Key": _serialize(dict(key))}} for key in keys]
        self._run(self._batch_write, _chunks(requests))

    def delete_entry(self, entry: Mapping[str, Any], order: str) -> None:
        """Remove the items of `entry`, which a delete at position `order` replaced, where older than it."""
        self._delete_older(self.items_of(entry, ""), order)

    def move_entry(self, old: Mapping[str, Any], new: Mapping[str, Any], since: str | None) -> None:
        """Give live `new` its items in place of those of live `old`, the entry of the same key it replaced
        (`since`: `new`'s orderKey, None for none). `new`'s items that `old` lacks (or holds with other
        values: an overwrite moves the term items to its upload time, a shard raise moves every item) are
        put, then `old`'s that `new` lacks are removed where no newer than `old` itself, so the items a
        newer write put there meanwhile stay. Nothing when both have the same items."""
        old_items = self.items_of(old, "")
        had = {_content(item) for item in old_items}
        self.put_items([item for item in self.items_of(new, since or "") if _content(item) not in had])
        self._delete_left(old, old_items, new)

    def delete_left_behind(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Remove the items of `old` that `new`, the entry of the same key that replaced it, lacks, where
        written no later than `old` (`since` up to its orderKey, or none)."""
        self._delete_left(old, self.items_of(old, ""), new)

    def _delete_left(
        self, old: Mapping[str, Any], old_items: list[dict[str, Any]], new: Mapping[str, Any]
    ) -> None:
        kept = {_key_of(item) for item in self.items_of(new, "")}
        left = [item for item in old_items if _key_of(item) not in kept]
        # "" < "\0": up to old's own position, items without one included.
        self._delete_older(left, str(old.get(schema.ORDER_KEY) or "") + "\0")

    def _delete_older(self, items: Sequence[Mapping[str, Any]], order: str) -> None:
        """Delete each of `items` (by its key) where its `since` is older than `order` (or absent): one
        conditional DeleteItem each (BatchWriteItem takes no condition), in parallel through the executor."""
        self._run(lambda item: self._delete_if_older(item, order), list(items))

    def _delete_if_older(self, item: Mapping[str, Any], order: str) -> None:
        self._count(1)
        # A newer create's item fails the condition: it stays.
        with contextlib.suppress(self.client.exceptions.ConditionalCheckFailedException):
            self.client.delete_item(
                TableName=self.table_name,
                Key=_serialize(item_key(item)),
                ConditionExpression="attribute_not_exists(#since) OR #since < :order",
                ExpressionAttributeNames={"#since": schema.NAME_SINCE},
                ExpressionAttributeValues={":order": {"S": order}},
            )

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


def _serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in item.items()}
