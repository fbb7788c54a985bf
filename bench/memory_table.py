"""A stand-in in memory for the one DynamoDB call the reader makes (a GSI `Query`), billed like DynamoDB.

The box measures run the real `FileReader` (its planner, its walks, the shard merge) over 100,000 entries;
moto answers a GSI Query by going over the whole table, too slow for that. This table keeps each index's
partitions sorted by (sort key, objectKey) and answers a Query the way DynamoDB does: the key condition
picks a contiguous run of one partition, `ExclusiveStartKey` starts after a key, `Limit` bounds the items
*evaluated*, a response stops at 1 MB read, the filter drops items after they are read, and
`LastEvaluatedKey` is set when the read stopped on `Limit` or 1 MB. It is checked against moto by
`box_reads.cross_check` (the same reads, item for item).

Every Query is billed (`file_index.rules.cost.query_read_units`) at the items it *read*, filtered or not:
`consumed_read_units` is the total, `queries` the calls, both reset by `reset()`.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import (
    And,
    AttributeExists,
    AttributeNotExists,
    BeginsWith,
    Between,
    ConditionBase,
    Equals,
    GreaterThan,
    GreaterThanEquals,
    LessThan,
    LessThanEquals,
)

from bench import models
from file_index.rules import cost, schema

_MISSING = object()


def _value(item: Mapping[str, Any], name: str) -> Any:
    value = item.get(name, _MISSING)
    return int(value) if isinstance(value, Decimal) else value


def _holds(condition: ConditionBase, item: Mapping[str, Any]) -> bool:
    """Whether `item` meets a key or filter condition built with boto3's `Key`/`Attr`."""
    values = condition.get_expression()["values"]
    if isinstance(condition, And):
        return all(_holds(part, item) for part in values)
    name = values[0].name
    value = _value(item, name)
    if isinstance(condition, AttributeNotExists):
        return value is _MISSING
    if isinstance(condition, AttributeExists):
        return value is not _MISSING
    if value is _MISSING:
        return False
    operands = [int(v) if isinstance(v, Decimal) else v for v in values[1:]]
    if isinstance(condition, Equals):
        return bool(value == operands[0])
    if isinstance(condition, Between):
        return bool(operands[0] <= value <= operands[1])
    if isinstance(condition, GreaterThanEquals):
        return bool(value >= operands[0])
    if isinstance(condition, GreaterThan):
        return bool(value > operands[0])
    if isinstance(condition, LessThanEquals):
        return bool(value <= operands[0])
    if isinstance(condition, LessThan):
        return bool(value < operands[0])
    if isinstance(condition, BeginsWith):
        return isinstance(value, str) and value.startswith(str(operands[0]))
    raise NotImplementedError(f"the memory table does not evaluate {type(condition).__name__}")


def _parts(condition: ConditionBase) -> list[ConditionBase]:
    if isinstance(condition, And):
        return [part for inner in condition.get_expression()["values"] for part in _parts(inner)]
    return [condition]


class _Client:
    def __init__(self, table: MemoryTable) -> None:
        self._table = table

    def query(self, **request: Any) -> dict[str, Any]:
        return self._table.query(**request)


class _Meta:
    def __init__(self, client: _Client) -> None:
        self.client = client


class MemoryTable:
    """`items` (the writer's entries) indexed by `indexes` (the schema's GSIs); a boto3 Table's shape."""

    def __init__(
        self,
        name: str,
        items: Iterable[Mapping[str, Any]],
        indexes: Iterable[schema.GlobalIndex],
        *,
        key_only_when_more: bool = False,
    ) -> None:
        """`key_only_when_more`: set `LastEvaluatedKey` only when the partition holds more items past the
        last read (moto's way; DynamoDB sets it whenever a Query stops on its `Limit`), to compare with moto
        item for item."""
        self.name = name
        self._key_only_when_more = key_only_when_more
        self.meta = _Meta(_Client(self))
        self._lock = threading.Lock()
        self.consumed_read_units = 0.0
        self.queries = 0
        self._indexes: dict[str, schema.GlobalIndex] = {index.name: index for index in indexes}
        # index name -> partition value -> ([(sort value, objectKey)], [item]) sorted by the pair
        self._partitions: dict[str, dict[Any, tuple[list[tuple[Any, str]], list[Mapping[str, Any]]]]] = {}
        # As boto3's resource answers: numbers as Decimal.
        stored = [
            {
                name: Decimal(value) if isinstance(value, int) and not isinstance(value, bool) else value
                for name, value in item.items()
            }
            for item in items
        ]
        self._bytes = {id(item): models.item_bytes(item) for item in stored}
        for index in self._indexes.values():
            grouped: dict[Any, list[tuple[Any, str, Mapping[str, Any]]]] = defaultdict(list)
            for item in stored:
                partition = _value(item, index.partition_key.name)
                sort = _value(item, index.sort_key.name)
                if partition is _MISSING or sort is _MISSING:
                    continue  # a sparse index holds only items with both of its keys
                grouped[partition].append((sort, str(item[schema.OBJECT_KEY]), item))
            partitions = {}
            for partition, rows in grouped.items():
                rows.sort(key=lambda row: (row[0], row[1]))
                partitions[partition] = ([(row[0], row[1]) for row in rows], [row[2] for row in rows])
            self._partitions[index.name] = partitions

    def reset(self) -> None:
        with self._lock:
            self.consumed_read_units = 0.0
            self.queries = 0

    def query(self, **request: Any) -> dict[str, Any]:
        index = self._indexes[request["IndexName"]]
        partition_name, sort_name = index.partition_key.name, index.sort_key.name
        partition: Any = None
        sort_conditions: list[ConditionBase] = []
        for part in _parts(request["KeyConditionExpression"]):
            if part.get_expression()["values"][0].name == partition_name:
                partition = part.get_expression()["values"][1]
            else:
                sort_conditions.append(part)
        keys, rows = self._partitions[index.name].get(partition, ([], []))
        low, high = 0, len(keys)
        for condition in sort_conditions:  # narrow to the run of the sort key condition
            operands = condition.get_expression()["values"][1:]
            if isinstance(condition, Between):
                low = max(low, bisect_left(keys, operands[0], key=_sort_value))
                high = min(high, bisect_right(keys, operands[1], key=_sort_value))
            elif isinstance(condition, GreaterThanEquals):
                low = max(low, bisect_left(keys, operands[0], key=_sort_value))
            elif isinstance(condition, LessThanEquals):
                high = min(high, bisect_right(keys, operands[0], key=_sort_value))
            else:
                raise NotImplementedError(f"key condition {type(condition).__name__}")
        forward = bool(request.get("ScanIndexForward", True))
        start = request.get("ExclusiveStartKey")
        if start is not None:
            after = (_value(start, sort_name), str(start[schema.OBJECT_KEY]))
            if forward:
                low = max(low, bisect_right(keys, after))
            else:
                high = min(high, bisect_left(keys, after))
        order = range(low, high) if forward else range(high - 1, low - 1, -1)
        limit = int(request.get("Limit", len(keys) + 1))
        condition = request.get("FilterExpression")
        read_bytes = scanned = 0
        kept: list[Mapping[str, Any]] = []
        last: int | None = None
        stopped = False  # on `Limit` or 1 MB, not at the end of the key range
        for position in order:
            item = rows[position]
            scanned += 1
            read_bytes += self._bytes[id(item)]
            last = position
            if condition is None or _holds(condition, item):
                kept.append(dict(item))
            if scanned >= limit or read_bytes >= cost.QUERY_RESPONSE_BYTES:
                stopped = True
                break
        response: dict[str, Any] = {"Items": kept, "Count": len(kept), "ScannedCount": scanned}
        if self._key_only_when_more and last is not None:
            # moto looks one item further in the partition, inside the key condition or not.
            stopped = stopped and (last + 1 < len(keys) if forward else last > 0)
        if stopped and last is not None:
            item = rows[last]
            response["LastEvaluatedKey"] = {
                schema.OBJECT_KEY: item[schema.OBJECT_KEY],
                partition_name: item[partition_name],
                sort_name: item[sort_name],
            }
        with self._lock:
            self.queries += 1
            self.consumed_read_units += cost.query_read_units(read_bytes)
        return response


def _sort_value(key: tuple[Any, str]) -> Any:
    return key[0]
