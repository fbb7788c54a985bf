"""Words of a file's name, and the name index that finds a file by them (docs/searching.md).

A file's **name** is the last `/` segment of its file id: `USER001_FILE001.txt` is named `FILE001.txt`,
`USER001/reports/Q3.pdf` is named `Q3.pdf`. Its **words**:

1. The name is decomposed (Unicode NFKD) and its combining marks dropped, so `Café` reads `Cafe`.
2. It is cut at every character that is not a letter or a digit (Unicode categories L* and N*).
3. Each piece is cut again where a lower-case letter meets an upper-case one (`reportQ3final`:
   `report|Q3final`), before the last capital of a run of capitals followed by a lower-case letter
   (`HTMLParser`: `HTML|Parser`), and where letters meet digits (`Q3final`: `Q|3|final`).
4. Each word is case-folded (`Straße` reads `strasse`).

A query word matches a name when it is the start of one of the name's words (`inv` matches `Invoice`,
`voice` does not); a query matches when every one of its words does.

The name index is a table of its own (`schema.NAME_TABLE_NAME`). For each live entry it holds:

- one **term item** per distinct term of its name (`name_terms.name_terms`): `nameScope` (partition key)
  `{bucket partition}|:{term}`, `nameTerm` (sort key) `{uploadDate} {key digest}` (so a term's items
  read newest first), `nameUser` (the GSI's partition key) `{user partition}|:{term}`, and the
  `objectKey`, `fileName`, `size`, `uploadDate` a search filters on before reading the entry;
- one item of the key: `nameScope` `{bucket partition}|/`, `nameTerm` the key, `nameUser`
  `{user partition}|/`;
- while its bucket moves to the term items, the **old word items**, one per distinct word:
  `nameScope` `{bucket partition}|{first character}`, `nameTerm` `{word} {key digest}`.

A bucket's term items are **complete** when its state item (`{bucket}|!`, `termItems`) or the table's
(`*|!`: a name table marked complete when found empty, `mark_table_complete`, which the local stack does
at start) says so (`TermItemsState`, cached a minute; `terms_complete` for a reader). Until then searches
read the old word items and writers write both layouts; `file_search_admin index-names` gives every entry
its term items, sets the flag, and removes the old word items OLD_WORDS_SECONDS later, when no reader can
still hold the flag as unset. Writers keep writing and removing the word items until then too, then only
the term and key items: a word item left by a writer that still held the flag as unset is never read, and
the next `index-names` removes it.

The bucket and user partition values are the entry's own (`ShardPlacement`: shards and hot users apply as
on the entry indexes), so a read of a word queries every shard of its bucket or user, as a list does.
The key and word items hold only what never changes while its key exists in one place (key, name,
bucket, user); the term items hold the upload time too, so an overwrite moves them: the new time's items
are put, then the old time's removed where no newer than the replaced entry. An overwrite (or a repair,
or a restored version) that lands in another shard than the entry it replaces,
as after a raise of `bucketIndexShards` or of a hot user's count, moves the items with it
(`NameIndex.move_entry`): the new shard's items are put, then the old shard's removed where no newer than
the replaced entry. A delete removes the items of the shards the replaced entry's stored values name.

The items are a lead, never the answer: a search reads the entry of every candidate and keeps it only if
it is live and matches, so an item left behind by a race (a create and a delete of one key written at
once by two indexers, or two writers of different layouts moving one key at once) is never shown, and
`index-names` removes it. A key with items in two shards is read once (`name_reader`). What must not
happen is a live entry without its items; the writes are ordered for that (`NameIndex`).

Over 400 lines: the words, the item layouts, the flag that says which layout is read, and the writer of
the items are one contract, read together.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

from boto3.dynamodb.types import TypeSerializer

from file_index import schema, shards, unprocessed

# The first characters of an indexed word (a longer query word is looked up by these and checked whole).
MAX_INDEXED_WORD = 64
# `nameScope` suffix of the key items (no word starts with "/": a word is letters and digits).
KEY_SCOPE = "/"
SCOPE_SEPARATOR = "|"
# `nameScope` suffix mark of the term items (`{partition}|:{term}`): no old word scope starts with ":".
TERM_MARK = ":"
# The state items (`{bucket}|!`, or `*|!` for every bucket of the table): in no scope a search reads.
STATE_MARK = "!"
ALL_BUCKETS = "*"
STATE_TERM = "termItems"
TERMS_COMPLETE = "complete"  # BOOL: the term items of the bucket (every bucket for `*`) are complete
COMPLETED_AT = "completedAt"  # ISO time the flag was set: old word items go once readers have seen it
OLD_WORDS_REMOVED = "oldWordsRemoved"  # BOOL: the move removed the old word items
# How long a reader or writer keeps a flag it read.
STATE_TTL_SECONDS = 60.0
# How long after the flag is set writers keep the old word items and the move waits before removing them:
# a reader's cache, and a margin for the clocks of the machines that set and read `completedAt`.
OLD_WORDS_SECONDS = STATE_TTL_SECONDS + 30.0
# DynamoDB takes at most 25 puts or deletes in one BatchWriteItem.
_BATCH_WRITE_ITEMS = 25

_serializer = TypeSerializer()


def _strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.category(ch).startswith("M"))


def _kind(ch: str) -> str:
    """`u` upper-case letter, `l` other letter, `d` digit (any number), `s` separator."""
    category = unicodedata.category(ch)
    if category in ("Lu", "Lt"):
        return "u"
    if category.startswith("L"):
        return "l"
    if category.startswith("N"):
        return "d"
    return "s"


def words(text: str) -> list[str]:
    """The words of `text` in order, repeats included (module docstring)."""
    result: list[str] = []
    current: list[str] = []
    kinds: list[str] = []

    def flush() -> None:
        if current:
            word = _strip_marks("".join(current).casefold())
            # Case folding may yield marks or separators (`İ` folds to `i` + a combining dot).
            result.extend(part for part in _split_separators(word) if part)
        current.clear()
        kinds.clear()

    for ch in _strip_marks(text):
        kind = _kind(ch)
        if kind == "s":
            flush()
            continue
        if current:
            previous = kinds[-1]
            digits_meet_letters = (previous == "d") != (kind == "d")
            if digits_meet_letters or (previous == "l" and kind == "u" and current[-1].islower()):
                flush()
            elif previous == "u" and kind == "l" and len(kinds) >= 2 and kinds[-2] == "u" and ch.islower():
                # `HTMLParser`: the last capital starts the next word.
                last = current.pop()
                kinds.pop()
                flush()
                current.append(last)
                kinds.append("u")
        current.append(ch)
        kinds.append(kind)
    flush()
    return result


def _split_separators(word: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    for ch in word:
        if _kind(ch) == "s":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def name_of(file_id: str) -> str:
    """A file's name: the last `/` segment of its file id."""
    return file_id.rsplit("/", 1)[-1]


def matches_words(name: str, query_words: Sequence[str]) -> bool:
    """Every query word is the start of a word of `name`."""
    name_words = set(words(name))
    return all(any(word.startswith(query) for word in name_words) for query in query_words)


def normalize_extension(ext: str) -> str:
    """An `ext` parameter as compared: without a leading dot, case-folded."""
    return ext.removeprefix(".").casefold()


def has_extension(name: str, ext: str) -> bool:
    """`name` ends with "." + `ext` (normalized), case-insensitively: `a.TAR.gz` has `gz` and `tar.gz`."""
    return bool(ext) and name.casefold().endswith("." + ext)


def lookup_word(query_words: Sequence[str]) -> str:
    """The query word whose items are read: the longest (the rarest, as a rule), first among equals."""
    return max(query_words, key=len)[:MAX_INDEXED_WORD]


def word_scope(partition: str, word: str) -> str:
    return f"{partition}{SCOPE_SEPARATOR}{word[0]}"


def key_scope(partition: str) -> str:
    return f"{partition}{SCOPE_SEPARATOR}{KEY_SCOPE}"


def key_digest(object_key: str) -> str:
    return hashlib.blake2b(object_key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def word_term(word: str, object_key: str) -> str:
    return f"{word} {key_digest(object_key)}"


def term_scope(partition: str, term: str) -> str:
    """`nameScope` (or `nameUser`, with a user partition) of the term items of `term`."""
    return f"{partition}{SCOPE_SEPARATOR}{TERM_MARK}{term}"


def time_term(upload_date: str, object_key: str) -> str:
    """`nameTerm` of a term item: the entry's upload time, then its key's digest (newest last)."""
    return f"{upload_date} {key_digest(object_key)}"


def _name_terms(name: str) -> list[str]:
    # Imported here: `name_terms` reads `words` from this module.
    from file_index.name_terms import name_terms

    return name_terms(name)


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
    for term in _name_terms(name):
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


def indexed_words(name: str) -> list[str]:
    """The distinct words of `name` as indexed (each cut to MAX_INDEXED_WORD characters), in order."""
    return list(dict.fromkeys(word[:MAX_INDEXED_WORD] for word in words(name)))


def name_items(entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
    """The name index items of a live entry (its stored `bucketName` and `uploadUser` partition values)."""
    object_key = str(entry[schema.OBJECT_KEY])
    bucket_partition = str(entry[schema.BUCKET_NAME])
    user_partition = entry.get(schema.UPLOAD_USER)
    name = name_of(str(entry.get(schema.FILE_ID) or object_key))
    common = {schema.OBJECT_KEY: object_key, schema.FILE_NAME: name, schema.NAME_SINCE: since}
    items: list[dict[str, Any]] = []
    key_item = {**common, schema.NAME_SCOPE: key_scope(bucket_partition), schema.NAME_TERM: object_key}
    if user_partition is not None:
        key_item[schema.NAME_USER] = key_scope(str(user_partition))
    items.append(key_item)
    for word in indexed_words(name):
        item = {
            **common,
            schema.NAME_SCOPE: word_scope(bucket_partition, word),
            schema.NAME_TERM: word_term(word, object_key),
        }
        if user_partition is not None:
            item[schema.NAME_USER] = word_scope(str(user_partition), word)
        items.append(item)
    return items


def state_key(bucket: str) -> dict[str, str]:
    """The key of the term-items state item of `bucket` (a public bucket name, or ALL_BUCKETS)."""
    return {schema.NAME_SCOPE: f"{bucket}{SCOPE_SEPARATOR}{STATE_MARK}", schema.NAME_TERM: STATE_TERM}


class TermItemsState:
    """Whether a bucket's term items are complete, read from one name table and kept `ttl` seconds.

    Complete when the bucket's state item or the table's (`ALL_BUCKETS`, written when the table was
    created empty) says so; one BatchGetItem of both reads it. A flag never goes back to incomplete, so a
    complete bucket is not read again.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        ttl: float = STATE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self._ttl = ttl
        self._clock = clock
        self._wall_clock = wall_clock
        # bucket: (when read, completedAt as a POSIX time, None while incomplete)
        self._read: dict[str, tuple[float, float | None]] = {}
        self._lock = threading.Lock()

    def complete(self, bucket: str) -> bool:
        return self._completed_at(bucket) is not None

    def completed_at(self, bucket: str) -> float | None:
        """When the bucket's term items became complete (POSIX time; the earlier of its flag and the
        table's), None while they are not."""
        return self._completed_at(bucket)

    def words_kept(self, bucket: str) -> bool:
        """Whether writers still keep the bucket's old word items: until OLD_WORDS_SECONDS after the flag
        was set, as a reader may have read it as incomplete up to STATE_TTL_SECONDS before."""
        completed_at = self._completed_at(bucket)
        return completed_at is None or self._wall_clock() < completed_at + OLD_WORDS_SECONDS

    def mark_complete(self, bucket: str, now: datetime) -> float:
        """Set the bucket's flag (its first `completedAt` kept); returns when the bucket became complete
        (`completed_at`) as a POSIX time."""
        response = self.client.update_item(
            TableName=self.table_name,
            Key=_serialize(state_key(bucket)),
            UpdateExpression="SET #c = :true, #at = if_not_exists(#at, :now)",
            ExpressionAttributeNames={"#c": TERMS_COMPLETE, "#at": COMPLETED_AT},
            ExpressionAttributeValues={":true": {"BOOL": True}, ":now": {"S": _iso(now)}},
            ReturnValues="ALL_NEW",
        )
        completed_at = datetime.fromisoformat(response["Attributes"][COMPLETED_AT]["S"]).timestamp()
        with self._lock:
            cached = self._read.get(bucket)
            if cached is not None and cached[1] is not None:
                completed_at = min(completed_at, cached[1])  # the table's flag, when earlier
            self._read[bucket] = (self._clock(), completed_at)
        return completed_at

    def mark_old_words_removed(self, bucket: str) -> None:
        self.client.update_item(
            TableName=self.table_name,
            Key=_serialize(state_key(bucket)),
            UpdateExpression="SET #r = :true",
            ExpressionAttributeNames={"#r": OLD_WORDS_REMOVED},
            ExpressionAttributeValues={":true": {"BOOL": True}},
        )

    def _completed_at(self, bucket: str) -> float | None:
        now = self._clock()
        with self._lock:
            cached = self._read.get(bucket)
        if cached is not None and (cached[1] is not None or now - cached[0] < self._ttl):
            return cached[1]
        completed_at, whole = self._fetch(bucket)
        if whole:  # a read DynamoDB left unfinished (throttled) is not kept: the next one asks again
            with self._lock:
                self._read[bucket] = (now, completed_at)
        return completed_at

    def _fetch(self, bucket: str) -> tuple[float | None, bool]:
        """The completion time found (None: not complete), and whether both items were read."""
        # The bucket's state item and the table's; the table's once when asked for itself.
        keys = [_serialize(state_key(name)) for name in dict.fromkeys((bucket, ALL_BUCKETS))]
        got = unprocessed.batch_get(self.client, {self.table_name: {"Keys": keys, "ConsistentRead": True}})
        times = [
            datetime.fromisoformat(item.get(COMPLETED_AT, {}).get("S") or "1970-01-01T00:00:00Z").timestamp()
            for item in got.of(self.table_name)
            if item.get(TERMS_COMPLETE, {}).get("BOOL")
        ]
        return (min(times) if times else None), got.whole


def mark_table_complete(client: Any, table_name: str, now: datetime) -> bool:
    """Mark every bucket of `table_name` complete if the table holds no item at all (a name table just
    created: every entry it will hold gets its term items from its first write). Returns whether it did.

    No reader can have read word items from it, so its `completedAt` is set OLD_WORDS_SECONDS back:
    writers write no word item from the start."""
    if client.scan(TableName=table_name, Limit=1).get("Items"):
        return False
    since = _iso(now - timedelta(seconds=OLD_WORDS_SECONDS))
    item = {**state_key(ALL_BUCKETS), TERMS_COMPLETE: True, COMPLETED_AT: since, OLD_WORDS_REMOVED: True}
    client.put_item(TableName=table_name, Item=_serialize(item))
    return True


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_states: weakref.WeakKeyDictionary[Any, dict[str, TermItemsState]] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def terms_complete(client: Any, table_name: str, bucket: str) -> bool:
    """Whether `bucket`'s term items are complete in `table_name` (a read at most every
    STATE_TTL_SECONDS per client, table and bucket)."""
    with _states_lock:
        state = _states.setdefault(client, {}).get(table_name)
        if state is None:
            state = _states[client][table_name] = TermItemsState(client, table_name)
    return state.complete(bucket)


def item_key(item: Mapping[str, Any]) -> dict[str, Any]:
    return {schema.NAME_SCOPE: item[schema.NAME_SCOPE], schema.NAME_TERM: item[schema.NAME_TERM]}


def entry_items(entry: Mapping[str, Any], since: str, *, with_words: bool) -> list[dict[str, Any]]:
    """Every item a live entry has: its key item and term items, and its old word items `with_words`."""
    items = name_items(entry, since)
    return [*(items if with_words else items[:1]), *term_items(entry, since)]


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

    The old word items are written and removed beside the term items only while the entry's bucket's term
    items are not complete (`TermItemsState`, read at most once a minute per bucket).
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        executor: Executor | None = None,
        *,
        state: TermItemsState | None = None,
    ) -> None:
        self.client = client
        self.table_name = table_name
        self._executor = executor
        self.state = state or TermItemsState(client, table_name)
        # Write requests made (PutItem/DeleteItem items, BatchWriteItem items), for the benchmarks.
        self.items_written = 0
        self._count_lock = threading.Lock()

    def items_of(self, entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
        """The items live `entry` has under its bucket's flag (`entry_items`)."""
        bucket = str(entry[schema.BUCKET_NAME]).partition(shards.SHARD_SEPARATOR)[0]
        return entry_items(entry, since, with_words=self.state.words_kept(bucket))

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
