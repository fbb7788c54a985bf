"""Bring a bucket's name index in step with its entries: the repair of `file_index.names`.

`sync_names` reads the bucket's name items (one Scan of the name table) and its entries (one Scan of
`FileMetaData`), puts the items every live entry should have and lacks, and removes the items no live
entry has. It is what `file_search_admin index-names` runs on an existing table (entries written before
the name index existed get their items), and what backfill and reconcile run after their own pass.

Safe beside live events: a put for an entry deleted meanwhile leaves an item that searches skip (every
candidate's entry decides) and the next run removes; a removal is conditional on the item being
unchanged since it was read (`since` equal), so an item a live create has just written again stays.
Running it twice changes nothing the second time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from file_index import schema
from file_index.names import SCOPE_SEPARATOR, NameIndex, is_live_entry, name_items
from file_index.placement import ShardPlacement

_deserializer = TypeDeserializer()


@dataclass
class NameSyncCounts:
    entries: int = 0  # live entries of the bucket read
    items: int = 0  # name items of the bucket read
    put: int = 0  # items written (missing)
    removed: int = 0  # items removed (no live entry has them)
    kept: int = 0  # items a live write changed while the run read them: left as they are

    def to_json(self) -> dict[str, int]:
        return {
            "entries": self.entries,
            "nameItems": self.items,
            "put": self.put,
            "removed": self.removed,
            "kept": self.kept,
        }


def _scan(dynamodb: Any, table_name: str, **request: Any) -> Iterator[dict[str, Any]]:
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=table_name, **request):
        for raw in page.get("Items", []):
            yield {name: _deserializer.deserialize(value) for name, value in raw.items()}


def _bucket_of_scope(scope: str) -> str:
    return ShardPlacement.public_bucket(scope.rsplit(SCOPE_SEPARATOR, 1)[0])


def sync_names(
    dynamodb: Any,
    table_name: str,
    name_table_name: str,
    bucket: str,
    *,
    on_progress: Callable[[NameSyncCounts], None] | None = None,
) -> NameSyncCounts:
    """Make the name items of `bucket` exactly those of its live entries (module docstring)."""
    counts = NameSyncCounts()
    notify = on_progress or (lambda _counts: None)
    actual: dict[tuple[str, str], str] = {}
    for item in _scan(
        dynamodb,
        name_table_name,
        ProjectionExpression="#s, #t, #since",
        ExpressionAttributeNames={
            "#s": schema.NAME_SCOPE,
            "#t": schema.NAME_TERM,
            "#since": schema.NAME_SINCE,
        },
    ):
        scope = str(item[schema.NAME_SCOPE])
        if _bucket_of_scope(scope) == bucket:
            actual[(scope, str(item[schema.NAME_TERM]))] = str(item.get(schema.NAME_SINCE, ""))
            counts.items += 1
    notify(counts)
    names = NameIndex(dynamodb, name_table_name)
    expected: set[tuple[str, str]] = set()
    missing: list[Mapping[str, Any]] = []
    for entry in _scan(dynamodb, table_name, ConsistentRead=True):
        if not is_live_entry(entry) or ShardPlacement.public_bucket(str(entry[schema.BUCKET_NAME])) != bucket:
            continue
        counts.entries += 1
        for item in name_items(entry, str(entry.get(schema.ORDER_KEY) or "")):
            key = (item[schema.NAME_SCOPE], item[schema.NAME_TERM])
            expected.add(key)
            if key not in actual:
                missing.append(item)
        if len(missing) >= 500:
            names.put_items(missing)
            counts.put += len(missing)
            missing = []
            notify(counts)
    if missing:
        names.put_items(missing)
        counts.put += len(missing)
    for (scope, term), since in actual.items():
        if (scope, term) in expected:
            continue
        try:
            dynamodb.delete_item(
                TableName=name_table_name,
                Key={schema.NAME_SCOPE: {"S": scope}, schema.NAME_TERM: {"S": term}},
                ConditionExpression="attribute_not_exists(#since) OR #since = :since",
                ExpressionAttributeNames={"#since": schema.NAME_SINCE},
                ExpressionAttributeValues={":since": {"S": since}},
            )
            counts.removed += 1
        except dynamodb.exceptions.ConditionalCheckFailedException:
            counts.kept += 1
    notify(counts)
    return counts
