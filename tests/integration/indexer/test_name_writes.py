"""The indexer writes and deletes a name's items a few BatchWriteItems at a time, in parallel: a long name
has 100 and more term items (a 255-byte name 111). Its removals were one conditional DeleteItem an item
(BatchWriteItem takes no condition), a hundred calls one after another; they are BatchWriteItems now,
checked against the key's entry afterwards (`file_index.write.names`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest

from file_index.rules import schema
from file_index.write.names import NameIndex
from tests.integration.indexer.conftest import Indexer
from tests.integration.indexer.notifications import SqsQueue, notification, s3_record

# A long name of many words: 74 term items.
LONG_NAME = "USER001_" + " ".join(f"word{n:02d}x" for n in range(24)) + ".txt"


def name_items() -> int:
    pages = (
        boto3.client("dynamodb")
        .get_paginator("scan")
        .paginate(TableName=schema.NAME_TABLE_NAME, Select="COUNT")
    )
    return sum(page["Count"] for page in pages)


@pytest.fixture
def named_indexer(moto_indexer: Indexer, monkeypatch: pytest.MonkeyPatch) -> Indexer:
    boto3.client("dynamodb").create_table(**schema.create_name_table_request())
    monkeypatch.setenv("NAME_TABLE_NAME", schema.NAME_TABLE_NAME)
    return moto_indexer


def test_a_names_items_are_deleted_a_batch_at_a_time_in_parallel(
    named_indexer: Indexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = SqsQueue()
    queue.send(notification(s3_record("ObjectCreated:Put", LONG_NAME, sequencer="01", size=5)))
    assert queue.deliver(named_indexer, named_indexer.context) == []
    items = name_items()
    assert items > 50

    in_flight = 0
    most = 0
    removals: list[int] = []
    lock = threading.Lock()
    original = NameIndex._batch_write

    def slowed(self: NameIndex, requests: list[dict[str, Any]]) -> None:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            removals.append(sum("DeleteRequest" in request for request in requests))
        time.sleep(0.005)  # a call's round trip, so that calls made one after another never overlap
        try:
            original(self, requests)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(NameIndex, "_batch_write", slowed)
    queue.send(notification(s3_record("ObjectRemoved:Delete", LONG_NAME, sequencer="02")))
    assert queue.deliver(named_indexer, named_indexer.context) == []
    assert name_items() == 0
    assert most > 1
    # Every item in a BatchWriteItem of 25 at most: a few requests, not one an item.
    assert sum(removals) == items
    assert len(removals) == -(-items // 25)
