"""From S3 event to index entry: the queue, its dead-letter queue, the bucket's events, the indexer.

The bucket's events reach the queue either as S3 event notifications or through EventBridge (a rule on
the bucket's Object Created / Object Deleted events); the indexer reads both message shapes.
"""

from __future__ import annotations

import jsii
from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk.interfaces.aws_s3 import IBucketRef
from constructs import Construct

from file_index.rules.placement import ShardPlacement
from file_index.store.enrich import to_env as enrich_to_env
from infra.config import INDEXER_TIMEOUT_SECONDS, EventSource
from infra.nag import BASIC_EXECUTION_ROLE, acknowledge
from infra.powertools_function import FunctionBasics, PowertoolsFunction
from infra.sizing import IndexerSizing
from infra.storage import grant_object_lookup

INDEXER_TIMEOUT = Duration.seconds(INDEXER_TIMEOUT_SECONDS)
# AWS's guidance for SQS event sources: at least six times the function timeout, so a message is not
# handed to a second poller while the first invocation (and its retries of throttled batches) still runs;
# plus the batching window, during which received messages already count down their visibility.
VISIBILITY_TIMEOUT_FACTOR = 6
# A message that failed this often is broken, not unlucky (throttling retries succeed well before).
MAX_RECEIVE_COUNT = 5
RETENTION = Duration.days(14)  # SQS's maximum: time to notice and redrive what reached the DLQ
# S3 event messages are a few KB; SQS's classic 256 KiB limit leaves room for any key length (1,024 B).
MAX_MESSAGE_SIZE_BYTES = 262_144
OBJECT_EVENTS = (
    s3.EventType.OBJECT_CREATED,
    s3.EventType.OBJECT_REMOVED,
    # Objects a lifecycle rule expires raise only these events; without them they would stay searchable.
    s3.EventType.LIFECYCLE_EXPIRATION,
)
# What the indexer does to the table: conditional puts of new entries and conditional updates that turn
# an entry into a tombstone. It never reads, deletes or writes in batches.
# BatchGetItem: a removal of name items reads the key's entry back (`file_index.write.names`).
INDEXER_TABLE_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
INDEXER_NAME_TABLE_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:BatchWriteItem")
# The EventBridge events of one object's life that change the index: the reasons (PutObject, CopyObject,
# CompleteMultipartUpload, DeleteObject, Lifecycle Expiration, ...) are in the event's detail.
EVENTBRIDGE_DETAIL_TYPES = ("Object Created", "Object Deleted")
# Tag changes, subscribed to only when the deployment enriches tags (`file_index.store.enrich`).
TAGGING_EVENTS = (s3.EventType.OBJECT_TAGGING_PUT, s3.EventType.OBJECT_TAGGING_DELETE)
EVENTBRIDGE_TAGGING_DETAIL_TYPES = ("Object Tags Added", "Object Tags Deleted")


def queue_visibility_timeout(sizing: IndexerSizing) -> Duration:
    """How long a received event stays invisible: long enough for its batching window and six timeouts."""
    return Duration.seconds(
        INDEXER_TIMEOUT.to_seconds() * VISIBILITY_TIMEOUT_FACTOR + sizing.max_batching_window_seconds
    )


@jsii.implements(s3.IBucketNotificationDestination)
class GuardedQueueDestination:
    """`aws_s3_notifications.SqsDestination`, with the queue policy also pinned to the bucket's account.

    S3 may send to the queue only for this bucket (`aws:SourceArn`) and only on behalf of this stack's
    account (`aws:SourceAccount`): a bucket ARN carries no account, so a bucket of the same name recreated
    in another account after this one is deleted could otherwise publish to the queue.
    """

    def __init__(self, queue: sqs.IQueue) -> None:
        self.queue = queue

    def bind(self, scope: Construct, bucket: IBucketRef) -> s3.BucketNotificationDestinationConfig:
        self.queue.grant_send_messages(
            iam.ServicePrincipal(
                "s3.amazonaws.com",
                conditions={
                    "ArnLike": {"aws:SourceArn": bucket.bucket_ref.bucket_arn},
                    "StringEquals": {"aws:SourceAccount": Stack.of(scope).account},
                },
            )
        )
        if self.queue.encryption_master_key is not None:
            raise ValueError("a KMS-encrypted queue also needs a key grant to S3; this queue uses SSE-SQS")
        return s3.BucketNotificationDestinationConfig(
            arn=self.queue.queue_arn,
            type=s3.BucketNotificationDestinationType.QUEUE,
            # The notification configuration is applied only after the queue policy lets S3 send.
            dependencies=[self.queue],
        )


class Ingest(Construct):
    """The bucket's events reach the queue; the indexer drains it into the table.

    The indexer writes the table and never reads it; of the bucket it only HEADs objects, in the one case
    S3 sends no event for (a versioned object's current version deleted for good).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        basics: FunctionBasics,
        key_pattern: str,
        tombstone_ttl_days: int,
        event_source: EventSource = EventSource.S3,
        placement: ShardPlacement | None = None,
        sizing: IndexerSizing | None = None,
        name_table: dynamodb.ITable | None = None,
        enrich: frozenset[str] = frozenset(),
    ) -> None:
        """`placement`: where the indexer puts entries; `sizing`: its memory and event source; `name_table`:
        the name index it keeps in step (None: none); `enrich`: what it reads from S3 per create
        (`file_index.store.enrich`), and with tags, the tag changes it subscribes to."""
        super().__init__(scope, construct_id)
        tags = "tags" in enrich
        placement = placement or ShardPlacement()
        sizing = sizing or IndexerSizing()
        self.sizing = sizing
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
            visibility_timeout=queue_visibility_timeout(sizing),
            retention_period=RETENTION,
            max_message_size_bytes=MAX_MESSAGE_SIZE_BYTES,
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT
            ),
        )
        self.event_rule: events.Rule | None = None
        if event_source is EventSource.EVENTBRIDGE:
            self.event_rule = self._forward_eventbridge_events(bucket, tags=tags)
        else:
            destination = GuardedQueueDestination(self.queue)
            for event in (*OBJECT_EVENTS, *(TAGGING_EVENTS if tags else ())):
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
                # The indexer refuses events of any other bucket.
                "BUCKET_NAME": bucket.bucket_name,
                "KEY_LAYOUT": key_pattern,
                "TOMBSTONE_TTL_DAYS": str(tombstone_ttl_days),
                **placement.to_env(),
                **({"NAME_TABLE_NAME": name_table.table_name} if name_table is not None else {}),
                **({"ENRICH": enrich_to_env(enrich)} if enrich else {}),
            },
            timeout=INDEXER_TIMEOUT,
            # Memory buys CPU, which bounds how many records one instance indexes per second.
            memory_size=sizing.memory_mb,
            basics=basics,
        ).function
        # Exactly the indexer's calls, on the table itself (not its indexes, which are never written
        # directly): CDK's write grant would add deletes, batch writes and DescribeTable it never uses;
        # BatchGetItem reads a key's entry back after its name items' removal.
        # The sequencer comparison happens inside DynamoDB, as the condition of each write.
        iam.Grant.add_to_principal(
            grantee=self.indexer, actions=list(INDEXER_TABLE_ACTIONS), resource_arns=[table.table_arn]
        )
        if enrich:
            # A HEAD or GetObjectTagging of the event's version (GetObject covers the current one).
            actions = ["s3:GetObjectVersion"]
            if tags:
                actions += ["s3:GetObjectTagging", "s3:GetObjectVersionTagging"]
            iam.Grant.add_to_principal(
                grantee=self.indexer, actions=actions, resource_arns=[bucket.arn_for_objects("*")]
            )
        if name_table is not None:
            # A key's name items put and removed in batches (BatchGetItem: the bucket's term-items flag).
            iam.Grant.add_to_principal(
                grantee=self.indexer,
                actions=list(INDEXER_NAME_TABLE_ACTIONS),
                resource_arns=[name_table.table_arn],
            )
        grant_object_lookup(
            self.indexer,
            bucket,
            reason="when a versioned object's current version is deleted for good, S3 sends no event for "
            "the version that becomes current, so the indexer HEADs the object to index it.",
        )
        self.indexer.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=sizing.batch_size,
                max_batching_window=Duration.seconds(sizing.max_batching_window_seconds),
                max_concurrency=sizing.max_concurrency,
                report_batch_item_failures=True,
            )
        )

    def _forward_eventbridge_events(self, bucket: s3.IBucket, *, tags: bool = False) -> events.Rule:
        """The bucket sends its events to EventBridge; a rule forwards this bucket's to the queue.

        EventBridge delivery is not an S3 notification rule, so it coexists with whatever notifications
        a bucket in use already has. An event EventBridge cannot deliver (after its retries) lands in the
        dead-letter queue as the event itself, and a redrive returns it to the queue like any other.
        """
        # On an owned bucket as on an imported one: CDK's notifications resource sets the bucket's
        # EventBridge flag and leaves the rest of its configuration alone.
        bucket.enable_event_bridge_notification()
        return events.Rule(
            self,
            "ObjectEventsRule",
            description="Forwards the indexed bucket's object created/deleted events to the event queue",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=[*EVENTBRIDGE_DETAIL_TYPES, *(EVENTBRIDGE_TAGGING_DETAIL_TYPES if tags else ())],
                detail={"bucket": {"name": [bucket.bucket_name]}},
            ),
            # SSE-SQS queues accept EventBridge deliveries without a key grant (a KMS key would need one).
            targets=[targets.SqsQueue(self.queue, dead_letter_queue=self.dead_letter_queue)],
        )

    def _acknowledge_notifications_handler(self) -> None:
        """CDK's singleton function that applies the bucket's notification configuration at deploy time."""
        stack = Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("BucketNotificationsHandler"):
                acknowledge(
                    child,
                    f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
                    "CDK's bucket-notifications handler gets AWSLambdaBasicExecutionRole, which allows "
                    "creating and writing any log group of the account, wider than the handler's own. "
                    "Accepted: it is CDK's code, it runs only while a deployment applies the bucket's "
                    "notifications, and its generated name gives no narrower log group ARN to grant.",
                )
