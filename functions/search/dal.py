"""The search function's calls to AWS besides the index: S3, and the indexer's queues in SQS and CloudWatch.

S3: presigned downloads, upload forms and multipart uploads, and deletes. The index itself is read
through `file_index` (its readers and state store), the only code that talks to DynamoDB.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from search.errors import FileNotFound
from search.status import Backlog

# SQS publishes its metrics once a minute, a few minutes late at times: the newest point of this window
# is the current age; an idle queue (or an emulator) has none.
AGE_METRIC_WINDOW = timedelta(minutes=10)
AGE_METRIC_PERIOD_SECONDS = 60

logger = Logger(service="file-search", child=True)

T = TypeVar("T")

# boto3 ships no type information for its generated clients.
S3Client = Any
SqsClient = Any
CloudWatchClient = Any


class ObjectStore:
    """The bucket's objects: presigned downloads and upload forms, and deletes."""

    def __init__(self, s3: S3Client, bucket: str) -> None:
        self._s3 = s3
        self.bucket = bucket

    def download_url(
        self,
        key: str,
        *,
        disposition: str,
        content_type: str,
        expires_in: int,
    ) -> str:
        """A presigned GET of `key` that S3 answers with `disposition` as Content-Disposition and
        `content_type` as Content-Type.

        Of the key's current version, never of a version by its id: in a versioned bucket a delete adds a
        marker, and the URL (a share link among them) then answers 404 at once, as in any other bucket.
        Signed for a version, it would serve that version until it expired."""
        params = {"Bucket": self.bucket, "Key": key}
        params["ResponseContentDisposition"] = disposition
        params["ResponseContentType"] = content_type
        url: str = self._s3.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
        return url

    def upload_form(self, key: str, *, content_type: str, size: int, expires_in: int) -> dict[str, Any]:
        """A presigned POST form (`url`, `fields`) whose signed policy takes exactly `key`, `content_type`
        and a file of exactly `size` bytes."""
        form: dict[str, Any] = self._s3.generate_presigned_post(
            Bucket=self.bucket,
            Key=key,
            Fields={"Content-Type": content_type},
            Conditions=[
                {"Content-Type": content_type},
                ["content-length-range", size, size],
            ],
            ExpiresIn=expires_in,
        )
        return {"url": form["url"], "fields": form["fields"]}

    def start_multipart(self, key: str, *, content_type: str) -> str:
        """Start a multipart upload of `key` (CreateMultipartUpload); its upload id."""
        answer = self._s3.create_multipart_upload(Bucket=self.bucket, Key=key, ContentType=content_type)
        return str(answer["UploadId"])

    def part_url(self, key: str, *, upload_id: str, part_number: int, length: int, expires_in: int) -> str:
        """A presigned UploadPart of part `part_number` whose signature holds its Content-Length: S3 takes
        exactly `length` bytes with it."""
        params = {
            "Bucket": self.bucket,
            "Key": key,
            "UploadId": upload_id,
            "PartNumber": part_number,
            "ContentLength": length,
        }
        url: str = self._s3.generate_presigned_url("upload_part", Params=params, ExpiresIn=expires_in)
        return url

    def uploaded_parts(self, key: str, upload_id: str) -> list[dict[str, Any]]:
        """The parts S3 holds of a multipart upload (ListParts, every page): number, size and ETag each.

        FileNotFound if S3 knows no such upload of `key` (completed, aborted, or never started).
        """
        parts: list[dict[str, Any]] = []
        try:
            pages = self._s3.get_paginator("list_parts").paginate(
                Bucket=self.bucket, Key=key, UploadId=upload_id
            )
            for page in pages:
                parts.extend(
                    {"partNumber": int(part["PartNumber"]), "size": int(part["Size"]), "etag": part["ETag"]}
                    for part in page.get("Parts", [])
                )
        except ClientError as error:
            _no_such_upload(error, key)
            raise
        return parts

    def complete_multipart(self, key: str, upload_id: str, parts: list[dict[str, Any]]) -> None:
        try:
            self._s3.complete_multipart_upload(
                Bucket=self.bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except ClientError as error:
            _no_such_upload(error, key)
            raise

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Abort a multipart upload: S3 drops its parts. FileNotFound if there is no such upload."""
        try:
            self._s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except ClientError as error:
            _no_such_upload(error, key)
            raise

    def delete(self, key: str) -> None:
        """Delete `key`'s current object (in a versioned bucket: add a delete marker)."""
        self._s3.delete_object(Bucket=self.bucket, Key=key)


def _no_such_upload(error: ClientError, key: str) -> None:
    if error.response.get("Error", {}).get("Code") == "NoSuchUpload":
        raise FileNotFound(
            f"no multipart upload of {key!r} with that uploadId (completed, aborted or never started)"
        ) from None


class BacklogReader:
    """Reads the backlog of the indexer's queue and its dead-letter queue.

    The counts come from SQS (`GetQueueAttributes`, approximate), the age of the oldest message from
    CloudWatch (the queue's `ApproximateAgeOfOldestMessage`, which SQS publishes only as a metric, once a
    minute). Each of those three calls may fail on its own (throttling, a network fault, a missing
    permission) without failing the others: its figures are None and `unavailable` names them.
    """

    def __init__(
        self,
        *,
        sqs: SqsClient,
        cloudwatch: CloudWatchClient,
        queue_url: str,
        queue_name: str,
        dead_letter_queue_url: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._sqs = sqs
        self._cloudwatch = cloudwatch
        self._queue_url = queue_url
        self._queue_name = queue_name
        self._dlq_url = dead_letter_queue_url
        self._clock = clock

    def read(self) -> Backlog:
        unavailable: list[str] = []
        queue = self._attempt("queue", unavailable, lambda: self._counts(self._queue_url))
        age = self._attempt("queue.oldestMessageAgeSeconds", unavailable, self._oldest_message_age)
        dead = self._attempt("deadLetterQueue", unavailable, lambda: self._counts(self._dlq_url))
        return Backlog(
            messages_waiting=queue[0] if queue else None,
            messages_in_flight=queue[1] if queue else None,
            messages_delayed=queue[2] if queue else None,
            oldest_message_age_seconds=age,
            # Messages someone is reading (inspecting, redriving) are still dead letters.
            dead_letter_messages=dead[0] + dead[1] + dead[2] if dead else None,
            unavailable=unavailable,
        )

    def _attempt(self, figure: str, unavailable: list[str], read: Callable[[], T]) -> T | None:
        try:
            return read()
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "unknown")
            logger.warning("a backlog figure is unavailable", extra={"figure": figure, "code": code})
        except BotoCoreError as error:
            logger.warning("a backlog figure is unavailable", extra={"figure": figure, "error": str(error)})
        unavailable.append(figure)
        return None

    def _counts(self, queue_url: str) -> tuple[int, int, int]:
        """Visible, in-flight and delayed messages (SQS's approximate counts)."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return (
            int(attributes.get("ApproximateNumberOfMessages", 0)),
            int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            int(attributes.get("ApproximateNumberOfMessagesDelayed", 0)),
        )

    def _oldest_message_age(self) -> int | None:
        """The newest Maximum of the queue's ApproximateAgeOfOldestMessage in the window, or None."""
        end = self._clock()
        response = self._cloudwatch.get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": self._queue_name}],
            StartTime=end - AGE_METRIC_WINDOW,
            EndTime=end,
            Period=AGE_METRIC_PERIOD_SECONDS,
            Statistics=["Maximum"],
        )
        points = [point for point in response.get("Datapoints", []) if "Maximum" in point]
        if not points:
            return None
        newest = max(points, key=lambda point: point["Timestamp"])
        return int(newest["Maximum"])
