"""The conditional write, on moto and on DynamoDB Local: ordering, tombstones, versions."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import permutations

import pytest

from file_index import schema
from file_index.objects import ObjectEvent
from file_index.writer import Outcome, apply_event
from indexer.events import parse_record
from tests.integration.indexer.conftest import Engine
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


def apply(engine: Engine, *events: ObjectEvent) -> list[Outcome]:
    return [apply_event(engine.client, engine.table_name, e, tombstone_ttl_days=30, now=NOW) for e in events]


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


def test_delete_of_the_indexed_version_removes_it(engine: Engine) -> None:
    apply(engine, put("0B", version_id="v2"))
    assert apply(engine, delete("0C", version_id="v2")) == [Outcome.DELETED]
    assert item(engine)["deleted"] is True  # type: ignore[index]


def test_version_delete_with_no_item_leaves_a_tombstone(engine: Engine) -> None:
    assert apply(engine, delete("0C", version_id="v2"), put("0B", version_id="v2")) == [
        Outcome.DELETED,
        Outcome.STALE,
    ]
    # No position of its own: it blocks the deleted version only, not whatever is newer or older.
    assert item(engine) == {
        "objectKey": KEY,
        "deleted": True,
        "deletedVersions": {"v2"},
        "expiresAt": int(NOW.timestamp()) + 30 * 86400,
    }


def test_a_version_delete_keeps_the_position_and_drops_the_index_attributes(engine: Engine) -> None:
    apply(engine, put("0B", version_id="v2"))
    assert apply(engine, delete("0C", version_id="v2"), delete("0C", version_id="v2")) == [
        Outcome.DELETED,
        Outcome.STALE,  # a duplicate
    ]
    assert item(engine) == {
        "objectKey": KEY,
        "orderKey": "0B".ljust(64, "0"),
        "sequencer": "0B",
        "versionId": "v2",
        "deleted": True,
        "deletedVersions": {"v2"},
        "expiresAt": int(NOW.timestamp()) + 30 * 86400,
    }
    assert query_keys(engine.client, engine.table_name, schema.USER_DATE_INDEX, "USER001") == set()
    assert query_keys(engine.client, engine.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a") == set()


# S3: put v1 (0A), put v2 (0B), delete v1 for good (0C): v2 is the object.
OLD_VERSION_DELETED = {
    "put v1": put("0A", size=1, version_id="v1"),
    "put v2": put("0B", size=2, version_id="v2"),
    "delete v1": delete("0C", version_id="v1"),
}


@pytest.mark.parametrize(
    "order", [" / ".join(names) for names in permutations(OLD_VERSION_DELETED)], ids=lambda order: order
)
def test_deleting_an_older_version_never_hides_the_newer(engine: Engine, order: str) -> None:
    apply(engine, *(OLD_VERSION_DELETED[name] for name in order.split(" / ")))
    stored = item(engine)
    assert is_live(stored), stored
    assert (stored["versionId"], stored["size"]) == ("v2", 2)  # type: ignore[index]
    assert query_keys(engine.client, engine.table_name, schema.USER_DATE_INDEX, "USER001") == {KEY}
    # Whatever came first, the late duplicates change nothing.
    assert apply(engine, *OLD_VERSION_DELETED.values()) == [Outcome.STALE] * 3


@pytest.mark.parametrize(
    "order",
    [
        ("put v1", "delete v1", "put v2"),  # the reviewer's case: v2 was lost to the delete's tombstone
        ("delete v1", "put v2", "put v1"),  # and with no item at all when the delete arrives
    ],
)
def test_the_reported_orders(engine: Engine, order: tuple[str, ...]) -> None:
    assert apply(engine, *(OLD_VERSION_DELETED[name] for name in order))[-1] in (
        Outcome.WRITTEN,
        Outcome.STALE,
    )
    assert item(engine)["versionId"] == "v2"  # type: ignore[index]
    assert is_live(item(engine))


@pytest.mark.parametrize("delete_first", [False, True])
def test_a_deleted_version_stays_deleted_against_late_duplicates(engine: Engine, delete_first: bool) -> None:
    # S3: put v2 (0B), delete v2 for good (0C). (Had an older v1 existed, S3 would make it current again
    # with no event: the documented limit.)
    events = [put("0B", version_id="v2"), delete("0C", version_id="v2")]
    apply(engine, *(reversed(events) if delete_first else events))
    assert apply(engine, put("0B", version_id="v2"), put("0B", version_id="v2")) == [Outcome.STALE] * 2
    assert not is_live(item(engine))


def test_deletes_of_every_version_before_their_creates(engine: Engine) -> None:
    # S3: put v1, put v2, delete v1, delete v2: nothing is left.
    assert (
        apply(engine, delete("0C", version_id="v1"), delete("0D", version_id="v2")) == [Outcome.DELETED] * 2
    )
    assert apply(engine, put("0A", version_id="v1"), put("0B", version_id="v2")) == [Outcome.STALE] * 2
    assert item(engine)["deletedVersions"] == {"v1", "v2"}  # type: ignore[index]
    assert not is_live(item(engine))


@pytest.mark.parametrize(
    "name", ["ObjectRemoved:DeleteMarkerCreated", "LifecycleExpiration:DeleteMarkerCreated"]
)
@pytest.mark.parametrize("marker_first", [False, True])
def test_a_delete_marker_hides_every_older_version(engine: Engine, name: str, marker_first: bool) -> None:
    events = [put("0A", version_id="v1"), marker("0B", "m1", name)]
    apply(engine, *(reversed(events) if marker_first else events))
    assert item(engine)["orderKey"] == "0B".ljust(64, "0")  # type: ignore[index]
    assert not is_live(item(engine))
    # Deleting an older version for good changes nothing; a newer upload shows again.
    assert apply(engine, delete("0C", version_id="v1")) == [Outcome.STALE]
    assert apply(engine, put("0D", size=4, version_id="v2")) == [Outcome.WRITTEN]
    assert item(engine)["size"] == 4  # type: ignore[index]


def test_a_deleted_older_marker_does_not_hide_a_newer_upload(engine: Engine) -> None:
    # S3: marker m1 (0A), put v2 (0B), delete m1 for good (0C): v2 is the object.
    assert apply(engine, delete("0C", version_id="m1"), marker("0A", "m1"), put("0B", version_id="v2")) == [
        Outcome.DELETED,
        Outcome.STALE,  # the marker was deleted for good
        Outcome.WRITTEN,
    ]
    assert is_live(item(engine))


def test_a_version_delete_without_sequencer_applies_to_its_version_only(engine: Engine) -> None:
    early, late = "2024-05-01T10:00:00.100Z", "2024-05-01T10:00:00.200Z"
    apply(engine, put(None, event_time=early, version_id="v2"))
    assert apply(engine, delete(None, event_time=late, version_id="v1")) == [Outcome.STALE]
    assert apply(engine, delete(None, event_time=late, version_id="v2")) == [Outcome.DELETED]
    assert not is_live(item(engine))


def test_null_version_delete_removes_an_item_indexed_without_version(engine: Engine) -> None:
    apply(engine, put("0A"))
    assert apply(engine, delete("0B", version_id="null")) == [Outcome.DELETED]


def test_null_version_delete_before_its_create_blocks_an_upload_without_version(engine: Engine) -> None:
    # An upload from before versioning was enabled carries no versionId; it is the "null" version.
    assert apply(engine, delete("0C", version_id="null"), put("0A"), put("0B", version_id="v2")) == [
        Outcome.DELETED,
        Outcome.STALE,
        Outcome.WRITTEN,
    ]


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
    from file_index.key_layout import KeyLayout

    parsed = parse_record(
        s3_record("ObjectCreated:Put", key, sequencer="0A"), KeyLayout.parse(r"(?P<user>U\d+)_(?P<file>.+)")
    )
    assert parsed is not None
    assert apply(engine, parsed) == [Outcome.WRITTEN]
    stored = item(engine, key)
    assert stored is not None
    assert "uploadUser" not in stored
    assert stored["fileId"] == "summary.pdf"
    assert query_keys(engine.client, engine.table_name, schema.BUCKET_SIZE_INDEX, "fileupload.a") == {key}
