"""A bucket that already holds objects, for the backfill and reconcile measures.

The objects go straight into the local stack's S3 emulator (moto's server runs in the benchmark's own
process) without any event, as objects uploaded before the index existed. Uploading them through S3's
API instead costs about 5 ms of this machine's CPU per object (100k objects: over eight minutes) and
measures moto's PutObject, not the backfill: the measures time only the listing and the writes.
"""

from __future__ import annotations

from moto.backends import get_backend
from moto.core import DEFAULT_ACCOUNT_ID

from bench import events

USERS = 20


def object_key(index: int) -> str:
    return events.object_key(index % USERS, index)


def object_body(index: int) -> bytes:
    return b"x" * (1 + index % 997)


def seed_bucket(bucket: str, first: int, last: int) -> None:
    """Objects `first` .. `last - 1` into `bucket` of the local stack's moto, without notifications."""
    backend = get_backend("s3")[DEFAULT_ACCOUNT_ID]["aws"]
    for index in range(first, last):
        backend.put_object(bucket, object_key(index), object_body(index), disable_notification=True)
