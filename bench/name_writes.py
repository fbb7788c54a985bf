"""Measure 16's write side: what the name index writes per new key, overwrite and delete (its key item and
its term items, ordered by upload time), and the busiest partition key value at a given upload rate.

One key item per key (folders), never rewritten while the key stays in one place, and one item per
distinct term of the name (`name_terms.name_terms`), keyed by the upload time, so an overwrite puts the new
time's items and deletes the old time's, and a delete deletes them all. Each item is written (or deleted)
in the table and again in the user GSI (every key has a user; the GSI projects every attribute), at
DynamoDB's rule: one write unit per started 1 KB of the item (`bench.models.item_bytes`), a delete
billed at the deleted item's size. Items are the writer's own (`name_items.key_item`,
`name_items.term_items`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.models import item_bytes
from file_index.rules import name_items, schema

WRITE_UNIT_BYTES = 1024


def units(item: Mapping[str, Any]) -> int:
    """Write units of a put or a delete of `item`, in the table and in the user GSI if it is there."""
    once = math.ceil(item_bytes(item) / WRITE_UNIT_BYTES)
    return once * (2 if schema.NAME_USER in item else 1)


@dataclass(frozen=True)
class Written:
    """What one new key writes: its key item and its term items."""

    key: list[dict[str, Any]]
    terms: list[dict[str, Any]]

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Written:
        """Items as the writer writes them, `since` = the entry's orderKey."""
        since = str(entry.get(schema.ORDER_KEY) or "")
        return cls([name_items.key_item(entry, since)], name_items.term_items(entry, since))


@dataclass(frozen=True)
class NameItemWrites:
    """Mean write units per new key, overwrite and delete, and the mean items of a new key."""

    new: float
    overwrite: float
    delete: float
    items: float


def name_item_writes(written: Sequence[Written]) -> NameItemWrites:
    """Means over `written`."""
    count = len(written)
    key_units = sum(units(item) for one in written for item in one.key) / count
    term_units = sum(units(item) for one in written for item in one.terms) / count
    items = sum(len(one.key) + len(one.terms) for one in written) / count
    # An overwrite puts the new time's term items and deletes the old time's; the key item stays.
    return NameItemWrites(key_units + term_units, 2 * term_units, key_units + term_units, items)


@dataclass(frozen=True)
class Busiest:
    table_units: int  # write units of the busiest table partition key value in the sample
    table_value: str
    user_units: int
    user_value: str


def busiest(items: Sequence[Mapping[str, Any]], factor: int = 1) -> Busiest:
    """The partition key values of the table and the user GSI that `items` (written `factor` times each:
    2 for a put and a delete) charge the most write units."""
    table: Counter[str] = Counter()
    users: Counter[str] = Counter()
    for item in items:
        once = math.ceil(item_bytes(item) / WRITE_UNIT_BYTES) * factor
        table[item[schema.NAME_SCOPE]] += once
        if schema.NAME_USER in item:
            users[item[schema.NAME_USER]] += once
    ((table_value, table_units),) = table.most_common(1)
    ((user_value, user_units),) = users.most_common(1) or [("", 0)]
    return Busiest(table_units, table_value, user_units, user_value)
