"""The index state of a bucket (seed 003): `BUILDING` while a backfill or a reconcile runs, `READY` after.

One record per indexed bucket, kept in `FileMetaData` itself. Its `objectKey` is longer than any S3 key
(S3 allows at most `MAX_KEY_BYTES` bytes; `state_key` is one more), so it never collides with an
object's entry, no event can write it (the indexer refuses longer keys) and `GET /files/{key}` refuses
to look it up. It carries none of the index key attributes (the bucket is in `stateOf`, not
`bucketName`), so no search returns it; a scan of the table must skip it (`is_record_key`).

A run (`runId`) owns the record from `start` to `finish`: progress and the end are written only while
the record still names that run, so two runs never mix their counts and a stale worker cannot mark a
newer run READY. Progress counters are added atomically (`ADD`), so any number of workers (the
Distributed Map's batch Lambdas, the command line's threads) may report at once.

No record means the index has never been built from a listing: READY for a bucket the stack created
empty (every object since has an event), not yet built for an existing bucket (the search function is
told which, see `search.config`).

**The Z-order flag** (`zOrderPending`): true while entries may lack `zAddress`, because the Z-order index
was switched on for a table that already held entries and `migrate` has not finished; searches must not
use that index meanwhile. It lives on the same record but belongs to no run: `start`, `finish` and `fail`
keep it, and only `mark_z_order_pending` / `clear_z_order_pending` change it. Marking a bucket that has
no record yet creates one holding only the flag; such a record names no run (`IndexState.has_run` is
False) and reads as BUILDING with no operation, like a damaged one: a reader with a configured initial
state (the search function) uses that instead. Clearing the flag of such a record deletes it, so the
bucket reads exactly as before the mark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from file_index.rules import cost, schema, upload_statistics, zorder
from file_index.rules.objects import iso_utc_millis, record_key

# boto3 ships no type information for its generated clients.
DynamoDBClient = Any

STATE_OF = "stateOf"  # the bucket a state record describes
STATE = "state"
OPERATION = "operation"
RUN_ID = "runId"
STARTED_AT = "startedAt"
FINISHED_AT = "finishedAt"
UPDATED_AT = "updatedAt"
RESUME_AFTER = "resumeAfter"  # the last listed key whose writes all finished: where a rerun resumes
LAST_ERROR = "lastError"
Z_ORDER_PENDING = "zOrderPending"  # see the module docstring; owned by no run
COUNT_PREFIX = "count_"  # counters: count_listed, count_written, count_skipped, ...
STATISTICS_PREFIX = "stat_"  # the listed objects' statistics (`cost.entry_counts`), added like counters

# Counters added by one UpdateItem (see `IndexStateStore.add_progress`).
_ADDS_PER_UPDATE = 50
# `start` replaces the record while keeping the flag; a mark or clear in between makes it try again.
_MAX_START_ROUNDS = 5

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class State(StrEnum):
    BUILDING = "BUILDING"  # a backfill or reconcile runs (or has not run yet): answers may be partial
    READY = "READY"  # the last run completed; the index follows the bucket through its events


class Operation(StrEnum):
    BACKFILL = "backfill"
    RECONCILE = "reconcile"


class RunSupersededError(RuntimeError):
    """The state record names another run: this run was replaced by a newer one and must stop."""


class StateContentionError(RuntimeError):
    """The state record kept changing while a run tried to take it over; start the run again."""


def state_key(bucket: str) -> str:
    """The `objectKey` of `bucket`'s state record: one byte longer than the longest S3 key."""
    return record_key("index-state", bucket)


def now_iso() -> str:
    return iso_utc_millis(datetime.now(UTC))


@dataclass(frozen=True)
class IndexState:
    """What a state record says; `counts` maps a counter's name (listed, written, ...) to its value."""

    bucket: str
    state: State
    operation: Operation | None = None
    run_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    updated_at: str | None = None
    resume_after: str | None = None
    last_error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    z_order_pending: bool = False
    statistics: dict[str, int] = field(default_factory=dict)
    # The indexer's sample of uploads (`file_index.rules.upload_statistics`), summed over its items.
    upload_counts: dict[str, int] = field(default_factory=dict)

    @property
    def has_run(self) -> bool:
        """Whether the record names a run; one holding only the Z-order flag does not."""
        return self.run_id is not None

    def to_json(self) -> dict[str, Any]:
        """The record as the API and the command line show it."""
        return {
            "bucket": self.bucket,
            "state": self.state.value,
            "operation": self.operation.value if self.operation else None,
            "runId": self.run_id,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "updatedAt": self.updated_at,
            "progress": dict(sorted(self.counts.items())),
            "lastError": self.last_error,
            "zOrderPending": self.z_order_pending,
            "statistics": self._statistics_summary(),
        }

    def index_statistics(self) -> cost.IndexStatistics | None:
        """What the planner may rely on: the statistics of the last complete run (READY) if it left any,
        else those of the indexer's sample of uploads (kept through any run), else None."""
        if self.state is not State.READY or cost.statistics_from_counts(self.statistics) is None:
            return cost.statistics_from_counts(self.upload_counts)
        started = None
        if self.started_at is not None:
            try:
                started = zorder.epoch_millis(self.started_at)
            except zorder.ZOrderError:
                started = None  # a date damaged by hand: no projection of the uploads since
        return cost.statistics_from_counts(self.statistics, as_of_ms=started)

    def _statistics_summary(self) -> dict[str, Any] | None:
        known = cost.statistics_from_counts(self.statistics)
        source = "run"
        if known is None:
            known, source = cost.statistics_from_counts(self.upload_counts), "uploads"
        if known is None:
            return None
        return {
            "entries": known.count,
            "meanEntryBytes": round(known.entry_bytes),
            "months": len(known.months),
            "source": source,
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> IndexState:
        """The record as read; a record damaged by hand reads as BUILDING (not to be trusted), never fails.

        One bad item must not break every list answer and every command that reads it: an unknown state
        or operation, or a counter that is not a number, is read as "not known to be complete", and the
        next run's `start` writes the record afresh.
        """
        values = {name: _deserializer.deserialize(value) for name, value in item.items()}
        state = _member(State, values.get(STATE)) or State.BUILDING
        counts = _counters(values, COUNT_PREFIX)
        return cls(
            bucket=str(values.get(STATE_OF, "")),
            state=state,
            operation=_member(Operation, values.get(OPERATION)),
            run_id=_text(values.get(RUN_ID)),
            started_at=_text(values.get(STARTED_AT)),
            finished_at=_text(values.get(FINISHED_AT)),
            updated_at=_text(values.get(UPDATED_AT)),
            resume_after=_text(values.get(RESUME_AFTER)),
            last_error=_text(values.get(LAST_ERROR)),
            counts=counts,
            # Anything but a stored true is "not pending": a damaged flag must not hide a complete index,
            # and an incomplete one is only ever flagged by `mark_z_order_pending`, which writes true.
            z_order_pending=values.get(Z_ORDER_PENDING) is True,
            statistics=_counters(values, STATISTICS_PREFIX),
        )


class IndexStateStore:
    """Reads and writes the state records of one table."""

    def __init__(self, dynamodb: DynamoDBClient, table_name: str) -> None:
        self._dynamodb = dynamodb
        self._table = table_name

    def read(self, bucket: str, *, consistent: bool = True, upload_counts: bool = False) -> IndexState | None:
        """The record (one GetItem), None if there is none. With `upload_counts`, also the indexer's
        upload statistics (`read_upload_counts`); a bucket with those but no record then reads like a
        record naming no run (`has_run` False)."""
        response = self._dynamodb.get_item(TableName=self._table, Key=_key(bucket), ConsistentRead=consistent)
        item = response.get("Item")
        state = IndexState.from_item(item) if item else None
        if not upload_counts:
            return state
        counts = self.read_upload_counts(bucket, consistent=consistent)
        if state is None and not counts:
            return None
        return replace(state or IndexState.from_item({STATE_OF: {"S": bucket}}), upload_counts=counts)

    def read_upload_counts(self, bucket: str, *, consistent: bool = False) -> dict[str, int]:
        """The sum of `bucket`'s upload statistics items (`file_index.rules.upload_statistics`): a GetItem of
        each of its `upload_statistics.STATISTICS_SHARDS` small items (the search may make no other call)."""
        found = []
        for key in upload_statistics.statistics_keys(bucket):
            item = self._dynamodb.get_item(
                TableName=self._table, Key={schema.OBJECT_KEY: {"S": key}}, ConsistentRead=consistent
            ).get("Item")
            if item:
                found.append({name: _deserializer.deserialize(value) for name, value in item.items()})
        return upload_statistics.counts_of(found)

    def start(self, bucket: str, operation: Operation, run_id: str, *, resume: bool = False) -> IndexState:
        """Mark `bucket` BUILDING under `run_id`, taking the record over from any earlier run.

        With `resume`, the record must already belong to `run_id` (an interrupted run): its counters and
        `resumeAfter` are kept. Otherwise the record starts afresh.
        """
        now = now_iso()
        if resume:
            self._update(
                bucket,
                run_id,
                "SET #state = :building, #updatedAt = :now REMOVE #finishedAt, #lastError",
                {
                    "#state": STATE,
                    "#updatedAt": UPDATED_AT,
                    "#finishedAt": FINISHED_AT,
                    "#lastError": LAST_ERROR,
                },
                {":building": State.BUILDING.value, ":now": now},
            )
        else:
            item = {
                schema.OBJECT_KEY: state_key(bucket),
                STATE_OF: bucket,
                STATE: State.BUILDING.value,
                OPERATION: operation.value,
                RUN_ID: run_id,
                STARTED_AT: now,
                UPDATED_AT: now,
            }
            self._replace(bucket, item)
        state = self.read(bucket)
        assert state is not None
        return state

    def add_progress(
        self,
        bucket: str,
        run_id: str,
        counts: Mapping[str, int],
        *,
        resume_after: str | None = None,
        statistics: Mapping[str, int] | None = None,
    ) -> None:
        """Add `counts` to the run's counters, and `statistics` (`cost.listing_counts` of the objects
        listed) to its statistics; move its checkpoint. RunSupersededError if the run was replaced."""
        added = [(COUNT_PREFIX + name, value) for name, value in sorted(counts.items()) if value]
        added += [
            (STATISTICS_PREFIX + name, value) for name, value in sorted((statistics or {}).items()) if value
        ]
        # A reconcile's statistics span every month of the bucket's life: at most `_ADDS_PER_UPDATE` counters
        # an UpdateItem keeps each expression far below DynamoDB's limits (4 KB, 300 operators). The
        # checkpoint moves with the last one, once every counter is added.
        chunks = [
            added[start : start + _ADDS_PER_UPDATE] for start in range(0, len(added), _ADDS_PER_UPDATE)
        ] or [[]]
        for number, chunk in enumerate(chunks, start=1):
            names = {"#updatedAt": UPDATED_AT}
            values: dict[str, Any] = {":now": now_iso()}
            sets = ["#updatedAt = :now"]
            if resume_after is not None and number == len(chunks):
                names["#resumeAfter"] = RESUME_AFTER
                values[":resumeAfter"] = resume_after
                sets.append("#resumeAfter = :resumeAfter")
            adds = []
            for position, (name, value) in enumerate(chunk):
                names[f"#c{position}"] = name
                values[f":c{position}"] = value
                adds.append(f"#c{position} :c{position}")
            expression = "SET " + ", ".join(sets) + (" ADD " + ", ".join(adds) if adds else "")
            self._update(bucket, run_id, expression, names, values)

    def finish(self, bucket: str, run_id: str) -> IndexState:
        """Mark the run complete: READY, with its finish time and the counts it added."""
        now = now_iso()
        self._update(
            bucket,
            run_id,
            "SET #state = :ready, #finishedAt = :now, #updatedAt = :now REMOVE #resumeAfter, #lastError",
            {
                "#state": STATE,
                "#finishedAt": FINISHED_AT,
                "#updatedAt": UPDATED_AT,
                "#resumeAfter": RESUME_AFTER,
                "#lastError": LAST_ERROR,
            },
            {":ready": State.READY.value, ":now": now},
        )
        state = self.read(bucket)
        assert state is not None
        return state

    def fail(self, bucket: str, run_id: str, error: str) -> None:
        """Record why the run stopped; the state stays BUILDING (the index is not known to be complete)."""
        self._update(
            bucket,
            run_id,
            "SET #lastError = :error, #updatedAt = :now",
            {"#lastError": LAST_ERROR, "#updatedAt": UPDATED_AT},
            {":error": error[:1000], ":now": now_iso()},
        )

    def mark_z_order_pending(self, bucket: str) -> None:
        """Flag `bucket`'s entries as possibly lacking `zAddress`; creates a flag-only record if none."""
        self._dynamodb.update_item(
            TableName=self._table,
            Key=_key(bucket),
            UpdateExpression="SET #pending = :true, #stateOf = :bucket",
            ExpressionAttributeNames={"#pending": Z_ORDER_PENDING, "#stateOf": STATE_OF},
            ExpressionAttributeValues=_serialize({":true": True, ":bucket": bucket}),
        )

    def clear_z_order_pending(self, bucket: str) -> None:
        """Every entry of `bucket` has its `zAddress`: drop the flag (and a record that held only it)."""
        try:
            self._dynamodb.delete_item(
                TableName=self._table,
                Key=_key(bucket),
                ConditionExpression="attribute_exists(#key) AND attribute_not_exists(#runId)",
                ExpressionAttributeNames={"#key": schema.OBJECT_KEY, "#runId": RUN_ID},
            )
            return
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
        # A record of a run (or none at all): remove the flag only, and create nothing.
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(bucket),
                UpdateExpression="REMOVE #pending",
                ConditionExpression="attribute_exists(#key)",
                ExpressionAttributeNames={"#pending": Z_ORDER_PENDING, "#key": schema.OBJECT_KEY},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def _replace(self, bucket: str, item: dict[str, Any]) -> None:
        """Put `item` as the record, carrying over the Z-order flag of the record it replaces.

        The PutItem is conditioned on the flag being as read, so a mark or clear that lands between the
        read and the put is never undone: the put fails and is tried again with the new value.
        """
        for _ in range(_MAX_START_ROUNDS):
            response = self._dynamodb.get_item(
                TableName=self._table,
                Key=_key(bucket),
                ConsistentRead=True,
                ProjectionExpression="#pending",
                ExpressionAttributeNames={"#pending": Z_ORDER_PENDING},
            )
            held = response.get("Item", {}).get(Z_ORDER_PENDING)
            new = dict(item)
            names = {"#pending": Z_ORDER_PENDING}
            if held is None:
                condition = "attribute_not_exists(#pending)"
                values = None
            else:
                new[Z_ORDER_PENDING] = _deserializer.deserialize(held)
                condition = "#pending = :pending"
                values = {":pending": held}
            try:
                self._dynamodb.put_item(
                    TableName=self._table,
                    Item=_serialize(new),
                    ConditionExpression=condition,
                    ExpressionAttributeNames=names,
                    **({"ExpressionAttributeValues": values} if values else {}),
                )
                return
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
        raise StateContentionError(f"the index state of bucket {bucket!r} kept changing while a run started")

    def _update(
        self, bucket: str, run_id: str, expression: str, names: dict[str, str], values: dict[str, Any]
    ) -> None:
        try:
            self._dynamodb.update_item(
                TableName=self._table,
                Key=_key(bucket),
                UpdateExpression=expression,
                ConditionExpression="#runId = :runId",
                ExpressionAttributeNames={**names, "#runId": RUN_ID},
                ExpressionAttributeValues=_serialize({**values, ":runId": run_id}),
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise RunSupersededError(
                    f"the index state of bucket {bucket!r} no longer belongs to run {run_id!r}"
                ) from None
            raise


def _counters(values: Mapping[str, Any], prefix: str) -> dict[str, int]:
    return {
        name.removeprefix(prefix): int(value)
        for name, value in values.items()
        if name.startswith(prefix) and isinstance(value, Decimal) and value == value.to_integral()
    }


def _member[E: StrEnum](kind: type[E], value: Any) -> E | None:
    try:
        return kind(value)
    except ValueError:
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _key(bucket: str) -> dict[str, Any]:
    return {schema.OBJECT_KEY: {"S": state_key(bucket)}}


def _serialize(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in values.items()}


def effective_state(record: IndexState | None, bucket: str, initial: State) -> IndexState:
    """The index state of `bucket` as every reader tells it (`GET /status`, the lists, the `status`
    command): its record, or `initial` when it has none or one naming no run (only the Z-order flag).

    `initial` is READY for a bucket the stack created (indexed from its first object), BUILDING for an
    existing bucket (`existingBucketName`) until its first backfill.
    """
    if record is None:
        return IndexState(bucket=bucket, state=initial)
    if not record.has_run:
        return replace(record, state=initial)
    return record
