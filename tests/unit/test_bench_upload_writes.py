"""Measure 21's arithmetic: DynamoDB's ConsumedCapacity answers summed into an upload's four parts (the
entry, its GSIs, the name items, their user GSI), the mean upload, the rows, and the hook that asks every
write for them."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from bench.upload_writes import (
    BEFORE,
    ENTRIES_ALONE,
    ENTRY_TABLE,
    LONG_NAME,
    NAME_TABLE,
    PEOPLE,
    CapacityLog,
    Units,
    mean_units,
    rows,
    tally,
    terms_of,
    variants,
)
from file_index.rules.name_terms import name_terms, prefix_terms


def _answer(table: str, in_table: float, indexes: dict[str, float]) -> dict[str, Any]:
    return {
        "TableName": table,
        "CapacityUnits": in_table + sum(indexes.values()),
        "Table": {"CapacityUnits": in_table},
        "GlobalSecondaryIndexes": {name: {"CapacityUnits": units} for name, units in indexes.items()},
    }


def _tally(answers: list[dict[str, Any]]) -> Units:
    return tally(answers, entry_tables=(ENTRY_TABLE,), name_table=NAME_TABLE)


def test_each_table_and_its_gsis_are_their_own_parts() -> None:
    entry_gsis = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 2.0}  # an overwrite moves c and d: out, then in
    answers = [
        _answer(ENTRY_TABLE, 1.0, entry_gsis),
        _answer(NAME_TABLE, 25.0, {"nameUser-nameSort-index": 25.0}),  # a BatchWriteItem of 25 items
        _answer(NAME_TABLE, 1.0, {"nameUser-nameSort-index": 1.0}),
    ]

    units = _tally(answers)

    assert units.parts == {"entry": 1.0, "entry GSIs": 6.0, "name items": 26.0, "name user GSI": 26.0}
    assert (units.entries, units.names, units.total) == (7.0, 52.0, 59.0)


def test_an_answer_without_index_detail_counts_in_its_table() -> None:
    answer = {"TableName": NAME_TABLE, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    assert _tally([answer]).parts["name items"] == 1.0


def test_an_answer_whose_parts_do_not_add_up_or_of_another_table_is_refused() -> None:
    wrong = _answer(ENTRY_TABLE, 1.0, {"a": 1.0}) | {"CapacityUnits": 3.0}
    with pytest.raises(ValueError, match=r"3\.0 units in all"):
        _tally([wrong])
    with pytest.raises(ValueError, match="unexpected table"):
        _tally([_answer("Other", 1.0, {})])


def test_the_mean_upload_averages_every_part_and_request() -> None:
    one = Units({"entry": 1.0, "entry GSIs": 4.0, "name items": 20.0, "name user GSI": 20.0}, {"PutItem": 1})
    two = Units(
        {"entry": 1.0, "entry GSIs": 4.0, "name items": 30.0, "name user GSI": 30.0},
        {"PutItem": 1, "BatchWriteItem": 2},
        failed_conditions=1,
    )

    mean = mean_units([one, two])

    assert mean.parts == {"entry": 1.0, "entry GSIs": 4.0, "name items": 25.0, "name user GSI": 25.0}
    assert mean.requests == {"PutItem": 1.0, "BatchWriteItem": 1.0}
    assert mean.failed_conditions == 1
    assert mean.total == 55.0


def test_a_row_is_the_upload_against_its_entry_alone_priced_on_demand() -> None:
    upload = Units(
        {"entry": 1.0, "entry GSIs": 4.0, "name items": 27.0, "name user GSI": 27.0}, {"PutItem": 1}
    )

    (row,) = rows({"measure 16's names": {"new key": [upload]}}, {"measure 16's names": [20, 32]})

    assert row.measure == "21. write units per new key, measure 16's names"
    assert (row.ours, row.comparison, row.ratio) == (59.0, 5.0, 59.0 / 5.0)
    assert "$36.88 per million" in row.note  # 59 × $0.625
    assert "26.0 terms a name (20–32)" in row.note
    assert "failed" not in row.note


def test_the_long_name_is_255_bytes() -> None:
    assert len(LONG_NAME.encode()) == 255


def test_the_log_asks_every_write_for_its_capacity_and_keeps_the_answers() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    log = CapacityLog(client)
    sent: list[dict[str, Any]] = []
    # After the log's own hook: the parameters as sent.
    client.meta.events.register("before-parameter-build.dynamodb", lambda params, **_: sent.append(params))
    key = {"objectKey": {"S": "u/a.txt"}}
    with Stubber(client) as stub:
        put = _answer(ENTRY_TABLE, 1.0, {"bucketName-size-index": 1.0})
        batch = _answer(NAME_TABLE, 2.0, {"nameUser-nameSort-index": 2.0})
        stub.add_response("put_item", {"ConsumedCapacity": put})
        stub.add_response("batch_write_item", {"UnprocessedItems": {}, "ConsumedCapacity": [batch]})
        stub.add_response("get_item", {"ConsumedCapacity": {"TableName": ENTRY_TABLE, "CapacityUnits": 0.5}})
        stub.add_client_error("delete_item", "ConditionalCheckFailedException")
        client.put_item(TableName=ENTRY_TABLE, Item=key)
        client.batch_write_item(RequestItems={NAME_TABLE: [{"PutRequest": {"Item": key}}]})
        client.get_item(TableName=ENTRY_TABLE, Key=key)  # a read: not asked, not counted
        with pytest.raises(client.exceptions.ConditionalCheckFailedException):
            client.delete_item(TableName=ENTRY_TABLE, Key=key)

    units = log.take()

    asked = [params.get("ReturnConsumedCapacity") for params in sent]
    assert asked == ["INDEXES", "INDEXES", None, "INDEXES"]
    assert units.parts == {"entry": 1.0, "entry GSIs": 1.0, "name items": 2.0, "name user GSI": 2.0}
    assert units.requests == {"PutItem": 1.0, "BatchWriteItem": 1.0, "DeleteItem": 1.0}
    assert units.failed_conditions == 1
    assert log.take().total == 0.0  # taken: the next upload starts from nothing


def test_every_entry_table_counts_as_the_entry() -> None:
    answers = [_answer("FileMetaData-zorder", 1.0, {"bucketName-zAddress-index": 1.0})]

    units = tally(answers, entry_tables=(ENTRY_TABLE, "FileMetaData-zorder"), name_table=NAME_TABLE)

    assert (units.parts["entry"], units.parts["entry GSIs"]) == (1.0, 1.0)


def test_the_first_layout_is_written_beside_today_in_the_same_run() -> None:
    chosen = {variant.label: variant for variant in variants(3)}
    before = chosen[f"{PEOPLE}, {BEFORE}"]

    assert before.first_layout
    assert before.uploads == chosen[PEOPLE].uploads
    assert {f"document names, {BEFORE}", f"a 255-byte name, {BEFORE}", ENTRIES_ALONE} <= set(chosen)
    assert not chosen[ENTRIES_ALONE].name_index
    # Its terms are every prefix term (232 for the longest name), today's fewer (111).
    assert terms_of(chosen[f"a 255-byte name, {BEFORE}"]) == [len(prefix_terms(LONG_NAME))]
    assert terms_of(chosen["a 255-byte name"]) == [len(name_terms(LONG_NAME))]
    assert terms_of(chosen[ENTRIES_ALONE]) == [0, 0, 0]


def test_the_writer_cpu_row_sets_an_upload_against_the_same_without_a_name_index() -> None:
    with_names = Units(
        {"entry": 1.0, "entry GSIs": 4.0, "name items": 18.0, "name user GSI": 18.0}, cpu_ms=9.0
    )
    alone = Units({"entry": 1.0, "entry GSIs": 4.0, "name items": 0.0, "name user GSI": 0.0}, cpu_ms=3.0)
    measured = {PEOPLE: {"new key": [with_names]}, ENTRIES_ALONE: {"new key": [alone]}}

    found = rows(measured, {PEOPLE: [17], ENTRIES_ALONE: [0]}, cpu_against={PEOPLE: ENTRIES_ALONE})

    (cpu,) = [row for row in found if row.unit == "ms/upload"]
    assert cpu.measure == f"21. writer CPU per new key, {PEOPLE}"
    assert (cpu.ours, cpu.comparison, cpu.ratio) == (9.0, 3.0, 3.0)
    assert "the name items' share 6.00 ms" in cpu.note
