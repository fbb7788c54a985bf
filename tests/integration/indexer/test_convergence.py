"""The law: whatever the delivery order, once the queue is drained the index equals the bucket.

Random histories of puts, overwrites and deletes on a few keys (with sequencers as S3 assigns them, in
assorted lengths and cases) are delivered with duplicates, reordering, test events and unrelated S3
events, packed several records to a message and cut into batches, and applied by the real handler. Then
every key is compared with the bucket's final state, through the table and through both indexes.

The same law holds for versioned buckets: uploads create versions, delete markers hide the object, and
any version, the current one and delete markers included, is deleted for good (by hand or by lifecycle
rules); then each key shows its current version in the bucket, as a HEAD of the final bucket answers.
With versioning enabled the bucket is moto's and the indexer's lookups read it; with versioning
suspended in turns (which moto 5.2.5 gets wrong) it is a model of S3's documented rules, held to moto
where moto is right. All of one example's events are delivered after its whole history, as an indexer
that is behind sees them.

Runs on moto and on DynamoDB Local. Examples: INDEXER_PROPERTY_EXAMPLES (default 40) per engine and test.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from file_index.rules import schema
from file_index.rules.objects import NULL_VERSION
from indexer import handler
from tests.integration.indexer.conftest import BUCKET, Indexer
from tests.integration.indexer.notifications import (
    TEST_EVENT_BODY,
    SqsQueue,
    is_live,
    notification,
    query_keys,
    read_items,
    s3_record,
)

EXAMPLES = int(os.environ.get("INDEXER_PROPERTY_EXAMPLES", "40"))
# The table and the bucket outlive examples on purpose: each example has its own keys and users.
convergence_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Key shapes: both default separators, characters S3 encodes, and one key with no user.
FILE_NAMES = ("a.txt", "b c+d.txt", "e%f/g.txt", "日本語.pdf")
_example_ids = itertools.count()


@dataclass(frozen=True)
class Operation:
    key_index: int
    kind: str  # "put" or "delete"
    size: int


@dataclass(frozen=True)
class Delivery:
    """How an S3 event reaches the indexer: copies, and the spelling of its sequencer."""

    copies: int
    stripped_zeros: int
    lower_case: bool


operations = st.lists(
    st.builds(
        Operation,
        key_index=st.integers(0, 4),
        kind=st.sampled_from(["put", "put", "delete"]),
        size=st.integers(0, 10**9),
    ),
    min_size=1,
    max_size=14,
)
removal_names = st.sampled_from(
    ["ObjectRemoved:Delete", "ObjectRemoved:DeleteMarkerCreated", "LifecycleExpiration:Delete"]
)
deliveries = st.builds(
    Delivery, copies=st.integers(1, 3), stripped_zeros=st.integers(0, 4), lower_case=st.booleans()
)


def keys_for(example: int) -> list[str]:
    users = (f"ex{example}-alice", f"ex{example}-bob")
    keys = [f"{users[i % 2]}{'_/'[i % 2]}{name}" for i, name in enumerate(FILE_NAMES)]
    return [*keys, f"ex{example}-no user here.txt"]


def sequencer(position: int, delivery: Delivery) -> str:
    # Increasing with history position; four trailing zeros that a delivery may drop (equal under the
    # right-pad rule) and a case it may change, as sequencers of one key can differ in length.
    text = f"{(position + 1) * 0x3B9ACA:012X}0000"
    text = text[: len(text) - delivery.stripped_zeros]
    return text.lower() if delivery.lower_case else text


def assert_index_matches_bucket(indexer: Indexer, example: int, history: list[Operation]) -> None:
    """The oracle: the bucket after `history` (the last operation of each key decides) is the index."""
    keys = keys_for(example)
    final: dict[str, tuple[int, Operation] | None] = dict.fromkeys(keys)
    for position, op in enumerate(history):
        final[keys[op.key_index]] = (position, op)
    live = {
        key: (last[0], last[1].size)
        for key, last in final.items()
        if last is not None and last[1].kind == "put"
    }
    assert_index_shows(indexer, example, live)


def assert_index_shows(indexer: Indexer, example: int, live: dict[str, tuple[int, int]]) -> None:
    """Exactly the keys of `live` are searchable, each with the size and eTag of its upload at `position`."""
    keys = keys_for(example)
    bucket = BUCKET
    items = read_items(indexer.client, indexer.table_name, keys)
    for key, item in items.items():
        if key not in live:
            assert not is_live(item), f"{key!r} was deleted or never put, index has {item}"
            assert item is None or not schema.GSI_KEY_ATTRIBUTES & item.keys()
            continue
        position, size = live[key]
        assert is_live(item), f"{key!r} exists, index has {item}"
        assert item is not None
        assert (item["size"], item["eTag"], item["bucketName"]) == (size, f"etag-{position}", bucket)
    in_bucket = query_keys(indexer.client, indexer.table_name, schema.BUCKET_SIZE_INDEX, bucket)
    assert in_bucket & set(keys) == set(live)
    for user in (f"ex{example}-alice", f"ex{example}-bob"):
        expected = {key for key in live if key.startswith(user)}
        assert query_keys(indexer.client, indexer.table_name, schema.USER_DATE_INDEX, user) == expected


def deliver_shuffled(indexer: Indexer, records: list[dict[str, Any]], data: st.DataObject) -> None:
    """`records` (duplicates included) reordered, packed 1-3 to a message, mixed with test events, and
    delivered in batches of assorted sizes; without faults, no message may fail."""
    records = data.draw(st.permutations(records))
    bodies: list[str] = []
    remaining = list(records)
    while remaining:
        take = data.draw(st.integers(1, 3))
        bodies.append(notification(*remaining[:take]))
        remaining = remaining[take:]
    for _ in range(data.draw(st.integers(0, 2))):
        bodies.insert(data.draw(st.integers(0, len(bodies))), TEST_EVENT_BODY)

    queue = SqsQueue()
    queue.send(*bodies)
    failed = queue.deliver(
        indexer, indexer.context, batches=data.draw(st.lists(st.integers(1, 10), min_size=1, max_size=4))
    )
    assert failed == [], "no message may fail without faults"


@given(history=operations, data=st.data())
@convergence_settings
def test_any_delivery_order_converges_to_the_bucket(
    indexer: Indexer, history: list[Operation], data: st.DataObject
) -> None:
    example = next(_example_ids)
    keys = keys_for(example)
    bucket = BUCKET

    records = []
    for position, op in enumerate(history):
        delivery = data.draw(deliveries)
        name = "ObjectCreated:Put" if op.kind == "put" else data.draw(removal_names)
        record = s3_record(
            name,
            keys[op.key_index],
            bucket=bucket,
            sequencer=sequencer(position, delivery),
            size=op.size,
            e_tag=f"etag-{position}",
            event_time=f"2024-05-01T10:{position // 60:02d}:{position % 60:02d}.000Z",
        )
        records.extend([record] * delivery.copies)
    unrelated = s3_record("ObjectRestore:Completed", keys[0], bucket=bucket, sequencer="FF")
    records.extend([unrelated] * data.draw(st.integers(0, 1)))

    deliver_shuffled(indexer, records, data)

    assert_index_matches_bucket(indexer, example, history)


@given(history=operations, data=st.data())
@convergence_settings
def test_without_sequencers_in_order_delivery_converges(
    moto_indexer: Indexer, history: list[Operation], data: st.DataObject
) -> None:
    """The guarantee for events without a sequencer (moto's): delivered in order, even with many events
    of one key in one millisecond and in one batch, the index ends as the bucket."""
    example = next(_example_ids)
    keys = keys_for(example)
    bucket = BUCKET
    millisecond = 0
    bodies = []
    for position, op in enumerate(history):
        millisecond += data.draw(st.sampled_from([0, 0, 1]))  # ties are the hard case
        name = "ObjectCreated:Put" if op.kind == "put" else data.draw(removal_names)
        record = s3_record(
            name,
            keys[op.key_index],
            bucket=bucket,
            size=op.size,
            e_tag=f"etag-{position}",
            event_time=f"2024-05-01T10:00:00.{millisecond:03d}Z",
        )
        bodies.append(notification(record))
    queue = SqsQueue()
    queue.send(*bodies)
    queue.deliver(
        moto_indexer, moto_indexer.context, batches=data.draw(st.lists(st.integers(1, 10), min_size=1))
    )
    assert queue.pending == []
    assert_index_matches_bucket(moto_indexer, example, history)


@dataclass(frozen=True)
class VersionedOperation:
    key_index: int
    # "put" (a new version; "null" while versioning is suspended), "delete" (a delete marker), "purge" (a
    # version or marker deleted for good: any, the current one included), "suspend" / "enable" (versioning
    # of the whole bucket, the model's histories only)
    kind: str
    size: int
    pick: int  # for "purge": which version of the key, from the oldest


def versioned_operations(kinds: list[str]) -> st.SearchStrategy[list[VersionedOperation]]:
    return st.lists(
        st.builds(
            VersionedOperation,
            key_index=st.integers(0, 2),  # few keys, so that each has a history of its own
            kind=st.sampled_from(kinds),
            size=st.integers(0, 40),
            pick=st.integers(0, 20),
        ),
        # Long enough that most examples put, hide and purge one key several times.
        min_size=6,
        max_size=16,
    )


@dataclass
class StoredVersion:
    version_id: str
    marker: bool
    body: bytes


@dataclass
class ModelBucket:
    """S3's versioning rules as AWS documents them, for the histories moto 5.2.5 gets wrong: it drops every
    version of a key on an upload while versioning is suspended (checked against its own
    `list_object_versions`). Enabled versioning is the moto bucket's own (`MotoVersionedBucket`), and
    `test_the_model_agrees_with_moto_where_moto_is_right` holds the model to it."""

    status: str = "Enabled"
    stacks: dict[str, list[StoredVersion]] = field(default_factory=dict)

    def versioning(self, status: str) -> None:
        self.status = status

    def put(self, key: str, body: bytes, position: int) -> str | None:
        stack = self.stacks.setdefault(key, [])
        if self.status == "Enabled":
            stack.append(StoredVersion(f"v{position}", marker=False, body=body))
            return stack[-1].version_id
        # Suspended (or never enabled): the upload takes the place of the "null" version.
        stack[:] = [version for version in stack if version.version_id != NULL_VERSION]
        stack.append(StoredVersion(NULL_VERSION, marker=False, body=body))
        return None if self.status == "Off" else NULL_VERSION

    def delete(self, key: str, position: int) -> str | None:
        """The delete marker's versionId; None for a bucket that was never versioned (the object is gone)."""
        stack = self.stacks.setdefault(key, [])
        if self.status == "Off":
            stack.clear()
            return None
        version_id = f"m{position}" if self.status == "Enabled" else NULL_VERSION
        stack[:] = [version for version in stack if version.version_id != version_id]
        stack.append(StoredVersion(version_id, marker=True, body=b""))
        return version_id

    def purge(self, key: str, version_id: str) -> None:
        self.stacks[key] = [
            version for version in self.stacks.get(key, []) if version.version_id != version_id
        ]

    def version_ids(self, key: str) -> list[str]:
        return [version.version_id for version in self.stacks.get(key, [])]

    def current(self, key: str) -> tuple[int, str] | None:
        """(size, eTag) of the key's current version; None when it has none."""
        stack = self.stacks.get(key, [])
        if not stack or stack[-1].marker:
            return None
        return len(stack[-1].body), hashlib.md5(stack[-1].body).hexdigest()  # noqa: S324 (S3's eTag)

    def head_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        """What S3's HEAD answers: the indexer's lookups read the model."""
        stack = self.stacks.get(Key, [])
        if not stack or stack[-1].marker:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")
        body = stack[-1].body
        return {
            "VersionId": stack[-1].version_id,
            "ContentLength": len(body),
            "ETag": f'"{hashlib.md5(body).hexdigest()}"',  # noqa: S324
            "LastModified": datetime(2024, 5, 1, 10, tzinfo=UTC),
        }


@dataclass
class MotoVersionedBucket:
    """The same operations on the indexed bucket in moto."""

    s3: Any
    # Each key's versions and markers in creation order: moto lists versions and markers apart, and their
    # LastModified ties within a second.
    created: dict[str, list[str]] = field(default_factory=dict)

    def versioning(self, status: str) -> None:
        self.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": status})

    def put(self, key: str, body: bytes, position: int) -> str | None:
        version_id = self.s3.put_object(Bucket=BUCKET, Key=key, Body=body).get("VersionId")
        self.created.setdefault(key, []).append(version_id or NULL_VERSION)
        return version_id if version_id is None else str(version_id)

    def delete(self, key: str, position: int) -> str | None:
        response = self.s3.delete_object(Bucket=BUCKET, Key=key)
        assert response.get("DeleteMarker")
        self.created.setdefault(key, []).append(response["VersionId"])
        return str(response["VersionId"])

    def purge(self, key: str, version_id: str) -> None:
        self.s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version_id)

    def version_ids(self, key: str) -> list[str]:
        """The key's versions and markers, oldest first."""
        listing = self.s3.list_object_versions(Bucket=BUCKET, Prefix=key)
        entries = [*listing.get("Versions", []), *listing.get("DeleteMarkers", [])]
        present = {entry["VersionId"] for entry in entries if entry["Key"] == key}
        return [version_id for version_id in self.created.get(key, []) if version_id in present]

    def current(self, key: str) -> tuple[int, str] | None:
        try:
            head = self.s3.head_object(Bucket=BUCKET, Key=key)
        except ClientError as error:
            if error.response["Error"]["Code"] != "404":
                raise
            return None
        return int(head["ContentLength"]), str(head["ETag"]).strip('"')


REMOVALS = ("ObjectRemoved", "LifecycleExpiration")


def play_versioned_history(
    bucket: ModelBucket | MotoVersionedBucket,
    keys: list[str],
    history: list[VersionedOperation],
    data: st.DataObject,
    *,
    example: int,
) -> list[dict[str, Any]]:
    """Play `history` on the bucket; returns the S3 records of its events, duplicated as delivery draws."""
    records = []
    for position, op in enumerate(history):
        key = keys[op.key_index]
        delivery = data.draw(deliveries)
        common: dict[str, Any] = {
            "bucket": BUCKET,
            "sequencer": sequencer(position, delivery),
            "event_time": f"2024-05-01T10:{position // 60:02d}:{position % 60:02d}.000Z",
        }
        if op.kind in ("suspend", "enable"):
            bucket.versioning("Suspended" if op.kind == "suspend" else "Enabled")
            continue
        if op.kind == "put":
            body = f"{example}:{position}:".encode() + b"x" * op.size
            version_id = bucket.put(key, body, position)
            if version_id == NULL_VERSION:
                version_id = data.draw(st.sampled_from([None, NULL_VERSION]))  # S3 may leave it out
            record = s3_record(
                "ObjectCreated:Put",
                key,
                size=len(body),
                e_tag=hashlib.md5(body).hexdigest(),  # noqa: S324 (S3's eTag)
                version_id=version_id,
                **common,
            )
        elif op.kind == "delete":
            if not bucket.version_ids(key):
                continue  # moto makes no delete marker for a key without versions (S3 would)
            marker = bucket.delete(key, position)
            name = data.draw(st.sampled_from([f"{prefix}:DeleteMarkerCreated" for prefix in REMOVALS]))
            record = s3_record(name, key, version_id=marker, **common)
        else:
            versions = bucket.version_ids(key)
            if not versions:
                continue
            victim = versions[op.pick % len(versions)]
            bucket.purge(key, victim)
            name = data.draw(st.sampled_from([f"{prefix}:Delete" for prefix in REMOVALS]))
            record = s3_record(name, key, version_id=victim, **common)
        records.extend([record] * delivery.copies)
    return records


def assert_index_shows_current_versions(
    indexer: Indexer, example: int, bucket: ModelBucket | MotoVersionedBucket
) -> None:
    """Every key shows exactly its current version in the bucket (size and eTag), or nothing."""
    keys = keys_for(example)
    items = read_items(indexer.client, indexer.table_name, keys)
    live = set()
    for key, item in items.items():
        current = bucket.current(key)
        if current is None:
            assert not is_live(item), f"{key!r} has no current version, index has {item}"
            assert item is None or not schema.GSI_KEY_ATTRIBUTES & item.keys()
            continue
        live.add(key)
        assert is_live(item), f"{key!r} is {current}, index has {item}"
        assert item is not None
        assert (item["size"], item["eTag"]) == current, f"{key!r} is {current}, index has {item}"
        assert item["bucketName"] == BUCKET  # with size: in the bucket index
    # The user index, whose partitions are this example's own (the bucket index holds every example).
    for user in (f"ex{example}-alice", f"ex{example}-bob"):
        expected = {key for key in live if key.startswith(user)}
        assert query_keys(indexer.client, indexer.table_name, schema.USER_DATE_INDEX, user) == expected


@given(history=versioned_operations(["put", "put", "delete", "purge", "purge"]), data=st.data())
@convergence_settings
def test_versioned_bucket_any_delivery_order_converges(
    indexer: Indexer, history: list[VersionedOperation], data: st.DataObject
) -> None:
    """On a moto bucket with versioning enabled: uploads, delete markers and permanent deletes of any
    version (current or not, delete markers included), delivered in any order with duplicates: each key
    shows its current version (HEAD of the final bucket), or nothing. (moto cannot suspend versioning
    correctly, not even for a while: the "null" version is the next property's, and the writer tests'.)"""
    example = next(_example_ids)
    bucket = MotoVersionedBucket(boto3.client("s3"))
    bucket.versioning("Enabled")
    records = play_versioned_history(bucket, keys_for(example), history, data, example=example)
    deliver_shuffled(indexer, records, data)
    assert_index_shows_current_versions(indexer, example, bucket)


MODEL_S3 = ModelBucket()


@given(
    history=versioned_operations(["put", "put", "delete", "purge", "purge", "suspend", "enable"]),
    data=st.data(),
)
@convergence_settings
def test_suspended_versioning_any_delivery_order_converges(
    indexer: Indexer, monkeypatch: pytest.MonkeyPatch, history: list[VersionedOperation], data: st.DataObject
) -> None:
    """Versioning enabled and suspended in turns (uploads while suspended replace the "null" version in
    place, deletes put a "null" delete marker there), permanent deletes of any version: each key shows its
    current version. The bucket is the model (moto gets suspended versioning wrong), and so is the HEAD."""
    monkeypatch.setattr(handler, "s3_client", lambda *_, **__: MODEL_S3)
    example = next(_example_ids)
    keys = keys_for(example)
    MODEL_S3.versioning("Enabled")
    records = play_versioned_history(MODEL_S3, keys, history, data, example=example)
    deliver_shuffled(indexer, records, data)
    assert_index_shows_current_versions(indexer, example, MODEL_S3)


@given(history=versioned_operations(["put", "put", "delete", "purge"]))
@settings(max_examples=max(EXAMPLES // 4, 5), deadline=None)
def test_the_model_agrees_with_moto_where_moto_is_right(history: list[VersionedOperation]) -> None:
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        moto_bucket, model = MotoVersionedBucket(s3), ModelBucket()
        keys = keys_for(0)
        for position, op in enumerate(history):
            key = keys[op.key_index]
            body = f"{position}".encode() * op.size
            if op.kind == "put":
                moto_bucket.put(key, body, position)
                model.put(key, body, position)
            elif op.kind == "delete":
                if not model.version_ids(key):
                    continue  # moto makes no delete marker for a key without versions (S3 would)
                moto_bucket.delete(key, position)
                model.delete(key, position)
            else:
                moto_versions, model_versions = moto_bucket.version_ids(key), model.version_ids(key)
                assert len(moto_versions) == len(model_versions)
                if moto_versions:
                    moto_bucket.purge(key, moto_versions[op.pick % len(moto_versions)])
                    model.purge(key, model_versions[op.pick % len(model_versions)])
            assert moto_bucket.current(key) == model.current(key)


def test_the_oracle_catches_a_lost_delete(indexer: Indexer) -> None:
    """The property is not vacuous: an index that missed a delete fails the comparison."""
    example = next(_example_ids)
    key = keys_for(example)[0]
    history = [Operation(0, "put", 5), Operation(0, "delete", 0)]
    queue = SqsQueue()
    queue.send(notification(s3_record("ObjectCreated:Put", key, bucket=BUCKET, sequencer="0A", size=5)))
    queue.drain(indexer, indexer.context)
    with pytest.raises(AssertionError, match="was deleted or never put"):
        assert_index_matches_bucket(indexer, example, history)
    queue.send(notification(s3_record("ObjectRemoved:Delete", key, bucket=BUCKET, sequencer="0B")))
    queue.drain(indexer, indexer.context)
    assert_index_matches_bucket(indexer, example, history)
