"""A bucket of entries and their name items written as the contract says, on moto or DynamoDB Local, for the
name list tests: `World` writes, overwrites and deletes files (entry, key item and term items), reads with a
`NameReader`, and gives the brute-force answer of a list.

The items are those of `names.entry_items`; an overwrite puts its new term items, then deletes the old
upload time's, as the writer does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.read.name_query import NamePage, NameQuery
from file_index.read.name_reader import NameReader
from file_index.read.reader import FileReader
from file_index.rules import name_terms, schema
from file_index.rules.name_items import entry_items, has_extension, item_key, name_of, time_term
from file_index.rules.placement import ShardPlacement
from tests.integration.conftest import DynamoDBLocal

START = datetime(2024, 5, 1, 10, tzinfo=UTC)


@dataclass
class Engine:
    """A DynamoDB (moto's or DynamoDB Local) with a fresh entry table and name table."""

    client: Any  # low-level
    resource: Any
    table: str
    name_table: str

    def fresh_client(self) -> Any:
        """Another low-level client of the same engine."""
        return boto3.client("dynamodb", endpoint_url=self.client.meta.endpoint_url, region_name="us-east-1")


@dataclass
class World:
    engine: Engine
    bucket: str
    placement: ShardPlacement
    users: tuple[str, ...] = ()
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    clock: int = 0

    def now(self, *, same: bool = False) -> str:
        """The next upload time (ISO, milliseconds); `same`: the last one again (a tie)."""
        if not same:
            self.clock += 1
        return (START + timedelta(milliseconds=self.clock)).isoformat(timespec="milliseconds")[:-6] + "Z"

    def put(self, key: str, *, user: str, size: int = 100, date: str | None = None) -> dict[str, Any]:
        """Create or overwrite `key` (of `user`, named by its last "/" segment)."""
        old = self.entries.get(key)
        entry = self._entry(key, user, size, date or self.now())
        table = self.engine.resource.Table(self.engine.name_table)
        new_items = self._items(entry)
        with table.batch_writer(overwrite_by_pkeys=[schema.NAME_SCOPE, schema.NAME_SORT]) as batch:
            for item in new_items:
                batch.put_item(Item=item)
        self.engine.resource.Table(self.engine.table).put_item(Item=entry)
        if old is not None:
            kept = {(i[schema.NAME_SCOPE], i[schema.NAME_SORT]) for i in new_items}
            self._delete_items(
                [i for i in self._items(old) if (i[schema.NAME_SCOPE], i[schema.NAME_SORT]) not in kept]
            )
        self.entries[key] = entry
        return entry

    def load(self, files: list[tuple[str, str, int, str]]) -> None:
        """Create new keys (key, user, size, upload time) in bulk."""
        entries = [self._entry(key, user, size, date) for key, user, size, date in files]
        with self.engine.resource.Table(self.engine.name_table).batch_writer() as batch:
            for entry in entries:
                for item in self._items(entry):
                    batch.put_item(Item=item)
        with self.engine.resource.Table(self.engine.table).batch_writer() as batch:
            for entry in entries:
                batch.put_item(Item=entry)
                self.entries[entry[schema.OBJECT_KEY]] = entry

    def delete(self, key: str) -> None:
        old = self.entries.pop(key)
        self.engine.resource.Table(self.engine.table).delete_item(Key={schema.OBJECT_KEY: key})
        self._delete_items(self._items(old))

    def _entry(self, key: str, user: str, size: int, date: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            schema.OBJECT_KEY: key,
            schema.BUCKET_NAME: self.placement.bucket_partition(self.bucket, key),
            schema.UPLOAD_USER: self.placement.user_partition(user, key),
            schema.FILE_ID: key.split("/", 1)[-1],
            schema.SIZE: size,
            schema.UPLOAD_DATE: date,
        }
        shard = self.placement.user_shard(user, key)
        if shard:
            entry[schema.USER_SHARD] = shard
        return entry

    def _items(self, entry: dict[str, Any]) -> list[dict[str, Any]]:
        return entry_items(entry, "")

    def _delete_items(self, items: list[dict[str, Any]]) -> None:
        table = self.engine.resource.Table(self.engine.name_table)
        with table.batch_writer(overwrite_by_pkeys=[schema.NAME_SCOPE, schema.NAME_SORT]) as batch:
            for item in items:
                batch.delete_item(Key=item_key(item))

    def reader(
        self, *, terms: bool | None = True, executor: ThreadPoolExecutor | None = None, **extra: Any
    ) -> NameReader:
        table = self.engine.resource.Table(self.engine.table)
        return NameReader(
            table.meta.client,
            self.engine.table,
            self.engine.name_table,
            placement=self.placement,
            executor=executor,
            entries=FileReader(table, self.placement),
            terms_complete=terms,
            **extra,
        )

    def truth(self, query: NameQuery) -> list[str]:
        """The keys `query` answers, in its order (upload time, then key digest), from the entries."""
        found = []
        for key, entry in self.entries.items():
            name = name_of(str(entry[schema.FILE_ID]))
            listing = query.listing
            if query.words and not name_terms.matches(name, query.words):
                continue
            if query.ext and not has_extension(name, query.ext):
                continue
            user = ShardPlacement.public_user(entry[schema.UPLOAD_USER], entry.get(schema.USER_SHARD))
            if isinstance(listing, UserQuery) and user != listing.user:
                continue
            if not listing.has_time(entry[schema.UPLOAD_DATE]):
                continue
            size = entry[schema.SIZE]
            if (listing.min_size is not None and size < listing.min_size) or (
                listing.max_size is not None and size > listing.max_size
            ):
                continue
            found.append((time_term(entry[schema.UPLOAD_DATE], key), key))
        found.sort(reverse=not query.ascending)
        return [key for _, key in found]


def pages(reader: NameReader, query: NameQuery, *, limit: int) -> Iterator[NamePage]:
    """Every page of `query`, page after page."""
    position = None
    for _ in range(10_000):
        page = reader.list_files(query, limit=limit, position=position)
        yield page
        position = page.next_position
        if position is None:
            return
    raise AssertionError("the list never ended")


def bucket_query(world: World, **bounds: Any) -> BucketQuery:
    return BucketQuery(bucket=world.bucket, **bounds)


@pytest.fixture(
    scope="module", params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)]
)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """Fresh tables on moto or DynamoDB Local, for the module's tests (each uses buckets of its own)."""
    endpoint = None
    if request.param == "dynamodb_local":
        local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        endpoint = local.endpoint_url
    suffix = uuid.uuid4().hex[:8]
    table, name_table = f"FileMetaData-{suffix}", f"FileNameIndex-{suffix}"
    with mock_aws():
        options = {"endpoint_url": endpoint, "region_name": "us-east-1"}
        client = boto3.client("dynamodb", **options)
        client.create_table(**schema.create_table_request(table))
        client.create_table(**schema.create_name_table_request(name_table))
        for name in (table, name_table):
            client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1})
        try:
            yield Engine(client, boto3.resource("dynamodb", **options), table, name_table)
        finally:
            client.delete_table(TableName=table)
            client.delete_table(TableName=name_table)
