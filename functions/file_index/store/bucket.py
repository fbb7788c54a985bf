"""The bucket's data access for the index: a HEAD of an object's current version."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from file_index.store.sdk import S3Client

NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})


def head_current(s3: S3Client, bucket: str, key: str) -> dict[str, Any] | None:
    """S3's answer to a HEAD of the key without VersionId; None when it answers not found (404: no
    object, also when a delete marker is current). Any other error is raised (e.g. a 403)."""
    try:
        response: dict[str, Any] = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in NOT_FOUND_CODES:
            return None
        raise
    return response
