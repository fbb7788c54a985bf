"""Read side of `FileMetaData`: one file by key, and the two list queries on the GSIs.

Every condition a list accepts is part of the key condition (`begins_with` / `between` / `>=` / `<=` on the
index's sort key), never a FilterExpression, so a query reads exactly the items it returns. Tombstones
carry no GSI key attributes, so they never reach an index; `get_file` hides them explicitly.

Paging is expressed with DynamoDB's own start keys (`StartKey`: the `LastEvaluatedKey` of the previous
page, in DynamoDB's typed JSON form so it can travel inside a cursor). `UserQuery.owns` and
`BucketQuery.owns` tell whether a start key belongs to the query, so a cursor can never move a query
outside the items it was made for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.conditions import ConditionBase, Key
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from file_index import schema

# A page's start key in DynamoDB JSON ({"size": {"N": "12"}, ...}): plain JSON, safe to put in a cursor.
StartKey = dict[str, dict[str, str]]

# The attributes a search answers with (the README's table); bookkeeping attributes stay private.
PUBLIC_ATTRIBUTES = (schema.OBJECT_KEY, *schema.OBJECT_ATTRIBUTES)

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


@dataclass(frozen=True)
class UserQuery:
    """A user's files on `uploadUser-uploadDate-index`, `start`..`end` inclusive (ISO-8601 UTC strings).

    `day_prefix` ("YYYY-MM-DD") selects one UTC day with `begins_with`; it excludes `start`/`end`.
    """

    user: str
    start: str | None = None
    end: str | None = None
    day_prefix: str | None = None
    ascending: bool = True

    index = schema.USER_DATE_INDEX

    def key_condition(self) -> ConditionBase:
        condition: ConditionBase = Key(schema.UPLOAD_USER).eq(self.user)
        sort = Key(schema.UPLOAD_DATE)
        if self.day_prefix is not None:
            return condition & sort.begins_with(self.day_prefix)
        if self.start is not None and self.end is not None:
            return condition & sort.between(self.start, self.end)
        if self.start is not None:
            return condition & sort.gte(self.start)
        if self.end is not None:
            return condition & sort.lte(self.end)
        return condition

    def owns(self, key: Mapping[str, Any]) -> bool:
        """True if `key` (deserialized) is a position inside this query's key range."""
        if not _has_index_key_shape(key, self.index) or key[schema.UPLOAD_USER] != self.user:
            return False
        date = key[schema.UPLOAD_DATE]
        if not isinstance(date, str):
            return False
        if self.day_prefix is not None:
            return date.startswith(self.day_prefix)
        return (self.start is None or date >= self.start) and (self.end is None or date <= self.end)


@dataclass(frozen=True)
class BucketQuery:
    """A bucket's files on `bucketName-size-index`, `min_size`..`max_size` bytes inclusive."""

    bucket: str
    min_size: int | None = None
    max_size: int | None = None
    ascending: bool = False

    index = schema.BUCKET_SIZE_INDEX

    def key_condition(self) -> ConditionBase:
        condition: ConditionBase = Key(schema.BUCKET_NAME).eq(self.bucket)
        sort = Key(schema.SIZE)
        if self.min_size is not None and self.max_size is not None:
            return condition & sort.between(self.min_size, self.max_size)
        if self.min_size is not None:
            return condition & sort.gte(self.min_size)
        if self.max_size is not None:
            return condition & sort.lte(self.max_size)
        return condition

    def owns(self, key: Mapping[str, Any]) -> bool:
        """True if `key` (deserialized) is a position inside this query's key range."""
        if not _has_index_key_shape(key, self.index) or key[schema.BUCKET_NAME] != self.bucket:
            return False
        size = key[schema.SIZE]
        if not isinstance(size, Decimal):
            return False
        return (self.min_size is None or size >= self.min_size) and (
            self.max_size is None or size <= self.max_size
        )


FileQuery = UserQuery | BucketQuery


@dataclass(frozen=True)
class Page:
    """One page of a list: the items, where the next page starts (None: no more) and the read cost."""

    items: list[dict[str, Any]]
    next_start: StartKey | None
    scanned_count: int


class InvalidStartKey(ValueError):
    """A start key that is not a position inside the query it is used with."""


def _has_index_key_shape(key: Mapping[str, Any], index: schema.GlobalIndex) -> bool:
    expected = {schema.OBJECT_KEY, index.partition_key.name, index.sort_key.name}
    return set(key) == expected and isinstance(key[schema.OBJECT_KEY], str)


def decode_start_key(query: FileQuery, start: Mapping[str, Any]) -> dict[str, Any]:
    """The deserialized form of `start`, or InvalidStartKey if it is malformed or outside `query`."""
    try:
        key = {name: _deserializer.deserialize(value) for name, value in start.items()}
        inside = query.owns(key)
    # A start key comes from outside (inside a cursor): whatever it holds must end as this one error.
    except (TypeError, ValueError, AttributeError, KeyError, ArithmeticError) as error:
        raise InvalidStartKey("start key is not DynamoDB JSON") from error
    if not inside:
        raise InvalidStartKey("start key is outside the query")
    return key


def public_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata fields of an item, numbers as int, absent fields omitted."""
    result: dict[str, Any] = {}
    for name in PUBLIC_ATTRIBUTES:
        value = item.get(name)
        if value is None:
            continue
        result[name] = int(value) if isinstance(value, Decimal) else value
    return result


class FileReader:
    """Answers searches from a boto3 `Table` resource (`boto3.resource("dynamodb").Table(name)`)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def get_file(self, object_key: str) -> dict[str, Any] | None:
        """The indexed file under `object_key` (URL-decoded), or None if absent or deleted."""
        item = self._table.get_item(Key={schema.OBJECT_KEY: object_key}).get("Item")
        if item is None or item.get(schema.DELETED):
            return None
        return public_item(item)

    def list_files(self, query: FileQuery, *, limit: int, start: StartKey | None = None) -> Page:
        """Up to `limit` items of `query` from `start` on, in the query's order.

        DynamoDB may stop a page early (1 MB per response); the loop asks for the rest with `Limit`
        set to what is still missing, so every request reads only items that are returned. A full page
        may still carry a `next_start` when nothing follows: DynamoDB cannot tell without reading on.
        """
        exclusive_start = dict(decode_start_key(query, start)) if start is not None else None
        items: list[dict[str, Any]] = []
        scanned = 0
        while True:
            request: dict[str, Any] = {
                "IndexName": query.index.name,
                "KeyConditionExpression": query.key_condition(),
                "ScanIndexForward": query.ascending,
                "Limit": limit - len(items),
            }
            if exclusive_start is not None:
                request["ExclusiveStartKey"] = exclusive_start
            response = self._table.query(**request)
            items.extend(public_item(item) for item in response.get("Items", []))
            scanned += int(response.get("ScannedCount", 0))
            exclusive_start = response.get("LastEvaluatedKey")
            if exclusive_start is None or len(items) >= limit:
                break
        next_start = None
        if exclusive_start is not None:
            next_start = {name: _serializer.serialize(value) for name, value in exclusive_start.items()}
        return Page(items=items, next_start=next_start, scanned_count=scanned)
