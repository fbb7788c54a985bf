"""Measure 16's checks against the real code, and its write rows.

`cross_check` writes a few thousand of `bench.name_data`'s files with the real writer (entries, then their
name items through `NameIndex.put_entry`) into DynamoDB (moto, or an endpoint such as DynamoDB Local) and
reads every shape with the real `NameReader`: its `scanned_count`, items and round trips must equal the
terms model's, page for page (the first `CHECK_PAGES`).

`write_rows`: write units per million new keys, overwrites and deletes (`bench.name_writes`), and the
busiest partition key value when one second of uploads at `RATE`/s arrives in one bucket.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from bench import aws
from bench.backfill_batch import PRICES
from bench.entries import create_event, entry
from bench.name_data import USERS, NamedFile, make_files
from bench.name_terms_model import TermTable, terms_page
from bench.name_writes import Written, busiest, name_item_writes
from bench.report import Row
from file_index.read.name_query import ORDER_UPLOAD_DATE, NameQuery
from file_index.read.name_reader import NameReader
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.write.names import NameIndex

CHECK_PAGES = 2
RATE = 10_000
PER_MILLION = 1_000_000


def file_entry(file: NamedFile, placement: ShardPlacement, sequence: int) -> dict[str, Any]:
    """The entry the writer puts for the upload of `file`."""
    event = create_event(
        bucket=aws.BUCKET,
        key=file.key,
        user=file.user,
        size=file.size,
        moment=datetime.fromisoformat(file.upload_date.replace("Z", "+00:00")),
        sequence=sequence,
    )
    return entry(event, event.order_key, placement)


@contextlib.contextmanager
def _tables(endpoint_url: str | None) -> Iterator[tuple[Any, Any, str]]:
    import boto3
    from moto import mock_aws

    with aws.fake_credentials(), mock_aws():
        client = boto3.client("dynamodb", region_name=aws.REGION, endpoint_url=endpoint_url)
        suffix = datetime.now().strftime("%H%M%S%f")
        table_name, name_table = f"FileMetaData-{suffix}", f"FileNameIndex-{suffix}"
        client.create_table(**schema.create_table_request(table_name))
        client.create_table(**schema.create_name_table_request(name_table))
        table = boto3.resource("dynamodb", region_name=aws.REGION, endpoint_url=endpoint_url).Table(
            table_name
        )
        try:
            yield client, table, name_table
        finally:
            client.delete_table(TableName=table_name)
            client.delete_table(TableName=name_table)


def cross_check(objects: int, placement: ShardPlacement, endpoint_url: str | None = None) -> int:
    """Shapes whose reader pages equal the terms model's (AssertionError otherwise)."""
    from bench import name_reads

    files, rare = make_files(objects)
    terms = name_reads.term_index(files, {name_reads.lookup(shape, rare)[1] for shape in name_reads.SHAPES})
    with _tables(endpoint_url) as (client, table, name_table):
        names = NameIndex(client, name_table, entry_table=table.name)
        with table.batch_writer() as writer:
            for number, file in enumerate(files):
                item = file_entry(file, placement, number)
                writer.put_item(Item=item)
                names.put_entry(item, str(item[schema.ORDER_KEY]))
        reader = NameReader(
            table.meta.client, table.name, name_table, placement=placement, terms_complete=True
        )
        for shape in name_reads.SHAPES:
            query = NameQuery(
                listing=name_reads.scope(shape),
                words=name_reads.search(shape, rare).query_words,
                order_by=ORDER_UPLOAD_DATE,
                ascending=shape.ascending,
            )
            term = name_reads.lookup(shape, rare)[1]
            model = name_reads.exact_table(
                files, terms[term], shape, placement, term, moto=endpoint_url is None
            )
            _check_terms(reader, query, model, name_reads.partitions(placement, shape), shape, rare)
        return len(name_reads.SHAPES)


def _check_terms(
    reader: NameReader, query: NameQuery, model: TermTable, partitions: Sequence[str], shape: Any, rare: str
) -> None:
    from bench import name_reads

    search = name_reads.search(shape, rare)
    position: Any = None
    cursor = None
    for number in range(CHECK_PAGES):
        page = reader.list_files(query, limit=name_reads.LIMIT, position=position)
        expected = terms_page(model, partitions, search, limit=name_reads.LIMIT, cursor=cursor)
        seen = (shape.name, number, page.scanned_count, len(page.items), page.round_trips)
        assert page.scanned_count == expected.items_read, (seen, expected)
        assert len(page.items) == expected.returned, (seen, expected)
        assert page.round_trips == expected.rounds, (seen, expected)
        if page.next_position is None or expected.cursor is None:
            assert page.next_position is None, (seen, expected)
            assert expected.cursor is None, (seen, expected)
            return
        position, cursor = page.next_position, expected.cursor


def write_rows(placement: ShardPlacement) -> list[Row]:
    """Write units per million new keys, overwrites and deletes, and the busiest partitions."""
    files, _ = make_files(RATE, seed=16)  # one second of uploads at RATE/s
    written = [Written.of(file_entry(file, placement, n)) for n, file in enumerate(files)]
    writes = name_item_writes(written)
    price = PRICES.dynamodb_per_million_write_units
    rows = []
    per_kind = (("new keys", writes.new), ("overwrites", writes.overwrite), ("deletes", writes.delete))
    for kind, ours in per_kind:
        rows.append(
            Row(
                f"16. name index write units per million {kind}",
                "WCU/million",
                round(ours * PER_MILLION),
                None,
                "",
                note=f"${ours * price:,.2f} per million (${price} per million write units); items per new "
                f"key: {writes.items:.1f} (key + terms), each also in the user GSI; since = the orderKey",
            )
        )
    items = [item for one in written for item in one.terms]
    for kind, factor in (("new keys", 1), ("overwrites", 2)):
        after = busiest(items, factor)
        rows.append(
            Row(
                f"16. name index busiest partition at {RATE:,} {kind}/s into one bucket",
                "WCU/s",
                after.table_units,
                None,
                "",
                note=f"{after.table_value!r} (one-letter terms included); the user GSI's busiest "
                f"{after.user_units:,} WCU/s ({after.user_value!r}, one uploader of {USERS}); "
                f"{placement.bucket_shards} bucket shards; limit 1,000 WCU/s a key value"
                + (
                    "; an overwrite puts and deletes one item per term in the same key value"
                    if factor == 2
                    else ""
                ),
            )
        )
    return rows
