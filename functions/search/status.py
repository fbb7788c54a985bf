"""The index state and the indexer's backlog: `GET /status`, and the `indexState` of every list answer.

The state is the indexed bucket's state record (`file_index.store.state`); without one, the configured
initial state. Lists read it through `IndexStateView`, which keeps it for `STATE_MAX_AGE_SECONDS` per
execution environment: the record is one item, so one DynamoDB partition (3,000 read units/s, 6,000
eventually consistent reads/s), and reading it on every list of every environment would cap the whole
API's list rate there, besides adding a round trip to every page. Kept this briefly, a list tells READY
at most `STATE_MAX_AGE_SECONDS` (plus DynamoDB's eventual consistency, normally under a second) after a
backfill or reconcile finished. `GET /status` always reads the record afresh.

The backlog is read from SQS and CloudWatch (`search.dal.BacklogReader`); a figure that could not be
read is null and `unavailable` names it, so a null is never mistaken for a zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from time import monotonic
from typing import Any

from file_index.rules.cost import IndexStatistics
from file_index.store.state import IndexState, IndexStateStore, State, effective_state

STATE_MAX_AGE_SECONDS = 2.0
# The indexer's upload statistics (a GetItem of each of their items) change slowly and only steer the plan:
# read at most this often per execution environment.
UPLOAD_STATISTICS_MAX_AGE_SECONDS = 300.0


class IndexStateView:
    """The indexed bucket's index state, read from its state record (`initial` when there is none)."""

    def __init__(
        self,
        store: IndexStateStore,
        bucket: str,
        initial: State,
        *,
        max_age_seconds: float = STATE_MAX_AGE_SECONDS,
    ) -> None:
        self._store = store
        self._bucket = bucket
        self._initial = initial
        self._max_age = max_age_seconds
        # (when read, state), replaced whole: threads serving at once (the local stack) need no lock.
        self._cached: tuple[float, IndexState] | None = None
        self._upload_counts: tuple[float, dict[str, int]] | None = None

    def read(self, *, consistent: bool = True) -> IndexState:
        """The state record as it is now (one GetItem), or the initial state of a bucket without one; a
        consistent read (`GET /status`) also reads the indexer's upload statistics (`read_upload_counts`),
        which a list's state read leaves to `statistics`."""
        # A record holding only the Z-order flag (a migration of a never-backfilled bucket): the index is
        # as complete as before the flag was set.
        return effective_state(
            self._store.read(self._bucket, consistent=consistent, upload_counts=consistent),
            self._bucket,
            self._initial,
        )

    def current(self) -> IndexState:
        """The state record at most `max_age_seconds` old (an eventually consistent read when older)."""
        now = monotonic()
        cached = self._cached
        # An entry stamped later than now (a replaced clock) is never trusted.
        if cached is not None and 0 <= now - cached[0] < self._max_age:
            return cached[1]
        state = self.read(consistent=False)
        self._cached = (now, state)
        return state

    def state(self) -> State:
        """READY or BUILDING, at most `max_age_seconds` old."""
        return self.current().state

    def statistics(self) -> IndexStatistics | None:
        """The bucket's statistics from its last complete backfill or reconcile, else from the indexer's
        sample of uploads (None: neither yet): what the planner weighs its plans with."""
        return replace(self.current(), upload_counts=self._current_upload_counts()).index_statistics()

    def _current_upload_counts(self) -> dict[str, int]:
        now = monotonic()
        cached = self._upload_counts
        if cached is not None and 0 <= now - cached[0] < UPLOAD_STATISTICS_MAX_AGE_SECONDS:
            return cached[1]
        counts = self._store.read_upload_counts(self._bucket)
        self._upload_counts = (now, counts)
        return counts

    def z_order_pending(self) -> bool:
        """True while entries may lack their Z-order address (the third index was switched on for an
        existing table and its migration has not finished): box searches must not use that index."""
        return self.current().z_order_pending


@dataclass(frozen=True)
class Backlog:
    """The queue's and the dead-letter queue's figures; None where `unavailable` says it was unreadable.

    `oldest_message_age_seconds` is also None when CloudWatch has no recent datapoint (an idle queue).
    """

    messages_waiting: int | None = None
    messages_in_flight: int | None = None
    messages_delayed: int | None = None
    oldest_message_age_seconds: int | None = None
    dead_letter_messages: int | None = None
    unavailable: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StatusReport:
    """What `GET /status` answers: the indexed bucket's state and the backlog."""

    state: IndexState
    backlog: Backlog

    def to_json(self) -> dict[str, Any]:
        backlog = self.backlog
        return {
            "indexState": self.state.state.value,
            "buckets": [self.state.to_json()],
            "queue": {
                "messagesWaiting": backlog.messages_waiting,
                "messagesInFlight": backlog.messages_in_flight,
                "messagesDelayed": backlog.messages_delayed,
                "oldestMessageAgeSeconds": backlog.oldest_message_age_seconds,
            },
            "deadLetterQueue": {"messages": backlog.dead_letter_messages},
            "unavailable": list(backlog.unavailable),
        }
