"""The ordering rule of the writer's conditional writes (`file_index.write.writer`): an event applies only
if it is newer than what the item holds,

    attribute_not_exists(orderKey) OR orderKey < :orderKey

(`<=` for an event without a sequencer, so that of two events with the same time the one applied last
wins), and the item a failed condition returns tells the writer what the index held, at no read cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeGuard

from file_index.rules import schema
from file_index.rules.name_items import is_live_entry
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.store.entries import write_returning_old
from file_index.store.sdk import DynamoDBClient, serialize
from file_index.write.entry_items import DEFAULT_PLACEMENT, version_of

# Conditions only change when the item changes, so a handful of rounds covers any real contention.
MAX_ROUNDS = 6


class Outcome(StrEnum):
    WRITTEN = "written"  # the item now describes the object
    DELETED = "deleted"  # the item is now a tombstone
    STALE = "stale"  # the index already holds this event or a later one: nothing visible changed


class WriteContentionError(RuntimeError):
    """The item kept changing between the conditional writes of one event; retry the event."""


APPLIED: Any = object()


@dataclass(frozen=True)
class ConditionalWrite:
    """The writes of one event: the ordering conditions, and the old item a failed condition returns."""

    dynamodb: DynamoDBClient
    table_name: str
    event: ObjectEvent
    expires_at: int
    placement: ShardPlacement = DEFAULT_PLACEMENT
    # What the name index needs to know of the writes made: the entry written, the item it replaced or
    # the item a failed condition returned (`update_names`).
    seen: dict[str, Any] = field(default_factory=dict)

    @property
    def order(self) -> str:
        return self.event.order_key

    @property
    def version(self) -> str:
        return version_of(self.event)

    def is_own_entry(self, entry: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
        """A live entry this event wrote (at its own position): its items may not have been written."""
        return is_live_entry(entry) and entry.get(schema.ORDER_KEY) == self.order

    def newer(self, order: str) -> str:
        return f"attribute_not_exists({order}) OR {self.later(order)}"

    def later(self, order: str) -> str:
        # Without a sequencer, equal times go to the event applied last (see module docstring).
        return f"{order} < :order" if self.event.sequencer is not None else f"{order} <= :order"

    def is_newer_than(self, held_order: str | None) -> bool:
        """Python's reading of `newer` against an item's orderKey."""
        if held_order is None:
            return True
        return held_order < self.order if self.event.sequencer is not None else held_order <= self.order

    def key(self) -> dict[str, Any]:
        return serialize({schema.OBJECT_KEY: self.event.key})

    def conditional(self, operation: Literal["put_item", "update_item"], **request: Any) -> Any:
        """`APPLIED`, or the item as it was when the condition failed (None: there was none)."""
        applied, old = write_returning_old(self.dynamodb, self.table_name, operation, **request)
        self.seen["old"] = old
        return APPLIED if applied else old
