"""The read calls of the shared code: a page of a Query or a Scan, an entry by its key, whether a table
exists.

`file_index.read` builds its requests (which partition, which key condition, which order and limit) and
reads through these, so every DynamoDB call of the shared code is made in `file_index.store`. A request may
hold `Key`/`Attr` conditions: a `expressions.SharedClient` builds them per call, so the readers' shard
threads share one client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QueryPage:
    """One Query's answer: its items (as the client returns them), what DynamoDB read for them (its
    `ScannedCount`, filtered items included) and where the next page starts (None: the last)."""

    items: list[dict[str, Any]]
    scanned: int
    last_key: dict[str, Any] | None


def query_page(client: Any, request: Mapping[str, Any]) -> QueryPage:
    """One Query of `request` through `client` (a table resource's client or a low-level one)."""
    return _page(client.query(**request))


def query_pages(client: Any, request: Mapping[str, Any]) -> Iterator[QueryPage]:
    """Every page of `request`, one Query after the other, each resumed where the last ended."""
    return _pages(query_page, client, request)


def scan_page(client: Any, request: Mapping[str, Any]) -> QueryPage:
    """One Scan of `request` (a table or one segment of it) through a low-level `client`."""
    return _page(client.scan(**request))


def scan_pages(client: Any, request: Mapping[str, Any]) -> Iterator[QueryPage]:
    """Every page of the Scan `request` (a table or one segment of it), each resumed where the last ended."""
    return _pages(scan_page, client, request)


def table_exists(client: Any, table_name: str) -> bool:
    """Whether `table_name` exists (a low-level `client`'s DescribeTable)."""
    try:
        client.describe_table(TableName=table_name)
    except client.exceptions.ResourceNotFoundException:
        return False
    return True


def item_of(table: Any, key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The item of `key` in a table resource (plain values), None if absent."""
    item: dict[str, Any] | None = table.get_item(Key=dict(key)).get("Item")
    return item


def _page(response: Mapping[str, Any]) -> QueryPage:
    items: list[dict[str, Any]] = response.get("Items", [])
    return QueryPage(items, int(response.get("ScannedCount", len(items))), response.get("LastEvaluatedKey"))


def _pages(
    read: Callable[[Any, Mapping[str, Any]], QueryPage], client: Any, request: Mapping[str, Any]
) -> Iterator[QueryPage]:
    resumed = dict(request)
    while True:
        page = read(client, resumed)
        yield page
        if not page.last_key:
            return
        resumed["ExclusiveStartKey"] = page.last_key
