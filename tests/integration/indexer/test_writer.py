"""The conditional write, on moto and on DynamoDB Local: ordering, tombstones, versions."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import permutations
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from file_index.rules import schema
from file_index.rules.objects import NULL_VERSION, ObjectEvent
from file_index.store.sdk import serialize
from file_index.write.conditions import Outcome, WriteContentionError
from file_index.write.writer import apply_event
from indexer.events import parse_record
from tests.integration.indexer.conftest import BUCKET, Engine
from tests.integration.indexer.notifications import is_live, query_keys, read_items, s3_record

KEY = "USER001_FILE 001.txt"
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def event(name: str, **fields: object) -> ObjectEvent:
    parsed = parse_record(s3_record(name, fields.pop("key", KEY), **fields))  # type: ignore[arg-type]
    assert parsed is not None
    return parsed


def put(sequencer: str | None, size: int = 12, **fields: object) -> ObjectEvent:
    return event("ObjectCreated:Put", sequencer=sequencer, size=size, **fields)


def delete(sequencer: str | None, **fields: object) -> ObjectEvent:
    return event("ObjectRemoved:Delete", sequencer=sequencer, **fields)


def marker(sequencer: str, version_id: str, name: str = "ObjectRemoved:DeleteMarkerCreated") -> ObjectEvent:
    return event(name, sequencer=sequencer, version_id=version_id)


@pytest.fixture(autouse=True)
def indexed_bucket(engine: Engine) -> Any:
    """The indexed bucket on moto, empty unless a test fills it: what the writer's HEAD reads."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    return s3


def apply(engine: Engine, *events: ObjectEvent) -> list[Outcome]:
    s3 = boto3.client("s3")
    return [apply_event(engine.client, engine.table_name, e, s3=s3, now=NOW) for e in events]


def item(engine: Engine, key: str = KEY) -> dict | None:
    return read_items(engine.client, engine.table_name, [key])[key]


def test_create_writes_every_attribute(engine: Engine) -> None:
    assert apply(engine, put("0055AED6DCD90281E5", size=1234, version_id="v1")) == [Outcome.WRITTEN]
    assert item(engine) == {
        "objectKey": KEY,
        "bucketName": "fileupload.a",
        "fileId": "FILE 001.txt",
        "size": 1234,
        "uploadUser": "USER001",
        "uploadDate": "2024-05-01T10:00:00.123Z",
        "sequencer": "0055AED6DCD90281E5",
        "orderKey": "0055AED6DCD90281E5".ljust(64, "0"),
        "eTag": "d41d8cd98f00b204e9800998ecf8427e",
        "versionId": "v1",
    }
    assert query_keys(engine.client, engine.table_name, schema.USER_DATE_INDEX, "USER001") == {KEY}
    assert query_keys(engine.client, engine.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a") == {KEY}


def test_newer_wins_older_and_equal_are_stale(engine: Engine) -> None:
    assert apply(engine, put("0B", size=2), put("0A", size=1), put("0B", size=3), put("0b0", size=4)) == [
        Outcome.WRITTEN,
        Outcome.STALE,
        Outcome.STALE,  # equal sequencer: a duplicate
        Outcome.STALE,  # "0b0" pads to the same value as "0B"
    ]
    assert item(engine)["size"] == 2  # type: ignore[index]
    assert apply(engine, put("0B01", size=5)) == [Outcome.WRITTEN]
    assert item(engine)["size"] == 5  # type: ignore[index]


def test_right_pad_rule_decides_between_lengths(engine: Engine) -> None:
    # Plain comparison would put "0A" before "0A0001" and "1" before "0FFFFFFFFFFF"; the pad rule agrees on
    # the first and says "1" (= "100000000000") is the later of the second.
    assert apply(engine, put("0FFFFFFFFFFF", size=1), put("1", size=2)) == [Outcome.WRITTEN, Outcome.WRITTEN]
    assert apply(engine, put("0FFFFFFFFFFF", size=3)) == [Outcome.STALE]
    assert item(engine)["size"] == 2  # type: ignore[index]


def test_delete_before_its_create_wins_and_leaves_a_tombstone(engine: Engine) -> None:
    assert apply(engine, delete("0C"), put("0B")) == [Outcome.DELETED, Outcome.STALE]
    tombstone = item(engine)
    assert tombstone == {
        "objectKey": KEY,
        "orderKey": "0C".ljust(64, "0"),
        "sequencer": "0C",
        "deleted": True,
        "expiresAt": int(NOW.timestamp()) + 30 * 86400,
        "eTag": "d41d8cd98f00b204e9800998ecf8427e",
    }
    assert not schema.GSI_KEY_ATTRIBUTES & tombstone.keys()
    assert query_keys(engine.client, engine.table_name, schema.USER_DATE_INDEX, "USER001") == set()
    assert query_keys(engine.client, engine.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a") == set()


def test_a_later_create_replaces_the_tombstone_entirely(engine: Engine) -> None:
    apply(engine, put("0A"), delete("0B"))
    assert apply(engine, put("0C", size=7)) == [Outcome.WRITTEN]
    recreated = item(engine)
    assert recreated is not None
    assert "deleted" not in recreated
    assert "expiresAt" not in recreated
    assert recreated["size"] == 7


@pytest.mark.parametrize(
    ("name", "version_id"),
    [
        ("LifecycleExpiration:Delete", None),  # unversioned bucket: the object is gone
        ("LifecycleExpiration:DeleteMarkerCreated", "marker-1"),
        ("ObjectRemoved:DeleteMarkerCreated", "marker-1"),
    ],
)
def test_lifecycle_expiration_and_delete_markers_hide(
    engine: Engine, name: str, version_id: str | None
) -> None:
    apply(engine, put("0A", version_id=None if version_id is None else "v1"))
    assert apply(engine, event(name, sequencer="0B", version_id=version_id)) == [Outcome.DELETED]
    assert item(engine)["deleted"] is True  # type: ignore[index]


def test_delete_of_another_version_changes_nothing(engine: Engine) -> None:
    apply(engine, put("0B", version_id="v2"))
    assert apply(engine, delete("0C", version_id="v1")) == [Outcome.STALE]
    assert item(engine)["versionId"] == "v2"  # type: ignore[index]
    assert "deleted" not in item(engine)  # type: ignore[operator]


class History:
    """Real calls on a moto bucket of its own, each with the event S3 sends for it; sequencers in call
    order. The writer's HEAD reads the bucket after the whole history, as an indexer that is behind does.
    """

    def __init__(self, s3: Any, bucket: str = BUCKET, *, versioning: str | None = "Enabled") -> None:
        self.s3 = s3
        self.bucket = bucket
        self.calls = 0
        if bucket != BUCKET:
            s3.create_bucket(Bucket=bucket)
        if versioning is not None:
            self.versioning(versioning)

    def _sequencer(self) -> str:
        self.calls += 1
        return f"{self.calls:04X}"

    def versioning(self, status: str) -> None:
        self.s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": status})

    def put(self, size: int) -> ObjectEvent:
        response = self.s3.put_object(Bucket=self.bucket, Key=KEY, Body=b"x" * size)
        return put(
            self._sequencer(),
            size=size,
            bucket=self.bucket,
            e_tag=response["ETag"].strip('"'),
            version_id=response.get("VersionId"),
        )

    def delete(self) -> ObjectEvent:
        response = self.s3.delete_object(Bucket=self.bucket, Key=KEY)
        assert response.get("DeleteMarker"), "a versioned bucket answers a delete with a delete marker"
        return event(
            "ObjectRemoved:DeleteMarkerCreated",
            sequencer=self._sequencer(),
            version_id=response["VersionId"],
            bucket=self.bucket,
        )

    def purge(self, version_id: str | None, name: str = "ObjectRemoved:Delete") -> ObjectEvent:
        version_id = version_id or NULL_VERSION
        self.s3.delete_object(Bucket=self.bucket, Key=KEY, VersionId=version_id)
        return event(name, sequencer=self._sequencer(), version_id=version_id, bucket=self.bucket)

    def current(self) -> tuple[str | None, int] | None:
        """(versionId, size) of the bucket's current version of the key ("null" as None); None if none."""
        try:
            head = self.s3.head_object(Bucket=self.bucket, Key=KEY)
        except ClientError as error:
            if error.response["Error"]["Code"] != "404":
                raise
            return None
        version = head.get("VersionId")
        return (None if version == NULL_VERSION else version), head["ContentLength"]


def shows(engine: Engine) -> tuple[str | None, int] | None:
    """(versionId, size) the index shows for the key ("null" as None); None when it shows nothing."""
    stored = item(engine)
    if not is_live(stored):
        assert stored is None or not schema.GSI_KEY_ATTRIBUTES & stored.keys()
        return None
    assert stored is not None
    version = stored.get("versionId")
    return (None if version == NULL_VERSION else version), stored["size"]


def test_the_delete_of_the_indexed_version_shows_the_version_that_is_current_again(
    engine: Engine, indexed_bucket: Any
) -> None:
    history = History(indexed_bucket)
    v1, v2 = history.put(1), history.put(2)
    assert apply(engine, v1, v2) == [Outcome.WRITTEN, Outcome.WRITTEN]
    purge_v2 = history.purge(v2.version_id)
    assert apply(engine, purge_v2) == [Outcome.WRITTEN]
    assert shows(engine) == (v1.version_id, 1) == history.current()
    stored = item(engine)
    assert stored is not None
    # Under the delete's position: late duplicates stay out, a later event still applies.
    assert (stored["orderKey"], stored["sequencer"]) == (purge_v2.order_key, purge_v2.sequencer)
    assert stored["eTag"] == v1.e_tag
    assert apply(engine, v2, v1, purge_v2) == [Outcome.STALE] * 3
    assert shows(engine) == (v1.version_id, 1)
    v3 = history.put(5)
    assert apply(engine, v3) == [Outcome.WRITTEN]
    assert shows(engine) == (v3.version_id, 5)


def test_the_delete_of_the_only_version_hides_the_key(engine: Engine, indexed_bucket: Any) -> None:
    history = History(indexed_bucket)
    v1 = history.put(3)
    apply(engine, v1)
    assert apply(engine, history.purge(v1.version_id)) == [Outcome.DELETED]
    assert shows(engine) is None is history.current()


def test_the_delete_of_an_older_version_is_one_update_that_keeps_the_entry(
    engine: Engine, indexed_bucket: Any
) -> None:
    history = History(indexed_bucket)
    v1, v2 = history.put(1), history.put(2)
    apply(engine, v2)
    purge_v1 = history.purge(v1.version_id)
    assert apply(engine, purge_v1) == [Outcome.STALE]  # nothing visible changed
    stored = item(engine)
    assert stored is not None
    assert (stored["versionId"], stored["deletedVersions"]) == (v2.version_id, {v1.version_id})
    assert stored["purgedUntil"] == purge_v1.order_key
    assert apply(engine, v1) == [Outcome.STALE]


def current_version_purge(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """put v1, put v2, delete v2 for good: v1 is the object again, and S3 says nothing about it."""
    history = History(s3, bucket)
    v1, v2 = history.put(1), history.put(2)
    return history, [v1, v2, history.purge(v2.version_id)]


def delete_marker_removal(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """put v1, delete (a marker), delete the marker for good: v1 shows again."""
    history = History(s3, bucket)
    v1, hide = history.put(1), history.delete()
    return history, [v1, hide, history.purge(hide.version_id)]


def purge_of_a_version_whose_create_is_late(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """put c, put x, put w, delete w for good: x is the object, whatever was written in between."""
    history = History(s3, bucket)
    c, x, w = history.put(1), history.put(2), history.put(3)
    return history, [c, x, w, history.purge(w.version_id)]


def noncurrent_null_purge(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """An upload from before versioning (the "null" version), then v1; the null version expires."""
    history = History(s3, bucket, versioning=None)
    null = history.put(4)
    history.versioning("Enabled")
    v1 = history.put(1)
    return history, [null, v1, history.purge(None, "LifecycleExpiration:Delete")]


def current_purge_back_to_null(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    history = History(s3, bucket, versioning=None)
    null = history.put(4)
    history.versioning("Enabled")
    v1 = history.put(1)
    return history, [null, v1, history.purge(v1.version_id)]


def null_purged_and_uploaded_again(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """Only null versions, as while versioning is suspended: put, delete "null" for good, put again. The
    second upload is "null" too, and must be indexed whatever the order."""
    history = History(s3, bucket, versioning=None)
    first = history.put(1)
    purge = history.purge(None)
    return history, [first, purge, history.put(2), history.put(3)]


def noncurrent_purge(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """put v1, put v2, delete v1 for good: v2 stays the object."""
    history = History(s3, bucket)
    v1, v2 = history.put(1), history.put(2)
    return history, [v1, v2, history.purge(v1.version_id)]


def every_version_purged(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    history = History(s3, bucket)
    v1, v2 = history.put(1), history.put(2)
    return history, [v1, v2, history.purge(v1.version_id), history.purge(v2.version_id)]


def older_marker_purged(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """delete (a marker m1), put v2, delete m1 for good: v2 is the object."""
    history = History(s3, bucket)
    v1 = history.put(1)
    hide = history.delete()
    v2 = history.put(2)
    return history, [v1, hide, v2, history.purge(hide.version_id)]


def marker_then_older_purge(s3: Any, bucket: str) -> tuple[History, list[ObjectEvent]]:
    """put v1, delete (a marker), delete v1 for good: the marker stays current, nothing shows."""
    history = History(s3, bucket)
    v1, hide = history.put(1), history.delete()
    return history, [v1, hide, history.purge(v1.version_id, "LifecycleExpiration:Delete")]


HISTORIES = {
    builder.__name__: builder
    for builder in (
        noncurrent_purge,
        every_version_purged,
        older_marker_purged,
        marker_then_older_purge,
        current_version_purge,
        delete_marker_removal,
        purge_of_a_version_whose_create_is_late,
        noncurrent_null_purge,
        current_purge_back_to_null,
        null_purged_and_uploaded_again,
    )
}


@pytest.mark.parametrize("name", HISTORIES)
def test_every_delivery_order_of_a_versioned_history_shows_the_current_version(
    engine: Engine, indexed_bucket: Any, name: str
) -> None:
    _, events = HISTORIES[name](indexed_bucket, "probe-history")
    orders = list(permutations(range(len(events))))
    for number, order in enumerate(orders):
        # The same calls in a bucket of their own for each order, so that the HEAD sees that history.
        history, events = HISTORIES[name](indexed_bucket, f"history-{number}")
        engine.client.delete_item(TableName=engine.table_name, Key={"objectKey": {"S": KEY}})
        apply(engine, *(events[position] for position in order))
        assert shows(engine) == history.current(), f"{name}, delivered in the order {order}"
        # And once more, every event again: duplicates change nothing.
        apply(engine, *events)
        assert shows(engine) == history.current(), f"{name}, {order}, then duplicates"


def test_suspended_versioning_a_null_purge_keeps_out_only_the_older_null_uploads(
    engine: Engine, indexed_bucket: Any
) -> None:
    """Versioning suspended, with a version from when it was on: v1, then "null" uploads and a purge of the
    null version, so v1 is current again. moto 5.2.5 drops every version on a suspended upload, so the
    bucket holds the end state (v1 alone) and the events are those S3 sends for the suspended history."""
    history = History(indexed_bucket)
    v1 = history.put(1)
    events = [
        v1,
        put("0002", size=2, version_id=None),  # suspended: replaces nothing but the null version
        put("0003", size=3, version_id=NULL_VERSION),  # again, in place
        delete("0004", version_id=NULL_VERSION),  # the null version deleted for good: v1 is current
    ]
    for order in permutations(range(len(events))):
        engine.client.delete_item(TableName=engine.table_name, Key={"objectKey": {"S": KEY}})
        apply(engine, *(events[position] for position in order))
        assert shows(engine) == (v1.version_id, 1), f"delivered in the order {order}"
    # A null upload after the purge is indexed.
    assert apply(engine, put("0005", size=5, version_id=NULL_VERSION)) == [Outcome.WRITTEN]
    assert shows(engine) == (None, 5)


def test_a_null_upload_older_than_a_recorded_null_purge_stays_out(engine: Engine) -> None:
    apply(engine, put("0003", size=3, version_id="v3"))
    # The null version deleted for good while v3 is indexed: recorded, v3 stays.
    assert apply(engine, delete("0004", version_id=NULL_VERSION)) == [Outcome.STALE]
    assert item(engine)["nullPurgedAt"] == "0004".ljust(64, "0")  # type: ignore[index]
    assert apply(engine, put("0002", size=2)) == [Outcome.STALE]  # that null upload was purged
    assert shows(engine) == ("v3", 3)
    assert apply(engine, put("0005", size=5)) == [Outcome.WRITTEN]  # a later one is not
    assert shows(engine) == (None, 5)
    assert "nullPurgedAt" not in item(engine)  # type: ignore[operator]  # newer than every purge: dropped


def test_a_create_older_than_a_recorded_purge_keeps_the_record(engine: Engine) -> None:
    apply(engine, put("0001", size=1, version_id="c"))
    apply(engine, delete("0004", version_id="w"))  # w's create (0003) is still in flight
    assert apply(engine, put("0002", size=2, version_id="x")) == [Outcome.WRITTEN]
    stored = item(engine)
    assert stored is not None
    assert (stored["versionId"], stored["deletedVersions"]) == ("x", {"w"})
    assert apply(engine, put("0003", size=3, version_id="w")) == [Outcome.STALE]
    assert shows(engine) == ("x", 2)


class FailingHead:
    """S3 whose HEAD is refused, as without s3:GetObject: nothing else can make moto answer 403."""

    def head_object(self, **_: Any) -> Any:
        raise ClientError({"Error": {"Code": "403", "Message": "Forbidden"}}, "HeadObject")


def test_a_failed_lookup_raises_and_its_retry_completes(engine: Engine, indexed_bucket: Any) -> None:
    history = History(indexed_bucket)
    v1, v2 = history.put(1), history.put(2)
    apply(engine, v1, v2)
    purge_v2 = history.purge(v2.version_id)
    with pytest.raises(ClientError, match="403"):
        apply_event(engine.client, engine.table_name, purge_v2, s3=FailingHead(), now=NOW)
    assert shows(engine) is None  # hidden under the delete's position: never the deleted version
    assert apply(engine, v2) == [Outcome.STALE]
    assert apply(engine, purge_v2) == [Outcome.WRITTEN]  # the retry
    assert shows(engine) == (v1.version_id, 1)


def test_a_later_event_during_the_lookup_wins(engine: Engine, indexed_bucket: Any) -> None:
    history = History(indexed_bucket)
    v1, v2 = history.put(1), history.put(2)
    apply(engine, v1, v2)
    purge_v2 = history.purge(v2.version_id)
    v3 = history.put(3)

    class LateHead:
        def head_object(self, **request: Any) -> Any:
            answer = indexed_bucket.head_object(**request)
            apply(engine, v3)  # arrives between the HEAD and the write
            return {**answer, "VersionId": v1.version_id, "ContentLength": 1}

    assert apply_event(engine.client, engine.table_name, purge_v2, s3=LateHead(), now=NOW) is Outcome.DELETED
    assert shows(engine) == (v3.version_id, 3)


class ChangingItem:
    """A DynamoDB client on which another writer changes the item before each of this writer's updates,
    always to what makes the update just planned fail: the version delete, then the other one, then..."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.updates = 0

    def update_item(self, **request: Any) -> Any:
        self.updates += 1
        # Case 1 is tried with the item holding the deleted version; the hide with it holding another.
        held = "w" if self.updates % 2 else "x"
        self.engine.client.put_item(
            TableName=self.engine.table_name,
            Item=serialize(
                {"objectKey": KEY, "orderKey": "0001".ljust(64, "0"), "versionId": held, "size": 1}
            ),
        )
        return self.engine.client.update_item(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine.client, name)


def test_a_version_delete_gives_up_when_the_item_never_stops_changing(engine: Engine) -> None:
    changing = ChangingItem(engine)
    with pytest.raises(WriteContentionError, match="changed under every write"):
        apply_event(changing, engine.table_name, delete("0010", version_id="w"), s3=FailingHead(), now=NOW)
    assert changing.updates == 6
    # Retried once the other writer has stopped (leaving x indexed), it applies: w is recorded.
    assert apply(engine, delete("0010", version_id="w")) == [Outcome.STALE]
    assert item(engine)["deletedVersions"] == {"w"}  # type: ignore[index]


def test_a_version_delete_without_sequencer_applies_to_its_version_only(engine: Engine) -> None:
    early, late = "2024-05-01T10:00:00.100Z", "2024-05-01T10:00:00.200Z"
    apply(engine, put(None, event_time=early, version_id="v2"))
    assert apply(engine, delete(None, event_time=late, version_id="v1")) == [Outcome.STALE]
    assert apply(engine, delete(None, event_time=late, version_id="v2")) == [Outcome.DELETED]
    assert not is_live(item(engine))


def test_without_sequencer_later_time_wins_and_ties_go_to_the_last_applied(engine: Engine) -> None:
    early, late = "2024-05-01T10:00:00.100Z", "2024-05-01T10:00:00.200Z"
    assert apply(engine, put(None, event_time=late, size=2), put(None, event_time=early, size=1)) == [
        Outcome.WRITTEN,
        Outcome.STALE,
    ]
    assert apply(engine, delete(None, event_time=late)) == [Outcome.DELETED]
    assert apply(engine, put(None, event_time=late)) == [Outcome.WRITTEN]


def test_an_event_with_a_sequencer_beats_any_without(engine: Engine) -> None:
    assert apply(engine, put("00", size=1), put(None, size=2, event_time="2099-01-01T00:00:00.000Z")) == [
        Outcome.WRITTEN,
        Outcome.STALE,
    ]


def test_a_key_without_user_is_in_the_bucket_index_only(engine: Engine) -> None:
    key = "reports/2024/summary.pdf"
    from file_index.rules.key_pattern import KeyPattern

    parsed = parse_record(
        s3_record("ObjectCreated:Put", key, sequencer="0A"), KeyPattern.parse(r"(?P<user>U\d+)_(?P<file>.+)")
    )
    assert parsed is not None
    assert apply(engine, parsed) == [Outcome.WRITTEN]
    stored = item(engine, key)
    assert stored is not None
    assert "uploadUser" not in stored
    assert stored["fileId"] == "summary.pdf"
    assert query_keys(engine.client, engine.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a") == {key}
