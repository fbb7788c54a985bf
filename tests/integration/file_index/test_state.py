"""The index state record: BUILDING while a run works, READY after, owned by one run at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.objects import MAX_KEY_BYTES, is_record_key
from file_index.store.state import IndexStateStore, Operation, RunSupersededError, State, state_key


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
    assert is_record_key(key)
    assert state_key("a") != state_key("a.b")
    assert not is_record_key("~index-state~fileupload.a")  # an S3 key may look like it, but is shorter


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


def test_statistics_add_up_like_counters_and_count_only_once_the_run_is_complete(
    store: IndexStateStore,
) -> None:
    store.start("b", Operation.BACKFILL, "run-1")
    first = {"entries": 2, "bytes": 600, "size3": 1, "size21": 1, "month2017-08": 2}
    store.add_progress("b", "run-1", {"listed": 2}, statistics=first)
    store.add_progress(
        "b", "run-1", {"listed": 1}, statistics={"entries": 1, "bytes": 300, "size3": 1, "month2017-09": 1}
    )
    building = store.read("b")
    assert building is not None
    assert building.statistics == {
        "entries": 3,
        "bytes": 900,
        "size3": 2,
        "size21": 1,
        "month2017-08": 2,
        "month2017-09": 1,
    }
    assert building.counts == {"listed": 3}  # the statistics are no progress counters
    # A run still going has counted part of the bucket: nothing the planner may rely on yet.
    assert building.index_statistics() is None
    done = store.finish("b", "run-1")
    statistics = done.index_statistics()
    assert statistics is not None
    assert (statistics.count, statistics.entry_bytes) == (3, 300)
    assert statistics.sizes == {3: 2, 21: 1}
    assert statistics.months == {"2017-08": 2, "2017-09": 1}
    assert done.to_json()["statistics"] == {"entries": 3, "meanEntryBytes": 300, "months": 2, "source": "run"}
    # A new run starts them afresh.
    assert store.start("b", Operation.RECONCILE, "run-2").statistics == {}


def test_statistics_of_a_long_lived_bucket_are_added_in_several_updates(store: IndexStateStore) -> None:
    """A reconcile of a bucket uploaded to for 25 years reports 300 months and 64 octaves at once: more
    than one UpdateItem may hold (DynamoDB allows 300 operators, 4 KB an expression); all of it adds up."""
    store.start("b", Operation.RECONCILE, "run-1")
    months = {f"month{2000 + n // 12}-{n % 12 + 1:02d}": n + 1 for n in range(300)}
    sizes = {f"size{n}": 2 for n in range(64)}
    statistics = {"entries": 128, "bytes": 38_400} | sizes | months
    store.add_progress("b", "run-1", {"listed": 128}, resume_after="last-key", statistics=statistics)
    store.add_progress("b", "run-1", {"listed": 1}, statistics={"entries": 1, "month2000-01": 1})
    state = store.read("b")
    assert state is not None
    assert state.counts == {"listed": 129}
    assert state.resume_after == "last-key"
    assert state.statistics == statistics | {"entries": 129, "month2000-01": 2}


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


# The Z-order flag: owned by no run, kept by every run's writes.


def test_the_z_order_flag_survives_start_progress_finish_and_fail(store: IndexStateStore) -> None:
    store.start("b", Operation.BACKFILL, "run-1")
    assert store.read("b").z_order_pending is False  # type: ignore[union-attr]
    store.mark_z_order_pending("b")
    store.add_progress("b", "run-1", {"written": 1}, resume_after="k1")
    assert store.finish("b", "run-1").z_order_pending is True
    # A new run replaces the record (counts start afresh) but keeps the flag.
    started = store.start("b", Operation.RECONCILE, "run-2")
    assert started.z_order_pending is True
    assert started.counts == {}
    store.fail("b", "run-2", "stopped")
    assert store.start("b", Operation.RECONCILE, "run-2", resume=True).z_order_pending is True
    done = store.finish("b", "run-2")
    assert (done.state, done.z_order_pending) == (State.READY, True)
    assert done.to_json()["zOrderPending"] is True
    store.clear_z_order_pending("b")
    cleared = store.read("b")
    assert cleared is not None
    assert (cleared.state, cleared.run_id, cleared.z_order_pending) == (State.READY, "run-2", False)
    # And a run started after the clear does not bring it back.
    assert store.start("b", Operation.BACKFILL, "run-3").z_order_pending is False


def test_a_flag_marked_on_a_bucket_without_a_record_names_no_run_and_clearing_it_removes_it(
    store: IndexStateStore,
) -> None:
    store.mark_z_order_pending("b")
    flagged = store.read("b")
    assert flagged is not None
    assert flagged.z_order_pending is True
    assert flagged.has_run is False
    assert (flagged.bucket, flagged.operation, flagged.run_id, flagged.counts) == ("b", None, None, {})
    # Not known to be complete, like any record without a run; a reader with an initial state uses that.
    assert flagged.state is State.BUILDING
    store.mark_z_order_pending("b")  # marking twice changes nothing
    assert store.read("b") == flagged
    store.clear_z_order_pending("b")
    assert store.read("b") is None
    store.clear_z_order_pending("b")  # clearing a bucket without a record creates none
    assert store.read("b") is None
    assert store.read("other") is None


def test_a_run_started_on_a_flag_only_record_keeps_the_flag(store: IndexStateStore) -> None:
    store.mark_z_order_pending("b")
    started = store.start("b", Operation.BACKFILL, "run-1")
    assert (started.has_run, started.z_order_pending, started.state) == (True, True, State.BUILDING)
    assert store.finish("b", "run-1").z_order_pending is True
    store.clear_z_order_pending("b")  # a record of a run stays; only the flag goes
    assert store.read("b").run_id == "run-1"  # type: ignore[union-attr]


def test_a_flag_that_is_not_a_stored_true_reads_as_not_pending(store: IndexStateStore) -> None:
    store.start("b", Operation.BACKFILL, "run-1")
    store._dynamodb.update_item(
        TableName=store._table,
        Key={"objectKey": {"S": state_key("b")}},
        UpdateExpression="SET zOrderPending = :text",
        ExpressionAttributeValues={":text": {"S": "yes"}},
    )
    assert store.read("b").z_order_pending is False  # type: ignore[union-attr]


def test_a_mark_between_the_read_and_the_put_of_a_start_is_kept(store: IndexStateStore) -> None:
    """`start` carries the flag over with a conditional put: a mark landing in between makes it retry."""
    store.start("b", Operation.BACKFILL, "run-1")
    client = store._dynamodb
    calls = {"get": 0}

    class MarkAfterFirstRead:
        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def get_item(self, **request: Any) -> Any:
            response = client.get_item(**request)
            calls["get"] += 1
            if calls["get"] == 1:
                store.mark_z_order_pending("b")  # another writer, right after the read
            return response

    racing = IndexStateStore(MarkAfterFirstRead(), store._table)
    assert racing.start("b", Operation.RECONCILE, "run-2").z_order_pending is True
    assert calls["get"] >= 2
