"""Indexer Lambda: SQS batches of S3 events (notifications or EventBridge) into FileMetaData, with partial
batch responses.

Thin on purpose: `indexer.batch` parses and writes (concurrently), `file_index.write.writer` holds the rule;
this module reads the configuration once, logs, emits metrics and turns per-message results into
`batchItemFailures` with Powertools' batch processor.

The invocation's deadline: no write starts once the remaining time is at most the worst case of one SDK
call (`SdkSettings.worst_call_seconds`) plus a reserve for answering; the records left are reported as
batch item failures. An invocation that starts with less time than that cannot write anything: it fails
with a `ConfigError` naming the variables to change. The margin covers one call: a permanent version
delete that needs a lookup makes up to three (see `file_index.write.writer`), so only if all three stall to
their timeouts can such a record still outlast the invocation.

Metrics (EMF): IndexedFiles, DeletedFiles, StaleEvents (older or duplicate events that changed nothing),
FailedRecords (records not written, malformed messages counted once), DeferredRecords (those of
FailedRecords not started because the invocation was about to end), ForeignBucketEvents (events of another
bucket than BUCKET_NAME, refused: never written, their messages acknowledged; one warning per bucket and
batch) and IndexLagMs (event time to write), ConfigurationMismatches (batches refused whole because the
indexer's settings differ from the deployed configuration recorded in the table,
`file_index.store.deployment`: its messages go back to the queue).

After a batch, what its writes did to the sampled keys' entries (about one key in a hundred: entries made,
and those deletes and overwrites removed) is added to the bucket's statistics
(`file_index.rules.upload_statistics`), so the search's planner knows what a bucket only uploads wrote holds.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError

from file_index.rules.config import ConfigError
from file_index.rules.objects import ObjectEvent
from file_index.rules.upload_statistics import StatisticsTally
from file_index.store.deployment import (
    ConfigurationCheck,
    ConfigurationMismatchError,
    DeployedConfiguration,
    DeployedConfigurationStore,
)
from file_index.store.enrich import TAGS, enriched, update_tags
from file_index.store.sdk import DynamoDBClient, S3Client, SdkSettings, dynamodb_client
from file_index.store.sdk import s3_client as writer_s3_client
from file_index.store.statistics import add_counts
from file_index.write.conditions import Outcome
from file_index.write.names import NameIndex
from file_index.write.writer import apply_event
from indexer.batch import Deadline, Message, MessageReport, index_batch, is_expected
from indexer.config import IndexerConfig

DEFAULT_METRICS_NAMESPACE = "S3FileSearch"
# Time kept after the last write may start, beyond that write's worst case: for logging the batch,
# flushing metrics and answering.
ANSWER_RESERVE_MS = 1000

logger = Logger()
metrics = Metrics()
# A batch in which every message failed still answers with its failures instead of raising: the outcome
# for SQS is the same, and the log keeps one line per message instead of a stack trace.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@dataclass(frozen=True)
class Runtime:
    """What a cold start builds once and every invocation reuses."""

    config: IndexerConfig
    dynamodb: DynamoDBClient
    s3: S3Client  # for the writer's rare HEAD of an object (see file_index.write.writer)
    executor: ThreadPoolExecutor
    names: NameIndex | None = None  # the name index, when the deployment keeps one
    # The indexer's settings against the deployment's record in the table (None: not checked).
    configuration: ConfigurationCheck | None = None
    # What the writes of the batch running tally for the bucket's statistics, drained after each batch.
    statistics: StatisticsTally = field(default_factory=StatisticsTally)

    @property
    def deadline_margin_ms(self) -> int:
        """No write starts with this much time left or less."""
        return math.ceil(self.config.sdk.worst_call_seconds * 1000) + ANSWER_RESERVE_MS

    def deadline(self, context: LambdaContext) -> Deadline:
        """The invocation's deadline; ConfigError when the invocation is too short for any write."""
        remaining_ms = context.get_remaining_time_in_millis()
        if remaining_ms <= self.deadline_margin_ms:
            raise ConfigError(
                f"the invocation has {remaining_ms} ms left, and a write may only "
                f"start with more than {self.deadline_margin_ms} ms left (DYNAMODB_MAX_ATTEMPTS x "
                "(SDK_CONNECT_TIMEOUT_SECONDS + SDK_READ_TIMEOUT_SECONDS) + back-off + "
                f"{ANSWER_RESERVE_MS} ms): lower those or raise the function's timeout"
            )
        return Deadline(context.get_remaining_time_in_millis, self.deadline_margin_ms)

    def apply(self, event: ObjectEvent) -> Outcome:
        enrich = self.config.enrich
        if event.is_tagging:
            # Only a deployment that enriches tags subscribes to tag changes; any other skips them.
            if TAGS in enrich and update_tags(self.dynamodb, self.config.table_name, self.s3, event):
                return Outcome.WRITTEN
            return Outcome.STALE
        if enrich:
            event = enriched(self.s3, event, enrich)
        return apply_event(
            self.dynamodb,
            self.config.table_name,
            event,
            s3=self.s3,
            tombstone_ttl_days=self.config.tombstone_ttl_days,
            placement=self.config.placement,
            names=self.names,
            statistics=self.statistics,
        )


@functools.cache
def cold_start() -> Runtime:
    """Configuration, clients and thread pool, once per process; `cold_start.cache_clear()` starts afresh."""
    config = IndexerConfig.from_env()
    _observability_from_env()
    dynamodb = dynamodb_client(config.sdk)
    configuration = ConfigurationCheck(
        DeployedConfigurationStore(dynamodb, config.table_name),
        config.bucket_name,
        DeployedConfiguration.of(
            placement=config.placement,
            key_pattern=config.key_pattern.source,
            name_table=config.name_table_name,
            enrich=config.enrich,
        ),
        writer="the indexer (its environment)",
    )
    with contextlib.suppress(ConfigurationMismatchError):
        # Read once here, before any batch; a mismatch is read again and refused by every invocation.
        configuration.check()
    return Runtime(
        config=config,
        dynamodb=dynamodb,
        s3=s3_client(config.sdk),
        executor=ThreadPoolExecutor(max_workers=config.write_concurrency, thread_name_prefix="index-write"),
        names=None if config.name_table_name is None else name_index(dynamodb, config),
        configuration=configuration,
    )


def name_index(dynamodb: DynamoDBClient, config: IndexerConfig) -> NameIndex:
    """The name index's writer, with a pool of its own: a name's items are written and removed 25 to a
    BatchWriteItem (a long name's 100 and more in five), in parallel, not one call after another; a
    removal then reads the key's entry back (`file_index.write.names`). It holds `write_concurrency`
    threads, shared by the batch's writes, so a batch has at most twice that many calls in flight (the
    SDK's connection pool holds them: `IndexerConfig.sdk`)."""
    assert config.name_table_name is not None
    pool = ThreadPoolExecutor(max_workers=config.write_concurrency, thread_name_prefix="index-names")
    return NameIndex(dynamodb, config.name_table_name, entry_table=config.table_name, executor=pool)


def s3_client(sdk: SdkSettings) -> Any:
    """The S3 client of the writer's rare HEAD lookups (a seam: tests put a model of S3 here)."""
    return writer_s3_client(sdk)


def _observability_from_env() -> None:
    # Logger and Metrics read POWERTOOLS_* when this module is imported, which may be before the
    # environment is set (tests, the local stack); read them again now. Without a namespace, Powertools
    # would fail every invocation after its writes, so a missing one falls back to the product's.
    metrics.namespace = (
        os.getenv("POWERTOOLS_METRICS_NAMESPACE") or metrics.namespace or DEFAULT_METRICS_NAMESPACE
    )
    service = os.getenv("POWERTOOLS_SERVICE_NAME")
    if service:
        metrics.service = service
        logger.append_keys(service=service)
    level = os.getenv("POWERTOOLS_LOG_LEVEL")
    if level:
        logger.setLevel(level.upper())


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        return _handle(event, context)
    finally:
        # A flush with metrics disabled keeps the set (Powertools): cleared here, it neither grows nor
        # prints its 100th value of a metric anyway.
        metrics.clear_metrics()


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context
def _handle(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    runtime = cold_start()
    deadline = runtime.deadline(context)
    records = event.get("Records") or []
    if runtime.configuration is not None:
        try:
            runtime.configuration.check()
        except ConfigurationMismatchError as mismatch:
            # Nothing is written with settings the search does not read by: every message goes back to the
            # queue, and is indexed once the deployment that changed the record has updated this function.
            logger.error("refused the batch: %s", mismatch, extra={"records": len(records)})
            metrics.add_metric(name="ConfigurationMismatches", unit=MetricUnit.Count, value=1)
            metrics.add_metric(name="FailedRecords", unit=MetricUnit.Count, value=len(records))
            return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in records]}
        if runtime.configuration.unread is not None:
            logger.warning("could not read the deployed configuration: %s", runtime.configuration.unread)
    reports = index_batch(
        (Message(record["messageId"], record.get("body", "")) for record in records),
        key_pattern=runtime.config.key_pattern,
        bucket=runtime.config.bucket_name,
        apply=runtime.apply,
        executor=runtime.executor,
        deadline=deadline,
    )
    _report(reports)
    _report_foreign(reports, runtime.config.bucket_name)
    _count_uploads(runtime)
    by_message = {report.message_id: report for report in reports}

    def settle(record: SQSRecord) -> None:
        error = by_message[record.message_id].error
        if error is not None:
            raise error

    response = process_partial_response(
        event=event, record_handler=settle, processor=processor, context=context
    )
    return dict(response)


def _report(reports: list[MessageReport]) -> None:
    counts = dict.fromkeys(Outcome, 0)
    failed = 0
    deferred: Counter[str] = Counter()  # records not started, by message
    for report in reports:
        if report.malformed is not None:
            failed += 1
            logger.error(
                # Reported as a batch item failure, not dropped: SQS delivers it again, and after the
                # queue's maxReceiveCount receives moves it to the dead-letter queue (`redrive` after a fix).
                "Malformed message failed: SQS retries it, then moves it to the dead-letter queue",
                extra={"messageId": report.message_id, "reason": _reason(report.malformed)},
                exc_info=None if is_expected(report.malformed) else report.malformed,
            )
            continue
        for result in report.results:
            event = result.event
            if result.deferred:
                failed += 1
                deferred[report.message_id] += 1
                continue
            if result.outcome is None:
                failed += 1
                logger.error(
                    "Record not written; its message will be retried",
                    extra={
                        "messageId": report.message_id,
                        "objectKey": event.key,
                        "reason": _reason(result.error),
                    },
                    exc_info=None if is_expected(result.error) else result.error,
                )
                continue
            counts[result.outcome] += 1
            lag_ms = result.lag_ms
            if lag_ms is not None:
                metrics.add_metric(name="IndexLagMs", unit=MetricUnit.Milliseconds, value=max(lag_ms, 0.0))
            if result.outcome is Outcome.WRITTEN and event.upload_user is None:
                logger.info(
                    "Indexed without a user",
                    extra={"objectKey": event.key, "bucket": event.bucket, "reason": event.no_user_reason},
                )
    metrics.add_metric(name="IndexedFiles", unit=MetricUnit.Count, value=counts[Outcome.WRITTEN])
    metrics.add_metric(name="DeletedFiles", unit=MetricUnit.Count, value=counts[Outcome.DELETED])
    metrics.add_metric(name="StaleEvents", unit=MetricUnit.Count, value=counts[Outcome.STALE])
    metrics.add_metric(name="FailedRecords", unit=MetricUnit.Count, value=failed)
    metrics.add_metric(name="DeferredRecords", unit=MetricUnit.Count, value=deferred.total())
    if deferred:
        # One line, not one per record: the cause is the clock, the same for all of them.
        logger.warning(
            "The invocation was about to time out: records not started; their messages will be retried",
            extra={"records": deferred.total(), "messages": len(deferred)},
        )
    logger.info(
        "Batch indexed",
        extra={
            "messages": len(reports),
            "indexed": counts[Outcome.WRITTEN],
            "deleted": counts[Outcome.DELETED],
            "stale": counts[Outcome.STALE],
            "failed": failed,
        },
    )


def _count_uploads(runtime: Runtime) -> None:
    """Add what the batch's writes tallied (sampled entries made, and removed by deletes and overwrites) to
    the bucket's statistics (`file_index.rules.upload_statistics`). The entries are written already: a failure
    here costs the planner a few samples, never a message."""
    try:
        tallied = runtime.statistics.drain()
        add_counts(runtime.dynamodb, runtime.config.table_name, runtime.config.bucket_name, tallied)
    except (ClientError, BotoCoreError) as error:
        logger.warning("upload statistics not added", extra={"reason": str(error)})


def _report_foreign(reports: list[MessageReport], indexed_bucket: str) -> None:
    """One warning per foreign bucket in the batch, however many of its events came."""
    by_bucket = Counter(event.bucket for report in reports for event in report.foreign)
    for bucket, count in sorted(by_bucket.items()):
        logger.warning(
            "Events of another bucket refused",
            extra={"bucket": bucket, "events": count, "indexedBucket": indexed_bucket},
        )
    metrics.add_metric(name="ForeignBucketEvents", unit=MetricUnit.Count, value=sum(by_bucket.values()))


def _reason(error: Exception | None) -> str:
    if error is None or is_expected(error):
        return str(error)
    # A bug, not a bad input: name the exception; the log line carries its traceback.
    return f"unexpected {type(error).__name__}: {error}"
