"""From S3 event to index entry: the queue, its dead-letter queue, the bucket's notifications, the indexer."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import LogLevel, RemovalChoice
from infra.nag import BASIC_EXECUTION_ROLE, acknowledge, acknowledge_lambda_basics, arn_reference
from infra.powertools_function import PowertoolsFunction

INDEXER_TIMEOUT = Duration.seconds(30)
# AWS's guidance for SQS event sources: at least six times the function timeout, so a message is not
# handed to a second poller while the first invocation (and its retries of throttled batches) still runs.
QUEUE_VISIBILITY_TIMEOUT = Duration.seconds(INDEXER_TIMEOUT.to_seconds() * 6)
# A message that failed this often is broken, not unlucky (throttling retries succeed well before).
MAX_RECEIVE_COUNT = 5
RETENTION = Duration.days(14)  # SQS's maximum: time to notice and redrive what reached the DLQ
# S3 event messages are a few KB; SQS's classic 256 KiB limit leaves room for any key length (1,024 B).
MAX_MESSAGE_SIZE_BYTES = 262_144
# Up to 50 events per invocation: a burst of uploads costs one invocation per 50 objects instead of 10,
# while a lone upload waits at most the 2 s window before it is searchable. The indexer does one
# conditional write per event, so 50 events fit easily in its timeout. Partial batch responses keep a bad
# message from costing the rest of its batch a retry.
BATCH_SIZE = 50
MAX_BATCHING_WINDOW = Duration.seconds(2)
# Caps the pollers (and so concurrent writers): 10 invocations of 50 events absorb bursts of several
# hundred uploads per second on an on-demand table, and leave the account's concurrency to other work.
MAX_CONCURRENCY = 10
OBJECT_EVENTS = (
    s3.EventType.OBJECT_CREATED,
    s3.EventType.OBJECT_REMOVED,
    # Objects a lifecycle rule expires raise only these events; without them they would stay searchable.
    s3.EventType.LIFECYCLE_EXPIRATION,
)


class Ingest(Construct):
    """The bucket notifies the queue; the indexer drains it into the table. Writes only, never reads."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        layer: lambda_.ILayerVersion,
        key_layout: str,
        tombstone_ttl_days: int,
        log_level: LogLevel,
        removal: RemovalChoice,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
        )
        # SSE-SQS rather than KMS: S3 can publish to it without a key policy, at no per-request KMS cost.
        self.queue = sqs.Queue(
            self,
            "EventQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=QUEUE_VISIBILITY_TIMEOUT,
            retention_period=RETENTION,
            max_message_size_bytes=MAX_MESSAGE_SIZE_BYTES,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT
            ),
        )
        destination = s3n.SqsDestination(self.queue)
        for event in OBJECT_EVENTS:
            bucket.add_event_notification(event, destination)
        self._acknowledge_notifications_handler()

        self.indexer = PowertoolsFunction(
            self,
            "Indexer",
            handler="indexer.handler.lambda_handler",
            description="Indexes S3 object events from the queue into the file metadata table",
            service_name="indexer",
            environment={
                "TABLE_NAME": table.table_name,
                "KEY_LAYOUT": key_layout,
                "TOMBSTONE_TTL_DAYS": str(tombstone_ttl_days),
            },
            timeout=INDEXER_TIMEOUT,
            memory_size=256,
            layer=layer,
            log_level=log_level,
            removal=removal,
        ).function
        # Conditional puts, updates and deletes only: the sequencer comparison happens inside DynamoDB.
        table.grant_write_data(self.indexer)
        acknowledge_lambda_basics(self.indexer)
        acknowledge(
            self.indexer,
            f"AwsSolutions-IAM5[Resource::{arn_reference(table)}/index/*]",
            "CDK's table write grant also names the table's own two GSIs; writes to an index ARN do nothing, "
            "so this gives no access beyond the table itself.",
        )
        self.indexer.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=BATCH_SIZE,
                max_batching_window=MAX_BATCHING_WINDOW,
                max_concurrency=MAX_CONCURRENCY,
                report_batch_item_failures=True,
            )
        )

    def _acknowledge_notifications_handler(self) -> None:
        """CDK's singleton function that applies the bucket's notification configuration at deploy time."""
        stack = Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                acknowledge(
                    child,
                    f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
                    "CDK's bucket-notifications handler runs only during deployment and needs only "
                    "to write its own logs, which is what AWSLambdaBasicExecutionRole allows.",
                )
