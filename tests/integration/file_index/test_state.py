"""The index state record: BUILDING while a run works, READY after, owned by one run at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index import schema
from file_index.objects import MAX_KEY_BYTES
from file_index.state import IndexStateStore, Operation, RunSupersededError, State, is_state_key, state_key


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def store(request: pytest.FixtureRequest) -> Iterator[IndexStateStore]:
    if request.param == "moto":
        with mock_aws():
            client: Any = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(**schema.create_table_request("state-test"))
            yield IndexStateStore(client, "state-test")
    else:
        table = request.getfixturevalue("dynamodb_local_table")
        engine = request.getfixturevalue("dynamodb_local")
        yield IndexStateStore(engine.client(), table)


def test_the_state_key_is_longer_than_any_s3_key_and_names_its_bucket() -> None:
    key = state_key("fileupload.a")
    assert len(key.encode("utf-8")) == MAX_KEY_BYTES + 1
    assert is_state_key(key)
    assert state_key("a") != state_key("a.b")
    assert not is_state_key("~index-state~fileupload.a")  # an S3 key may look like it, but is shorter


def test_a_run_goes_from_building_to_ready_with_its_counts(store: IndexStateStore) -> None:
    assert store.read("b") is None
    started = store.start("b", Operation.BACKFILL, "run-1")
    assert started.state is State.BUILDING
    assert started.started_at
    assert started.finished_at is None
    store.add_progress("b", "run-1", {"listed": 3, "written": 2}, resume_after="k2")
    store.add_progress("b", "run-1", {"listed": 1, "skipped": 1})
    building = store.read("b")
    assert building is not None
    assert building.counts == {"listed": 4, "written": 2, "skipped": 1}
    assert building.resume_after == "k2"
    done = store.finish("b", "run-1")
    assert done.state is State.READY
    assert done.finished_at
    assert done.resume_after is None
    assert done.to_json()["progress"] == {"listed": 4, "skipped": 1, "written": 2}


def test_a_newer_run_takes_the_record_and_the_older_one_can_no_longer_write(store: IndexStateStore) -> None:
    store.start("b", Operation.BACKFILL, "old")
    store.add_progress("b", "old", {"written": 5})
    store.start("b", Operation.RECONCILE, "new")
    with pytest.raises(RunSupersededError, match="no longer belongs to run 'old'"):
        store.add_progress("b", "old", {"written": 1})
    with pytest.raises(RunSupersededError):
        store.finish("b", "old")
    state = store.read("b")
    assert state is not None
    assert state.run_id == "new"
    assert state.counts == {}
    assert state.state is State.BUILDING


def test_resuming_keeps_counts_and_checkpoint(store: IndexStateStore) -> None:
    store.start("b", Operation.BACKFILL, "run-1")
    store.add_progress("b", "run-1", {"written": 7}, resume_after="k7")
    store.fail("b", "run-1", "interrupted")
    resumed = store.start("b", Operation.BACKFILL, "run-1", resume=True)
    assert resumed.counts == {"written": 7}
    assert resumed.resume_after == "k7"
    assert resumed.last_error is None
    with pytest.raises(RunSupersededError):
        store.start("b", Operation.BACKFILL, "other", resume=True)


def test_a_record_damaged_by_hand_reads_as_building_and_a_new_run_rewrites_it(store: IndexStateStore) -> None:
    store.start("b", Operation.BACKFILL, "run-1")
    store.finish("b", "run-1")
    client = store._dynamodb
    table = store._table
    client.update_item(
        TableName=table,
        Key={"objectKey": {"S": state_key("b")}},
        UpdateExpression="SET #s = :weird, #o = :op, count_listed = :text",
        ExpressionAttributeNames={"#s": "state", "#o": "operation"},
        ExpressionAttributeValues={":weird": {"S": "WEIRD"}, ":op": {"N": "3"}, ":text": {"S": "many"}},
    )
    damaged = store.read("b")
    assert damaged is not None
    assert damaged.state is State.BUILDING
    assert damaged.operation is None
    assert damaged.counts == {}
    assert store.start("b", Operation.RECONCILE, "run-2").state is State.BUILDING
    assert store.finish("b", "run-2").state is State.READY
