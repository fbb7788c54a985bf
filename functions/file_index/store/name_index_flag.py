"""The name index's state item: whether a bucket's name index is complete (`NameIndexFlag`).

A bucket's name index is **complete** when its term and key items cover every live entry of the bucket:
its state item (`{bucket}|!`, `termItems`) or the table's (`*|!`) says so (`NameIndexFlag`, kept a
minute while not set; `terms_complete` for a reader). Writers always write the items, so a name table
created together with an entry table that holds no entry yet is complete from the start
(`mark_table_complete`, at deploy and at the local stack's start); a name table added beside entries
(a table of 0.3.0, which had no name index) is complete once `file_search_admin index-names` has given
every entry its items and set the flag. Until then a name list is refused (`NameIndexIncomplete`)
rather than answered without the files written before.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime
from typing import Any

from file_index.rules import schema
from file_index.rules.name_items import SCOPE_SEPARATOR
from file_index.rules.objects import iso_utc_millis
from file_index.store import unprocessed
from file_index.store.sdk import serialize

# The state items (`{bucket}|!`, or `*|!` for every bucket of the table): in no scope a search reads.
FLAG_MARK = "!"
ALL_BUCKETS = "*"
FLAG_SORT = "termItems"
TERMS_COMPLETE = "complete"  # BOOL: the name index of the bucket (every bucket for `*`) is complete
COMPLETED_AT = "completedAt"  # ISO time the flag was first set
# How long a reader keeps a flag it read unset (a set flag is kept: it never goes back).
FLAG_TTL_SECONDS = 60.0


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


def flag_key(bucket: str) -> dict[str, str]:
    """The key of the state item of `bucket`'s name index (a public bucket name, or ALL_BUCKETS)."""
    return {schema.NAME_SCOPE: f"{bucket}{SCOPE_SEPARATOR}{FLAG_MARK}", schema.NAME_SORT: FLAG_SORT}


class NameIndexFlag:
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
        ttl: float = FLAG_TTL_SECONDS,
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
        complete, got = self._fetch(bucket)
        if not complete:
            # Unsure (DynamoDB kept leaving the read unprocessed) is a throttle, not an incomplete index.
            got.raise_if_left()
        with self._lock:
            self._read[bucket] = (now, complete)
        return complete

    def mark_complete(self, bucket: str, now: datetime) -> float:
        """Set the bucket's flag (its first `completedAt` kept); returns that `completedAt` (POSIX time)."""
        response = self.client.update_item(
            TableName=self.table_name,
            Key=serialize(flag_key(bucket)),
            UpdateExpression="SET #c = :true, #at = if_not_exists(#at, :now)",
            ExpressionAttributeNames={"#c": TERMS_COMPLETE, "#at": COMPLETED_AT},
            ExpressionAttributeValues={":true": {"BOOL": True}, ":now": {"S": iso_utc_millis(now)}},
            ReturnValues="ALL_NEW",
        )
        with self._lock:
            self._read[bucket] = (self._clock(), True)
        return datetime.fromisoformat(response["Attributes"][COMPLETED_AT]["S"]).timestamp()

    def _fetch(self, bucket: str) -> tuple[bool, unprocessed.BatchGot]:
        """Whether a flag was found set, and the read (whether both items were read: `whole`)."""
        # The bucket's state item and the table's; the table's once when asked for itself.
        keys = [serialize(flag_key(name)) for name in dict.fromkeys((bucket, ALL_BUCKETS))]
        got = unprocessed.batch_get(self.client, {self.table_name: {"Keys": keys, "ConsistentRead": True}})
        found = any(item.get(TERMS_COMPLETE, {}).get("BOOL") for item in got.of(self.table_name))
        return found, got


def mark_table_complete(client: Any, table_name: str, now: datetime) -> bool:
    """Mark every bucket of `table_name` complete if the table holds no item at all. Returns whether it did.

    Only for a name table whose entry table holds no live entry (checked by the caller): every entry it
    will hold then gets its items from its first write."""
    if client.scan(TableName=table_name, Limit=1).get("Items"):
        return False
    item = {**flag_key(ALL_BUCKETS), TERMS_COMPLETE: True, COMPLETED_AT: iso_utc_millis(now)}
    client.put_item(TableName=table_name, Item=serialize(item))
    return True


_states: weakref.WeakKeyDictionary[Any, dict[str, NameIndexFlag]] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def terms_complete(client: Any, table_name: str, bucket: str) -> bool:
    """Whether `bucket`'s name index is complete in `table_name` (while not, a read at most every
    FLAG_TTL_SECONDS per client, table and bucket)."""
    with _states_lock:
        state = _states.setdefault(client, {}).get(table_name)
        if state is None:
            state = _states[client][table_name] = NameIndexFlag(client, table_name)
    return state.complete(bucket)
