"""The Lambdas of the backfill / reconcile state machine (Step Functions, Distributed Map).

The state machine runs `start_run`, then a Distributed Map over the bucket's listing whose children call
`write_batch` with batches of items, then (for a reconcile) a Map over the table's Scan segments whose
iterations call `sweep_segment` until each is done, then `finish_run`; any failure goes to `fail_run`.
The writes are `file_index.write.repair`'s, the same as the command line's, and every one is idempotent, so a
retried child changes nothing it already changed.

Shapes (the state machine's contract):

- `start_run({"operation": "backfill" | "reconcile"})` (absent: backfill) -> `{"bucket", "operation",
  "runId", "segments": [{"segment": i, "totalSegments": N}, ...]}`; marks the index BUILDING.
- `write_batch({"BatchInput": {"bucket", "operation", "runId"}, "Items": [{"Key", "Etag", "Size",
  "LastModified", "StorageClass"}, ...]})` -> the batch's counts, also added to the state record.
- `sweep_segment({"bucket", "runId", "segment", "totalSegments", "startKey": null | {...}})` -> the same
  object with `startKey` moved on, `"done": true | false` and the counts of this call.
- `finish_run({"bucket", "runId"})` -> READY; `fail_run({"bucket", "runId", "error"})` records the error
  and leaves the index BUILDING.

A batch or segment of any bucket other than `BUCKET_NAME` is refused (`ForeignBucketError`), and so is
every call while the function's settings differ from the deployed configuration recorded in the table
(`file_index.store.deployment.ConfigurationMismatchError`, naming both): the run fails before it writes.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from backfill.batches import (
    Batch,
    ForeignBucketError,
    InvalidInputError,
    parse_operation,
    reconcile_listed,
    sweep,
    write_backfill,
)
from backfill.config import BackfillConfig
from file_index.rules import cost
from file_index.store.deployment import ConfigurationCheck, DeployedConfiguration, DeployedConfigurationStore
from file_index.store.state import IndexStateStore, Operation
from file_index.write.names import NameIndex
from file_index.write.repair import Repairer

logger = Logger()
# Share of the remaining invocation time a sweep may use; the rest covers the page in progress.
SWEEP_TIME_SHARE = 0.8


@dataclass(frozen=True)
class Runtime:
    config: BackfillConfig
    repairer: Repairer
    store: IndexStateStore
    executor: ThreadPoolExecutor
    configuration: ConfigurationCheck


@functools.cache
def cold_start() -> Runtime:
    """Configuration, clients and thread pool, once per process; `cold_start.cache_clear()` starts afresh."""
    config = BackfillConfig.from_env()
    # Timeouts that fit an invocation (file_index.store.sdk.SdkSettings), not botocore's 60 s per attempt.
    session = boto3.session.Session()
    dynamodb = config.sdk.client("dynamodb", session)
    s3 = config.sdk.client("s3", session)
    return Runtime(
        config=config,
        repairer=Repairer(
            s3=s3,
            dynamodb=dynamodb,
            table_name=config.table_name,
            bucket=config.bucket_name,
            key_pattern=config.key_pattern,
            tombstone_ttl_days=config.tombstone_ttl_days,
            shard_placement=config.placement,
            names=None
            if config.name_table_name is None
            else NameIndex(dynamodb, config.name_table_name, entry_table=config.table_name),
        ),
        store=IndexStateStore(dynamodb, config.table_name),
        executor=ThreadPoolExecutor(max_workers=config.write_concurrency, thread_name_prefix="backfill"),
        configuration=ConfigurationCheck(
            DeployedConfigurationStore(dynamodb, config.table_name),
            config.bucket_name,
            DeployedConfiguration.of(
                placement=config.placement,
                key_pattern=config.key_pattern.source,
                name_table=config.name_table_name,
            ),
            writer="the backfill function (its environment)",
        ),
    )


def checked_runtime() -> Runtime:
    """The runtime, once its settings are the deployed configuration's (ConfigurationMismatchError)."""
    runtime = cold_start()
    runtime.configuration.check()
    return runtime


def _own_bucket(runtime: Runtime, bucket: Any) -> str:
    if bucket != runtime.config.bucket_name:
        raise ForeignBucketError(
            f"bucket {bucket!r} is not the indexed bucket {runtime.config.bucket_name!r}"
        )
    return str(bucket)


def _run_id(event: dict[str, Any]) -> str:
    run_id = event.get("runId")
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInputError("runId is missing")
    return run_id


@logger.inject_lambda_context
def start_run(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = checked_runtime()
    operation = parse_operation(event)
    run_id = uuid.uuid4().hex
    runtime.store.start(runtime.config.bucket_name, operation, run_id)
    total = runtime.config.scan_segments
    logger.info("Run started", extra={"operation": operation.value, "runId": run_id})
    return {
        "bucket": runtime.config.bucket_name,
        "operation": operation.value,
        "runId": run_id,
        "segments": [{"segment": segment, "totalSegments": total} for segment in range(total)],
    }


@logger.inject_lambda_context
def write_batch(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    runtime = checked_runtime()
    batch = Batch.parse(event)
    _own_bucket(runtime, batch.bucket)
    if batch.operation is Operation.BACKFILL:
        counts = write_backfill(runtime.repairer, batch.objects, runtime.executor)
    else:
        counts = reconcile_listed(runtime.repairer, batch.objects, runtime.executor)
    statistics = cost.listing_counts(batch.objects, batch.bucket)
    runtime.store.add_progress(batch.bucket, batch.run_id, counts, statistics=statistics)
    logger.info("Batch written", extra={"operation": batch.operation.value, "runId": batch.run_id, **counts})
    return counts


@logger.inject_lambda_context
def sweep_segment(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = checked_runtime()
    bucket = _own_bucket(runtime, event.get("bucket"))
    run_id = _run_id(event)
    segment, total = event.get("segment"), event.get("totalSegments")
    if not isinstance(total, int) or not isinstance(segment, int) or not 0 <= segment < total:
        raise InvalidInputError(f"segment {segment!r} of totalSegments {total!r} is not a Scan segment")
    start_key = event.get("startKey")
    if start_key is not None and not isinstance(start_key, dict):
        raise InvalidInputError("startKey must be null or a DynamoDB key")
    budget = context.get_remaining_time_in_millis() / 1000 * SWEEP_TIME_SHARE
    result = sweep(
        runtime.repairer,
        segment=segment,
        total_segments=total,
        start_key=start_key,
        deadline=time.monotonic() + budget,
        executor=runtime.executor,
    )
    runtime.store.add_progress(bucket, run_id, result.counts)
    logger.info(
        "Segment swept", extra={"runId": run_id, "segment": segment, "done": result.done, **result.counts}
    )
    return {**event, "startKey": result.start_key, "done": result.done, "counts": result.counts}


@logger.inject_lambda_context
def finish_run(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = cold_start()
    bucket = _own_bucket(runtime, event.get("bucket"))
    state = runtime.store.finish(bucket, _run_id(event))
    logger.info("Run finished", extra={"runId": state.run_id, "progress": state.counts})
    return state.to_json()


@logger.inject_lambda_context
def fail_run(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = cold_start()
    bucket = _own_bucket(runtime, event.get("bucket"))
    error = event.get("error")
    # Step Functions' Catch hands over {"Error": ..., "Cause": ...}; keep it readable either way.
    text = error if isinstance(error, str) else json.dumps(error, default=str)
    runtime.store.fail(bucket, _run_id(event), text)
    logger.error("Run failed", extra={"runId": event.get("runId"), "error": text})
    return {"bucket": bucket, "runId": event.get("runId"), "error": text}
