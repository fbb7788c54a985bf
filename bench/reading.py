"""The real reader over a moto table filled with the writer's entries: what measures 12 and 13 read through.

`load` writes entries (`bench.entries.entry`, so each is placed by the placement as the indexer places it)
into a fresh moto table built from the shared schema, the Z-order index included when the placement has it.
`read_all` follows a list's cursors to the end through `FileReader` and adds up what its pages report
(`Page.scanned_count`, `Page.request_count`), checking them against what DynamoDB itself answered
(`ScannedCount` and the Query calls, counted by `bench.instrument`'s hooks), so a reader that
under-reported its reads could not pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3

from bench import aws, instrument
from file_index.read.file_queries import FileQuery, ListCursor, Page
from file_index.read.reader import FileReader
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement


class CountMismatchError(RuntimeError):
    """The reader's own counts differ from what DynamoDB answered."""


def load(name: str, items: Iterable[dict[str, Any]], *, multi_attribute_index: bool) -> Any:
    """A fresh table `name` on the active moto mock holding `items`; a boto3 Table resource."""
    dynamodb = boto3.resource("dynamodb", region_name=aws.REGION)
    table = dynamodb.create_table(
        **schema.create_table_request(name, multi_attribute_index=multi_attribute_index)
    )
    table.wait_until_exists()
    with table.batch_writer() as writer:
        for item in items:
            writer.put_item(Item=item)
    return table


@contextmanager
def reader(table: Any, placement: ShardPlacement) -> Iterator[FileReader]:
    """The reader as the search function builds it: the placement, and a thread per shard read at once."""
    fan_out = max(placement.bucket_shards, *placement.hot_users.values(), 1)
    if fan_out == 1:
        yield FileReader(table, placement=placement)
        return
    with ThreadPoolExecutor(max_workers=fan_out) as executor:
        yield FileReader(table, placement=placement, executor=executor)


def checked_page(
    files: FileReader,
    query: FileQuery,
    *,
    limit: int,
    start: ListCursor | None = None,
    z_order_ready: bool = True,
) -> Page:
    """One page, its counts checked against DynamoDB's own answers."""
    with instrument.recording() as log:
        page = files.list_files(query, limit=limit, start=start, z_order_ready=z_order_ready)
    queries = log.count("dynamodb", "Query")
    if (page.scanned_count, page.request_count) != (log.items_scanned, queries):
        raise CountMismatchError(
            f"the reader reported {page.scanned_count} items read in {page.request_count} Queries; "
            f"DynamoDB answered {log.items_scanned} in {queries}"
        )
    return page


@dataclass(frozen=True)
class WholeAnswer:
    returned: list[dict[str, Any]]
    scanned: int
    requests: int
    pages: int


def read_all(files: FileReader, query: FileQuery, *, limit: int, z_order_ready: bool = True) -> WholeAnswer:
    """Every page of a list, in order."""
    returned: list[dict[str, Any]] = []
    scanned = requests = pages = 0
    start: ListCursor | None = None
    while True:
        page = checked_page(files, query, limit=limit, start=start, z_order_ready=z_order_ready)
        returned.extend(page.items)
        scanned += page.scanned_count
        requests += page.request_count
        pages += 1
        if page.next_cursor is None:
            return WholeAnswer(returned, scanned, requests, pages)
        start = page.next_cursor
