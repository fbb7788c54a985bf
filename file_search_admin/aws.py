"""The AWS side of the commands: clients from the SDK's usual configuration, and the checks they run first.

Profiles, region and credentials come from boto3's own chain (`--profile`, `--region`, `AWS_PROFILE`,
`AWS_DEFAULT_REGION`, ...), endpoints from `AWS_ENDPOINT_URL` (the local stack) or the service's own
`AWS_ENDPOINT_URL_<SERVICE>`. Nothing here writes to a bucket: the commands only list and HEAD.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import ClientError

from file_index.store.sdk import SdkSettings
from file_index.write.listed_objects import ListedObject
from file_search_admin.errors import (
    ACCESS_DENIED,
    BucketNotFoundError,
    QueueNotFoundError,
    TableNotFoundError,
    denied,
    error_code,
)

# boto3 ships no type information for its generated clients.
Client = Any

# Standard retries (5 attempts: a laptop's link is less steady than a function's) and timeouts generous
# enough for a busy emulator; the pool is sized per use (`Aws.max_connections`).
ADMIN_SDK = SdkSettings(max_attempts=5, connect_timeout=10, read_timeout=60)

_NOT_FOUND = frozenset({"404", "NoSuchBucket", "NotFound"})
_NO_QUEUE = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


@dataclass(frozen=True)
class Aws:
    """One boto3 session; `client` gives thread-safe clients with a pool as large as the writers."""

    session: boto3.session.Session
    max_connections: int = 32

    @classmethod
    def from_options(cls, *, profile: str | None, region: str | None, max_connections: int = 32) -> Aws:
        return cls(boto3.session.Session(profile_name=profile, region_name=region), max_connections)

    def client(self, service: str) -> Client:
        """A client with the admin tools' SDK settings (`ADMIN_SDK`) and a pool as large as the writers."""
        sdk = dataclasses.replace(ADMIN_SDK, max_connections=self.max_connections)
        client: Client = sdk.client(service, self.session)
        return client


def check_bucket(s3: Client, bucket: str) -> None:
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as error:
        if error_code(error) in _NOT_FOUND:
            raise BucketNotFoundError(f"bucket {bucket!r} does not exist") from None
        if error_code(error) in ACCESS_DENIED:
            raise denied(error, f"bucket {bucket!r}") from None
        raise


def check_table(dynamodb: Client, table: str) -> dict[str, Any]:
    """The table's description (DescribeTable's `Table`); TableNotFoundError when there is none."""
    try:
        description: dict[str, Any] = dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as error:
        if error_code(error) == "ResourceNotFoundException":
            raise TableNotFoundError(f"table {table!r} does not exist") from None
        if error_code(error) in ACCESS_DENIED:
            raise denied(error, f"table {table!r}") from None
        raise
    return description


def check_queue(sqs: Client, queue_url: str) -> None:
    try:
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    except ClientError as error:
        if error_code(error) in _NO_QUEUE:
            raise QueueNotFoundError(f"queue {queue_url!r} does not exist") from None
        if error_code(error) in ACCESS_DENIED:
            raise denied(error, f"queue {queue_url!r}") from None
        raise


def is_versioned(s3: Client, bucket: str) -> bool:
    """Versioning enabled or suspended: the bucket may hold versions, so list them to see version ids."""
    status = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    return status in ("Enabled", "Suspended")


@dataclass(frozen=True)
class ListingPage:
    """The current object versions of one listing page, and the page's last key (the checkpoint)."""

    objects: list[ListedObject]
    last_key: str | None


def list_current_objects(
    s3: Client, bucket: str, *, versioned: bool, start_after: str | None = None, page_size: int = 1000
) -> Iterator[ListingPage]:
    """The bucket's current object versions in key order, page by page, after `start_after` if given.

    A versioned bucket is listed with list_object_versions (the latest version of each key that is not
    a delete marker), so version ids can be compared; any other with list_objects_v2.
    """
    pagination = {"PageSize": page_size}
    if versioned:
        paginator = s3.get_paginator("list_object_versions")
        extra = {"KeyMarker": start_after} if start_after else {}
        for page in paginator.paginate(Bucket=bucket, PaginationConfig=pagination, **extra):
            versions = page.get("Versions", [])
            keys = [entry["Key"] for entry in versions + page.get("DeleteMarkers", [])]
            # A key's versions come newest first, so its latest one is on the page where the key starts.
            latest = [ListedObject.from_listing(entry) for entry in versions if entry.get("IsLatest")]
            yield ListingPage(latest, max(keys) if keys else None)
    else:
        paginator = s3.get_paginator("list_objects_v2")
        extra = {"StartAfter": start_after} if start_after else {}
        for page in paginator.paginate(Bucket=bucket, PaginationConfig=pagination, **extra):
            contents = page.get("Contents", [])
            yield ListingPage(
                [ListedObject.from_listing(entry) for entry in contents],
                contents[-1]["Key"] if contents else None,
            )
