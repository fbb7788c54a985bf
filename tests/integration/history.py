"""A history of operations played for real on a moto bucket, with the S3 events S3 would send for it.

`play` runs uploads, overwrites, deletes (delete markers in versioned buckets), permanent deletes of
chosen versions and versioning changes on a moto bucket, and returns, for every operation, the S3 record
S3 would send (moto's own events carry no sequencer, no versionId and no delete-marker events): a
sequencer that grows with the history (each key's strictly increasing), the versionId S3 returned, the
size and the eTag. Between operations it takes listing snapshots, as a backfill that lists the bucket
at that moment sees it (`file_search_admin.aws.list_current_objects`: the latest version of each key that
is not a delete marker, or list_objects_v2 for a bucket never versioned).

moto 5.2.5 handles a bucket whose versioning is suspended as if it had never been versioned: an upload
or a delete drops every version of the key (S3 keeps the versions other than "null"), and a delete
leaves no "null" delete marker. So every operation is also followed by S3's rules (`_expected`), and
each version moto dropped where S3 would have kept it is sent as the permanent delete of that version,
right after the operation's own event: the events are then exactly what S3 sends for a history that
reaches moto's state (the operation, then deletes of those versions for good). Which version is current
never differs between the two: only versions that are not current are dropped. moto also fails such a
delete when the key has a delete marker: the history deletes the key's markers for good first (with
their events), which S3 allows at any time. A permanent delete of one version (the same in S3 whatever
the versioning) runs while versioning is enabled for the call, as moto drops every version otherwise.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError
from hypothesis import strategies as st

from file_index.rules.objects import NULL_VERSION
from file_index.write.listed_objects import ListedObject
from file_search_admin.aws import is_versioned, list_current_objects
from tests.integration.indexer.notifications import s3_record
from tests.integration.indexer.test_convergence import REMOVALS, VersionedOperation, deliveries, sequencer


class Versioning(StrEnum):
    """The bucket's versioning over its history."""

    NEVER = "never"  # never versioned: deletes remove the object, no version ids
    ENABLED = "enabled"  # enabled throughout
    SUSPENDED = "suspended"  # enabled, then suspended (and perhaps enabled and suspended again)


@dataclass(frozen=True)
class Version:
    version_id: str
    marker: bool


@dataclass(frozen=True)
class Snapshot:
    """The bucket's current objects as a listing showed them after `after` operations."""

    after: int
    objects: tuple[ListedObject, ...]


@dataclass
class PlayedHistory:
    records: list[dict[str, Any]]  # S3 records in history order, duplicates included (as delivery draws)
    snapshots: list[Snapshot]
    events: int  # distinct events, duplicates not counted


@dataclass
class MotoBucket:
    """The operations on a moto bucket, and each key's versions as S3 keeps them, oldest first."""

    s3: Any
    name: str
    versioning: Versioning
    status: str = "Off"
    versions: dict[str, list[Version]] = field(default_factory=dict)

    def create(self) -> None:
        self.s3.create_bucket(Bucket=self.name)
        if self.versioning is not Versioning.NEVER:
            self.set_status("Enabled")

    def set_status(self, status: str) -> None:
        self.s3.put_bucket_versioning(Bucket=self.name, VersioningConfiguration={"Status": status})
        self.status = status

    def put(self, key: str, body: bytes) -> str | None:
        """Upload; the versionId S3 returns (None in a bucket never versioned)."""
        returned = self.s3.put_object(Bucket=self.name, Key=key, Body=body).get("VersionId")
        if self.status == "Off":
            return None
        # S3 answers "null" while versioning is suspended; moto leaves it out.
        version_id = str(returned) if self.status == "Enabled" else NULL_VERSION
        self._expected(key, Version(version_id, marker=False))
        return version_id

    def delete(self, key: str) -> str | None:
        """Delete without a version: the delete marker's versionId (None in a bucket never versioned)."""
        response = self.s3.delete_object(Bucket=self.name, Key=key)
        if self.status == "Off":
            return None
        if self.status == "Enabled":
            assert response.get("DeleteMarker"), response
            version_id = str(response["VersionId"])
        else:
            version_id = NULL_VERSION  # moto makes no marker; S3 makes the "null" one
        self._expected(key, Version(version_id, marker=True))
        return version_id

    def purge(self, key: str, version_id: str) -> None:
        """Delete one version (or delete marker) for good."""
        if self.status == "Suspended":
            # S3 deletes one version alike whatever the versioning; moto, while suspended, drops all of
            # the key's versions instead (and fails on a delete marker), so the call runs while enabled.
            self.s3.put_bucket_versioning(Bucket=self.name, VersioningConfiguration={"Status": "Enabled"})
            try:
                self.s3.delete_object(Bucket=self.name, Key=key, VersionId=version_id)
            finally:
                self.set_status("Suspended")
        else:
            self.s3.delete_object(Bucket=self.name, Key=key, VersionId=version_id)
        self.versions[key] = [v for v in self.versions.get(key, []) if v.version_id != version_id]

    def _expected(self, key: str, new: Version) -> None:
        # A new "null" version or marker takes the place of the old "null" one; any other id is new.
        stack = [v for v in self.versions.get(key, []) if v.version_id != new.version_id]
        self.versions[key] = [*stack, new]

    def dropped(self, key: str) -> list[str]:
        """Versions S3 keeps that moto dropped (oldest first); forgets them, as their deletes are sent."""
        listing = self.s3.list_object_versions(Bucket=self.name, Prefix=key)
        entries = [*listing.get("Versions", []), *listing.get("DeleteMarkers", [])]
        present = {str(entry["VersionId"]) for entry in entries if entry["Key"] == key}
        kept = self.versions.get(key, [])
        assert present <= {v.version_id for v in kept}, f"moto holds versions S3 would not: {present}"
        self.versions[key] = [v for v in kept if v.version_id in present]
        return [v.version_id for v in kept if v.version_id not in present]

    def has_versions(self, key: str) -> bool:
        return bool(self.versions.get(key))

    def exists(self, key: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.name, Key=key)
        except ClientError as error:
            if error.response["Error"]["Code"] != "404":
                raise
            return False
        return True

    def snapshot(self, after: int) -> Snapshot:
        versioned = is_versioned(self.s3, self.name)
        objects = [
            obj
            for page in list_current_objects(self.s3, self.name, versioned=versioned, page_size=2)
            for obj in page.objects
        ]
        return Snapshot(after, tuple(objects))

    def current(self, key: str) -> ListedObject | None:
        """The key's current version as S3's HEAD answers it; None when it has none."""
        try:
            response = self.s3.head_object(Bucket=self.name, Key=key)
        except ClientError as error:
            if error.response["Error"]["Code"] != "404":
                raise
            return None
        return ListedObject.from_head(key, response)


def operation_kinds(versioning: Versioning) -> list[str]:
    """The operations a history of this kind of bucket draws from (repeats weigh the draw)."""
    if versioning is Versioning.NEVER:
        return ["put", "put", "delete"]
    if versioning is Versioning.ENABLED:
        return ["put", "put", "delete", "purge", "purge"]
    return ["put", "put", "delete", "purge", "purge", "suspend", "enable"]


def play(
    bucket: MotoBucket,
    keys: list[str],
    history: list[VersionedOperation],
    snapshot_points: set[int],
    data: st.DataObject,
    *,
    tag: str,
) -> PlayedHistory:
    """Play `history` on `bucket` (created here); snapshots after the operations named in `snapshot_points`
    (0: before the first). `tag` makes the example's bodies, hence eTags, its own."""
    bucket.create()
    played = PlayedHistory(records=[], snapshots=[], events=0)
    positions = itertools.count()

    def emit(name: str, key: str, **fields: Any) -> None:
        position = next(positions)
        delivery = data.draw(deliveries)
        record = s3_record(
            name,
            key,
            bucket=bucket.name,
            sequencer=sequencer(position, delivery),
            event_time=f"2024-05-01T10:{position // 60:02d}:{position % 60:02d}.000Z",
            **fields,
        )
        played.records.extend([record] * delivery.copies)
        played.events += 1

    if 0 in snapshot_points:
        played.snapshots.append(bucket.snapshot(0))
    for step, op in enumerate(history, start=1):
        key = keys[op.key_index]
        if op.kind in ("suspend", "enable"):
            bucket.set_status("Suspended" if op.kind == "suspend" else "Enabled")
        elif op.kind == "put":
            body = f"{tag}:{step}:".encode() + b"x" * op.size
            version_id = bucket.put(key, body)
            if version_id == NULL_VERSION:
                version_id = data.draw(st.sampled_from([None, NULL_VERSION]))  # S3 may leave it out
            emit(
                "ObjectCreated:Put",
                key,
                size=len(body),
                e_tag=hashlib.md5(body).hexdigest(),  # noqa: S324 (S3's eTag)
                version_id=version_id,
            )
        elif op.kind == "delete":
            if bucket.status == "Off":
                if bucket.exists(key):
                    bucket.delete(key)
                    emit(data.draw(st.sampled_from([f"{p}:Delete" for p in REMOVALS])), key, version_id=None)
            elif bucket.has_versions(key):  # moto makes no delete marker for a key without versions
                if bucket.status == "Suspended":
                    for version in [v for v in bucket.versions[key] if v.marker]:
                        # moto fails a delete while suspended when the key has a delete marker.
                        bucket.purge(key, version.version_id)
                        emit("ObjectRemoved:Delete", key, version_id=version.version_id)
                marker = bucket.delete(key)
                name = data.draw(st.sampled_from([f"{p}:DeleteMarkerCreated" for p in REMOVALS]))
                emit(name, key, version_id=marker)
        elif bucket.has_versions(key):  # "purge"
            stack = bucket.versions[key]
            victim = stack[op.pick % len(stack)].version_id
            bucket.purge(key, victim)
            emit(data.draw(st.sampled_from([f"{p}:Delete" for p in REMOVALS])), key, version_id=victim)
        if bucket.status != "Off":
            for version_id in bucket.dropped(key):
                emit("ObjectRemoved:Delete", key, version_id=version_id)
        if step in snapshot_points:
            played.snapshots.append(bucket.snapshot(step))
    return played
