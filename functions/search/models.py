"""Response models of the search API: the routes' return types and its OpenAPI document's schemas.

Powertools validates each route's answer against the route's return type. A list page or a file is
written as the route built it (`Answer`); the status is written from its model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

IndexStateName = Literal["READY", "BUILDING"]
_INDEX_STATE = (
    "READY: the index holds every object of the bucket (it follows the bucket through its events). "
    "BUILDING: a backfill or a reconcile is running, or an existing bucket has not been backfilled yet, "
    "so answers may miss files"
)


class Answer(BaseModel):
    """A model of an answer that is checked against it and written as it was given.

    Validation is strict (no conversion: what passes is of the documented type), and the JSON is the
    route's own: its fields in its order, absent ones left out, none added as null. What is written is
    what was validated, so the model's validation schema describes it (`search.openapi.response_schemas`);
    its serialization schema is empty, the serializer returning what it was given.
    """

    model_config = ConfigDict(strict=True)
    _given: dict[str, Any] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, Answer):
            model._given = data
        return model

    @model_serializer(mode="wrap")
    def _write_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        return handler(self) if self._given is None else self._given


class FileItem(Answer):
    """An indexed file; attributes the index does not hold for it are omitted (names as on the wire)."""

    objectKey: str = Field(description="The S3 object key, URL-decoded")
    bucketName: str | None = Field(default=None, description="Bucket of the object")
    fileId: str | None = Field(default=None, description="File name part of the key")
    size: int | None = Field(default=None, description="Size in bytes")
    uploadUser: str | None = Field(default=None, description="Uploader, from the key pattern")
    uploadDate: str | None = Field(
        default=None, description="ISO-8601 UTC time of the upload event, e.g. 2017-08-20T09:15:02.113Z"
    )
    sequencer: str | None = Field(default=None, description="S3's sequencer of the indexed event")
    eTag: str | None = Field(default=None, description="Entity tag of the object")
    versionId: str | None = Field(default=None, description="Version of the object")
    contentType: str | None = Field(
        default=None, description="Content type, where `enrich` names contentType"
    )
    meta: dict[str, str] | None = Field(
        default=None, description="User metadata (names in lower case), where `enrich` names metadata"
    )
    tags: dict[str, str] | None = Field(default=None, description="Object tags, where `enrich` names tags")
    ownerName: str | None = Field(
        default=None,
        description=(
            "The uploader's name in the user pool (`ownerNameAttribute`: name, email or user name), in "
            "an admin's `GET /me/files` with `user` or `bucket` only"
        ),
    )


class FileListPage(Answer):
    """One page of a list; pass `nextCursor` back as `cursor` for the next page (null: no more)."""

    items: list[FileItem]
    nextCursor: str | None = Field(
        description=(
            "Opaque cursor of the next page, or null. A page may have fewer than `limit` items, even "
            "none, and still have one (a filtered page stops after a bounded read): follow it until null"
        )
    )
    orderedBy: Literal["size", "uploadDate", "zAddress", "objectKey"] = Field(
        description=(
            "The order of the items (ascending or descending as `order` says), ties in a fixed order: "
            "size, upload time, the Z-order of (upload time, size) for a bucket box read from the "
            "Z-order index, which is neither by size nor by time, or the key (a `prefix` or `delimiter` list)"
        )
    )
    commonPrefixes: list[str] | None = Field(
        default=None,
        description=(
            "With `delimiter=/`: the sub-folders of `prefix` that hold a matching file, each ending in `/`, "
            "each once across pages (in key order, among the items as S3's ListObjectsV2 answers them)"
        ),
    )
    indexState: IndexStateName = Field(
        description=_INDEX_STATE + "; told at most a few seconds late (each server keeps it 2 seconds)"
    )


class IndexStatisticsSummary(BaseModel):
    """The statistics of a bucket's entries the planner weighs plans with (shown summed up)."""

    entries: int = Field(description="Objects counted")
    meanEntryBytes: int = Field(description="Their index entries' mean size in bytes (estimated)")
    months: int = Field(description="How many distinct months they were uploaded in")
    source: Literal["run", "uploads"] = Field(
        description=(
            "Where they come from: `run`, the listing of the last backfill or reconcile; `uploads`, the "
            "indexer's sample of uploads (no run counted any)"
        )
    )


class BucketIndexState(BaseModel):
    """The index state of one bucket, from its state record (a bucket never built has only `state`)."""

    bucket: str = Field(description="The indexed bucket")
    state: IndexStateName = Field(description=_INDEX_STATE)
    operation: Literal["backfill", "reconcile"] | None = Field(
        description="The run that last built or repaired the index, or null if none has"
    )
    runId: str | None = Field(description="Identifier of that run")
    startedAt: str | None = Field(description="ISO-8601 UTC time the run started")
    finishedAt: str | None = Field(description="ISO-8601 UTC time the run completed; null while it runs")
    updatedAt: str | None = Field(description="ISO-8601 UTC time the run last reported progress")
    progress: dict[str, int] = Field(
        description="The run's counters by name: objects listed, written, skipped, ... (empty before any run)"
    )
    lastError: str | None = Field(description="Why the run stopped, if it failed; it stays BUILDING then")
    zOrderPending: bool = Field(
        default=False,
        description=(
            "True while the Z-order index is being filled for entries written before it was switched on: "
            "bucket searches with time bounds then read the size index (their `orderedBy` is `size`)"
        ),
    )
    statistics: IndexStatisticsSummary | None = Field(
        default=None,
        description=(
            "What the planner weighs plans with (entries, their mean size in bytes, the months they were "
            "uploaded in, and their `source`): a run's listing, used once the run is READY, else the "
            "indexer's sample of uploads; null before either counted any"
        ),
    )


class QueueBacklog(BaseModel):
    """The indexer's queue (SQS's approximate counts); a figure is null when it could not be read."""

    messagesWaiting: int | None = Field(
        description="Events waiting to be indexed (ApproximateNumberOfMessages)"
    )
    messagesInFlight: int | None = Field(
        description="Events being indexed or awaiting a retry (ApproximateNumberOfMessagesNotVisible)"
    )
    messagesDelayed: int | None = Field(description="Delayed events (ApproximateNumberOfMessagesDelayed)")
    oldestMessageAgeSeconds: int | None = Field(
        description=(
            "Age of the oldest waiting event in seconds: the newest datapoint of the last 10 minutes of "
            "CloudWatch's AWS/SQS ApproximateAgeOfOldestMessage (Maximum), which SQS publishes once a "
            "minute. Null when there is none (an idle queue, or an emulator without CloudWatch metrics) "
            "or it could not be read"
        )
    )


class DeadLetterBacklog(BaseModel):
    """The dead-letter queue: events the indexer failed on repeatedly, which need attention."""

    messages: int | None = Field(
        description="Dead-lettered events, including any being inspected or redriven; null if unreadable"
    )


class IndexStatus(BaseModel):
    """The state of the index and of the indexer's backlog."""

    indexState: IndexStateName = Field(description=_INDEX_STATE)
    buckets: list[BucketIndexState] = Field(description="Each indexed bucket's state and progress")
    queue: QueueBacklog
    deadLetterQueue: DeadLetterBacklog
    unavailable: list[str] = Field(
        description=(
            "The figures that could not be read this time (SQS or CloudWatch throttled, failed or refused), "
            'as paths: "queue", "queue.oldestMessageAgeSeconds", "deadLetterQueue". Their values are null; '
            "a null not named here means there is no such datapoint"
        )
    )


class ErrorMessage(BaseModel):
    """Every 4xx answer."""

    message: str
