"""Measure 23's proxy and arithmetic: every request through `CapacityProxy` reaches DynamoDB Local asking
for its consumed capacity, comes back as DynamoDB sent it (botocore checks the body's CRC), and the answers
are kept per kind; a phase's units are per upload, and a search whose count differs from the names' fails
the measure rather than printing a figure."""

from __future__ import annotations

import uuid

import pytest

from bench.served_writes import CapacityProxy, Phase, Search, Served, phase_units, rows
from bench.upload_writes import Units
from file_index.rules import schema
from tests.integration.conftest import DynamoDBLocal

SERVED = Served(
    api_url="http://127.0.0.1:1",
    aws_endpoint="http://127.0.0.1:1",
    bucket="fileupload",
    queue_url="",
    dlq_url="",
    table="FileMetaData",
    name_table="FileNameIndex",
)


def test_the_proxy_asks_every_request_for_its_capacity_and_answers_unchanged(
    dynamodb_local: DynamoDBLocal,
) -> None:
    table = f"FileMetaData-{uuid.uuid4().hex[:12]}"
    dynamodb_local.client().create_table(**schema.create_table_request(table))
    key = {schema.OBJECT_KEY: {"S": "user0001/a.txt"}}
    item = key | {schema.BUCKET_NAME: {"S": "b"}, schema.UPLOAD_DATE: {"S": "2017-08-20T09:00:00.000Z"}}
    with CapacityProxy(dynamodb_local.endpoint_url) as proxy:
        client = DynamoDBLocal(proxy.url).client()
        proxy.take()
        client.put_item(TableName=table, Item=item)
        got = client.get_item(TableName=table, Key=key, ConsistentRead=True)
        with pytest.raises(client.exceptions.ConditionalCheckFailedException):
            client.put_item(TableName=table, Item=item, ConditionExpression="attribute_not_exists(objectKey)")
        taken = proxy.take()

    assert got["Item"] == item  # the answer as DynamoDB Local sent it
    assert "ConsumedCapacity" in got  # asked on the way, though the client did not ask
    assert taken.requests == {"PutItem": 2, "GetItem": 1}
    assert taken.failed_conditions == 1
    assert taken.read_units == 1.0  # a strongly consistent read of an item under 4 KB
    (written,) = taken.writes
    assert written["TableName"] == table
    assert written["CapacityUnits"] == written["Table"]["CapacityUnits"] + sum(
        index["CapacityUnits"] for index in written.get("GlobalSecondaryIndexes", {}).values()
    )
    assert written["CapacityUnits"] >= 2.0  # the item and at least one GSI it enters
    assert proxy.take().requests == {}  # taken: the next phase starts from nothing


def test_a_phase_is_its_units_per_upload() -> None:
    from bench.served_writes import Tally

    answer = {
        "TableName": "FileNameIndex",
        "CapacityUnits": 40.0,
        "Table": {"CapacityUnits": 20.0},
        "GlobalSecondaryIndexes": {"nameUser-nameSort-index": {"CapacityUnits": 20.0}},
    }
    entry = {
        "TableName": "FileMetaData",
        "CapacityUnits": 10.0,
        "Table": {"CapacityUnits": 2.0},
        "GlobalSecondaryIndexes": {"a": {"CapacityUnits": 8.0}},
    }
    tally = Tally(writes=[answer, entry], requests={"PutItem": 2, "BatchWriteItem": 4})  # type: ignore[arg-type]

    phase = phase_units(tally, 2, SERVED)

    assert phase.units.parts == {"entry": 1.0, "entry GSIs": 4.0, "name items": 10.0, "name user GSI": 10.0}
    assert phase.requests == {"PutItem": 1.0, "BatchWriteItem": 2.0}


def test_rows_price_each_phase_and_a_wrong_search_fails_the_measure() -> None:
    units = Units({"entry": 1.0, "entry GSIs": 4.0, "name items": 18.0, "name user GSI": 18.0})
    results = {"measure 16's names": {"new key": Phase(100, units, {"PutItem": 1.0}, failed_conditions=2)}}
    right = Search("img", found=30, expected=30, pages=1, read_units=15.0)

    write_row, read_row = rows(results, [right], files=100)

    assert write_row.measure == "23. served: write units per new key, measure 16's names"
    assert (write_row.ours, write_row.comparison) == (41.0, 5.0)
    assert "$25.62 per million" in write_row.note
    assert "2 failed conditions" in write_row.note
    assert read_row.ours == 0.5
    with pytest.raises(RuntimeError, match="found 29 files, the names hold 30"):
        rows(results, [Search("img", found=29, expected=30, pages=1, read_units=15.0)], files=100)
