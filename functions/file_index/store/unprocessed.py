"""What a batch call leaves unprocessed, asked for again: every BatchGetItem and BatchWriteItem comes here.

DynamoDB answers a throttled batch call with the part it did not do (`UnprocessedKeys`, `UnprocessedItems`)
rather than an error, so the SDK's retries never see it. AWS's advice is to ask again after an exponential
back-off: `rounds()` paces the rounds of one call, UNPROCESSED_ROUNDS in all (3.55 s of pauses at the most,
1.8 s on average). What is still left after them is the caller's to decide: a reader that may stay unsure
says so (`BatchGot.whole`); everyone else raises an `UnprocessedError`. The indexer retries it (its message
goes back to the queue), a backfill or reconcile run's task is retried by its workflow with back-off, the
search answers a 503 with `Retry-After` and the admin commands an error in one line, as for a throttle the
SDK gave up on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# A batch call's unprocessed items or keys are asked for again this many times in all, after a pause that
# grows from BACKOFF_BASE_S (at most BACKOFF_CAP_S): 3.55 s in all at the most.
UNPROCESSED_ROUNDS = 8
BACKOFF_BASE_S = 0.025
BACKOFF_CAP_S = 1.0


class UnprocessedError(RuntimeError):
    """DynamoDB kept leaving part of a batch call unprocessed (throttling), round after round."""


class UnprocessedItemsError(UnprocessedError):
    """A batch write whose items DynamoDB kept leaving unprocessed: the event is retried."""


class UnprocessedKeysError(UnprocessedError):
    """A batch read whose keys DynamoDB kept leaving unprocessed: the request is retried later."""


def rounds(count: int = UNPROCESSED_ROUNDS) -> Iterator[int]:
    """The rounds of a batch call and of what it left unprocessed, `count` in all; before each round after
    the first, a pause: exponential, with full jitter, as AWS advises."""
    for attempt in range(count):
        if attempt:
            time.sleep(random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)))
        yield attempt


@dataclass
class BatchGot:
    """What a BatchGetItem (with its rounds) found: items by table, the calls made, the keys still left."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: int = 0
    left: dict[str, Any] = field(default_factory=dict)

    @property
    def whole(self) -> bool:
        return not self.left

    def of(self, table_name: str) -> list[dict[str, Any]]:
        return self.items.get(table_name, [])

    def raise_if_left(self) -> BatchGot:
        """Itself, or UnprocessedKeysError when keys were still left after every round."""
        if self.left:
            counts = ", ".join(f"{len(asked.get('Keys', []))} of {name}" for name, asked in self.left.items())
            raise UnprocessedKeysError(f"DynamoDB left keys unprocessed (throttled): {counts}")
        return self


def batch_get(client: Any, request_items: Mapping[str, Any], *, count: int = UNPROCESSED_ROUNDS) -> BatchGot:
    """One BatchGetItem (at most 100 keys) and its rounds, `count` in all; what it leaves is `BatchGot.left`,
    never raised."""
    got = BatchGot()
    request: Mapping[str, Any] = request_items
    for _ in rounds(count):
        response = client.batch_get_item(RequestItems=request)
        got.calls += 1
        for name, items in response.get("Responses", {}).items():
            got.items.setdefault(name, []).extend(items)
        request = response.get("UnprocessedKeys") or {}
        if not request:
            break
    got.left = dict(request)
    return got


def batch_write(client: Any, request_items: Mapping[str, Any]) -> None:
    """One BatchWriteItem (at most 25 requests) and its rounds. Raises UnprocessedItemsError when items are
    still left after every round."""
    pending: Mapping[str, Any] = request_items
    for _ in rounds():
        response = client.batch_write_item(RequestItems=pending)
        pending = response.get("UnprocessedItems") or {}
        if not pending:
            return
    counts = ", ".join(f"{len(requests)} items of {name}" for name, requests in pending.items())
    raise UnprocessedItemsError(f"DynamoDB left {counts} unprocessed (throttled)")
