"""Index entries as the writer builds them, and what writing one costs each index in write units.

`entry` is the real `file_index.write.entry_items.entry_item` under an `ShardPlacement`, so the heat and cost
models place an entry exactly where the indexer would (shard values of `bucketName` and `uploadUser`,
`userShard`, `zAddress`). `index_writes` applies DynamoDB's documented accounting to one write that
replaces `old` with `new`:

- the table: one write of the larger of the two items, `ceil(bytes / 1 KB)` write units;
- each GSI: nothing if neither item carries its key attributes; one write if the entry enters or
  leaves the index, or stays under the same key (an update in place, projection ALL); two (old entry
  out, new entry in) if its key changed, each at its own partition key value.

Item sizes follow DynamoDB's rules (`bench.models.item_bytes`, which this module re-exports).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.models import item_bytes
from file_index.rules import schema
from file_index.rules.objects import ObjectEvent
from file_index.rules.placement import ShardPlacement
from file_index.write import entry_items

TABLE = "table"
WRITE_UNIT_BYTES = 1024
GIB = 1024**3


def entry(event: ObjectEvent, order_key: str | None, placement: ShardPlacement) -> dict[str, Any]:
    """The item the writer puts for a create of `event` under `placement`."""
    return entry_items.entry_item(event, order_key, placement)


def create_event(
    *, bucket: str, key: str, user: str | None, size: int, moment: datetime, sequence: int
) -> ObjectEvent:
    """An `ObjectCreated:Put` of `key`, with a sequencer that grows with `sequence`."""
    return ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket=bucket,
        key=key,
        event_time=moment,
        sequencer=f"{0x0055AED6DCD9028100 + sequence * 0x100:018X}",
        size=size,
        e_tag="d41d8cd98f00b204e9800998ecf8427e",
        version_id=None,
        upload_user=user,
        file_id=key.split("/", 1)[-1],
    )


def log_uniform_size(rng: random.Random, low: int = 1, high: int = 10 * GIB) -> int:
    """A size drawn log-uniformly from `low`..`high` bytes (every octave equally likely)."""
    return min(high, max(low, int(math.exp(rng.uniform(math.log(low), math.log(high + 1))))))


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


YEAR_2017 = (epoch_ms(datetime(2017, 1, 1, tzinfo=UTC)), epoch_ms(datetime(2018, 1, 1, tzinfo=UTC)) - 1)


def write_units(size_bytes: int) -> int:
    """Write units of one write of an item of `size_bytes`: one per started KB, at least one."""
    return max(1, math.ceil(size_bytes / WRITE_UNIT_BYTES))


@dataclass(frozen=True)
class IndexWrite:
    """Write units one item write costs one partition key value of one index (TABLE or a GSI name)."""

    index: str
    partition: str
    units: int


def index_writes(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], indexes: Sequence[schema.GlobalIndex]
) -> list[IndexWrite]:
    """The writes of replacing `old` (None: a new key) by `new`, per index and partition key value."""
    new_bytes = item_bytes(new)
    old_bytes = 0 if old is None else item_bytes(old)
    writes = [IndexWrite(TABLE, new[schema.OBJECT_KEY], write_units(max(old_bytes, new_bytes)))]
    for index in indexes:
        names = (index.partition_key.name, index.sort_key.name)
        new_key = tuple(str(new[name]) for name in names) if all(n in new for n in names) else None
        old_key = (
            tuple(str(old[name]) for name in names)
            if old is not None and all(n in old for n in names)
            else None
        )
        if new_key is not None and new_key == old_key:
            writes.append(IndexWrite(index.name, new_key[0], write_units(max(old_bytes, new_bytes))))
            continue
        if old_key is not None:
            writes.append(IndexWrite(index.name, old_key[0], write_units(old_bytes)))
        if new_key is not None:
            writes.append(IndexWrite(index.name, new_key[0], write_units(new_bytes)))
    return writes
