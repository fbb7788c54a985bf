"""The writer's removals of name items (`file_index.write.names`): unconditional BatchWriteItems, then the
key's entry read back, and the removed items its live entry has put back. This is what the removals'
condition on `since` used to guard: a removal that meets the key live again with the same upload time
(a version restored, a create delivered again) must not leave that entry without its items. On moto and
on DynamoDB Local."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.name_items import entry_items, item_key
from file_index.store.entries import plain_item
from file_index.store.sdk import serialize
from file_index.write.names import NameIndex
from tests.integration.conftest import DynamoDBLocal

TABLE, NAME_TABLE = "FileMetaData-removals", "FileNameIndex-removals"
KEY = "alice/reports/Quarterly Report 2024.pdf"


def _entry(upload_date: str, order: str, size: int = 100) -> dict[str, Any]:
    return {
        schema.OBJECT_KEY: KEY,
        schema.BUCKET_NAME: "fileupload",
        schema.FILE_ID: "reports/Quarterly Report 2024.pdf",
        schema.SIZE: size,
        schema.UPLOAD_DATE: upload_date,
        schema.UPLOAD_USER: "alice",
        schema.ORDER_KEY: order,
    }


OLD = _entry("2024-05-01T10:00:00.000Z", "0001")
NEW = _entry("2024-05-02T10:00:00.000Z", "0003", size=200)
TOMBSTONE = {schema.OBJECT_KEY: KEY, schema.DELETED: True, schema.ORDER_KEY: "0002"}


@pytest.fixture(params=["moto", "dynamodb-local"])
def dynamodb(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "moto":
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            yield _tables(client)
        return
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    client = _tables(local.client())
    yield client
    client.delete_table(TableName=TABLE)
    client.delete_table(TableName=NAME_TABLE)


def _tables(client: Any) -> Any:
    client.create_table(**schema.create_table_request(TABLE))
    client.create_table(**schema.create_name_table_request(NAME_TABLE))
    return client


def _store(client: Any, entry: dict[str, Any]) -> None:
    client.put_item(TableName=TABLE, Item=serialize(entry))


def _held(client: Any) -> set[tuple[str, str]]:
    pages = client.get_paginator("scan").paginate(TableName=NAME_TABLE, ConsistentRead=True)
    return {
        (item[schema.NAME_SCOPE], item[schema.NAME_SORT])
        for page in pages
        for item in map(plain_item, page["Items"])
    }


def _keys(entry: dict[str, Any]) -> set[tuple[str, str]]:
    return {tuple(item_key(item).values()) for item in entry_items(entry, "")}


def test_a_delete_removes_every_item_of_the_entry_it_replaced(dynamodb: Any) -> None:
    names = NameIndex(dynamodb, NAME_TABLE, entry_table=TABLE)
    names.put_entry(OLD, OLD[schema.ORDER_KEY])
    _store(dynamodb, TOMBSTONE)

    names.delete_entry(OLD)

    assert _held(dynamodb) == set()


def test_a_removal_that_meets_the_key_live_again_puts_its_items_back(dynamodb: Any) -> None:
    """A delete's removal, with the version it removed restored (same upload time, same name) and written
    before the removal reads the entry back: the restored entry keeps every item, under its position."""
    names = NameIndex(dynamodb, NAME_TABLE, entry_table=TABLE)
    names.put_entry(OLD, OLD[schema.ORDER_KEY])
    restored = OLD | {schema.ORDER_KEY: "0004"}
    _store(dynamodb, restored)

    names.delete_entry(OLD)

    assert _held(dynamodb) == _keys(restored)
    since = {item[schema.NAME_SINCE] for item in _items(dynamodb)}
    assert since == {"0004"}


def test_an_overwrite_removes_the_old_time_and_keeps_the_new(dynamodb: Any) -> None:
    names = NameIndex(dynamodb, NAME_TABLE, entry_table=TABLE)
    names.put_entry(OLD, OLD[schema.ORDER_KEY])
    _store(dynamodb, NEW)

    names.move_entry(OLD, NEW, NEW[schema.ORDER_KEY])

    assert _held(dynamodb) == _keys(NEW)
    assert not _keys(OLD) - _keys(NEW) & _held(dynamodb)


def test_an_overwrite_that_meets_the_old_version_restored_keeps_its_items(dynamodb: Any) -> None:
    """The overwrite's removal of the old time's items, after the old version came back as current (the
    new one deleted for good) and wrote its entry: the old version's items stay."""
    names = NameIndex(dynamodb, NAME_TABLE, entry_table=TABLE)
    names.put_entry(OLD, OLD[schema.ORDER_KEY])
    restored = OLD | {schema.ORDER_KEY: "0005"}
    _store(dynamodb, restored)

    names.move_entry(OLD, NEW, NEW[schema.ORDER_KEY])

    assert _keys(restored) <= _held(dynamodb)


def _items(client: Any) -> list[dict[str, Any]]:
    pages = client.get_paginator("scan").paginate(TableName=NAME_TABLE, ConsistentRead=True)
    return [plain_item(item) for page in pages for item in page["Items"]]
