"""The law: whatever the delivery order, once the queue is drained the index equals the bucket.

Random histories of puts, overwrites and deletes on a few keys (with sequencers as S3 assigns them, in
assorted lengths and cases) are delivered with duplicates, reordering, test events and unrelated S3
events, packed several records to a message and cut into batches, and applied by the real handler. Then
every key is compared with the bucket's final state, through the table and through both indexes.

The same law holds for versioned buckets: uploads create versions, delete markers hide the object, and
versions that are not current are deleted for good (by hand or by lifecycle rules); the index shows each
key's latest upload unless a delete marker is newer.

Runs on moto and on DynamoDB Local. Examples: INDEXER_PROPERTY_EXAMPLES (default 40) per engine and test.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from file_index import schema
from tests.integration.indexer.conftest import Indexer
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
# The table outlives examples on purpose: each example has its own keys, bucket and users.
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
    bucket = f"bucket-{example}"
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
    assert query_keys(indexer.client, indexer.table_name, schema.BUCKET_SIZE_INDEX, bucket) == set(live)
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
    bucket = f"bucket-{example}"

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
    bucket = f"bucket-{example}"
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
    kind: str  # "put" (a new version), "marker" (a delete marker) or "purge" (a version deleted for good)
    size: int
    pick: int  # for "purge": which non-current version; ignored otherwise
    unversioned: bool  # for a key's first "put": uploaded before versioning was on (the "null" version)


versioned_operations = st.lists(
    st.builds(
        VersionedOperation,
        key_index=st.integers(0, 4),
        kind=st.sampled_from(["put", "put", "marker", "purge", "purge"]),
        size=st.integers(0, 10**9),
        pick=st.integers(0, 20),
        unversioned=st.booleans(),
    ),
    min_size=1,
    max_size=16,
)


@dataclass(frozen=True)
class Version:
    version_id: str
    position: int
    kind: str  # "put" or "marker"
    size: int


def versioned_bucket(
    history: list[VersionedOperation],
) -> tuple[list[tuple[int, str, str]], dict[int, Version]]:
    """Play `history` on a model of a versioned bucket. Returns the S3 events, as (position, key index,
    event kind), and each key's current version. A purge deletes a version that is not current (the one
    case S3 reports fully: deleting the current version makes an older one current without an event)."""
    stacks: dict[int, list[Version]] = {}
    events: list[tuple[int, str, str]] = []
    for position, op in enumerate(history):
        stack = stacks.setdefault(op.key_index, [])
        if op.kind == "purge":
            candidates = stack[:-1]  # the last is current
            if not candidates:
                continue
            victim = candidates[op.pick % len(candidates)]
            stack.remove(victim)
            events.append((position, "purge", victim.version_id))
            continue
        if op.kind == "put" and op.unversioned and not stack:
            version_id = "null"
        else:
            version_id = f"{'v' if op.kind == 'put' else 'm'}{position}"
        stack.append(Version(version_id, position, op.kind, op.size))
        events.append((position, op.kind, version_id))
    return events, {key_index: stack[-1] for key_index, stack in stacks.items() if stack}


@given(history=versioned_operations, data=st.data())
@convergence_settings
def test_versioned_bucket_any_delivery_order_converges(
    indexer: Indexer, history: list[VersionedOperation], data: st.DataObject
) -> None:
    """Uploads, delete markers and permanent deletes of versions that are not current, in any order: the
    index shows each key's latest upload unless a delete marker is newer."""
    example = next(_example_ids)
    keys = keys_for(example)
    bucket = f"bucket-{example}"
    events, current = versioned_bucket(history)

    records = []
    for position, kind, version_id in events:
        op = history[position]
        delivery = data.draw(deliveries)
        if kind == "put":
            name = "ObjectCreated:Put"
        elif kind == "marker":
            name = data.draw(
                st.sampled_from(
                    ["ObjectRemoved:DeleteMarkerCreated", "LifecycleExpiration:DeleteMarkerCreated"]
                )
            )
        else:
            name = data.draw(st.sampled_from(["ObjectRemoved:Delete", "LifecycleExpiration:Delete"]))
        record = s3_record(
            name,
            keys[op.key_index],
            bucket=bucket,
            sequencer=sequencer(position, delivery),
            size=op.size,
            e_tag=f"etag-{position}",
            # An upload from before versioning was on has no versionId in its event.
            version_id=None if kind == "put" and version_id == "null" else version_id,
            event_time=f"2024-05-01T10:{position // 60:02d}:{position % 60:02d}.000Z",
        )
        records.extend([record] * delivery.copies)

    deliver_shuffled(indexer, records, data)

    live = {
        keys[key_index]: (version.position, version.size)
        for key_index, version in current.items()
        if version.kind == "put"
    }
    assert_index_shows(indexer, example, live)


def test_the_versioned_model_deletes_only_versions_that_are_not_current() -> None:
    history = [
        VersionedOperation(0, "put", 1, 0, True),  # "null"
        VersionedOperation(0, "purge", 0, 0, False),  # nothing to purge: only the current version
        VersionedOperation(0, "put", 2, 0, False),  # v2
        VersionedOperation(0, "marker", 0, 0, False),  # m3
        VersionedOperation(0, "purge", 0, 1, False),  # v2
        VersionedOperation(0, "purge", 0, 0, False),  # "null"
        VersionedOperation(1, "put", 5, 0, False),  # v6
    ]
    events, current = versioned_bucket(history)
    assert events == [
        (0, "put", "null"),
        (2, "put", "v2"),
        (3, "marker", "m3"),
        (4, "purge", "v2"),
        (5, "purge", "null"),
        (6, "put", "v6"),
    ]
    assert current == {0: Version("m3", 3, "marker", 0), 1: Version("v6", 6, "put", 5)}


def test_the_oracle_catches_a_lost_delete(indexer: Indexer) -> None:
    """The property is not vacuous: an index that missed a delete fails the comparison."""
    example = next(_example_ids)
    key = keys_for(example)[0]
    history = [Operation(0, "put", 5), Operation(0, "delete", 0)]
    queue = SqsQueue()
    queue.send(
        notification(s3_record("ObjectCreated:Put", key, bucket=f"bucket-{example}", sequencer="0A", size=5))
    )
    queue.drain(indexer, indexer.context)
    with pytest.raises(AssertionError, match="was deleted or never put"):
        assert_index_matches_bucket(indexer, example, history)
    queue.send(
        notification(s3_record("ObjectRemoved:Delete", key, bucket=f"bucket-{example}", sequencer="0B"))
    )
    queue.drain(indexer, indexer.context)
    assert_index_matches_bucket(indexer, example, history)
