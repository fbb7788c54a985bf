"""Alarms a user wants on day one, published to an encrypted SNS topic (optionally mailed to an address).

The topic always exists, so every alarm has an action: subscribe a pager, a chat hook or a mailbox to it
(`alarmEmail` subscribes one address at deploy time).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

PERIOD = Duration.minutes(5)
# An S3 event is indexed within seconds; 15 minutes of backlog means the indexer is failing or starved.
MAX_MESSAGE_AGE = Duration.minutes(15)
# SQS deletes a dead letter when the retention ends; three days before that leave time to fix the cause
# and redrive, over a weekend.
DEAD_LETTER_EXPIRY_WARNING = Duration.days(3)
# "Retry later" answers (the table or the stage throttled): a few are normal back-pressure that clients
# absorb by retrying; this many in each of three periods in a row means too little capacity for the load.
RETRY_LATER_ANSWERS_PER_PERIOD = 10
RETRY_LATER_PERIODS = 3


class Alarms(Construct):
    """One alarm per failure a user would otherwise learn about from a missing search result."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        dead_letter_retention: Duration,
        indexer: lambda_.IFunction,
        api_server_errors: cloudwatch.IMetric,
        api_retry_later_answers: cloudwatch.IMetric,
        backfill: sfn.IStateMachine,
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = self._above(
            "DeadLetters",
            "S3 events reached the dead-letter queue: their files are not indexed",
            dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
            ),
        )
        self.dead_letters_expiring = self._above(
            "DeadLettersExpiring",
            "A dead-lettered S3 event is about to expire unindexed: redrive the dead-letter queue now",
            dead_letter_queue.metric_approximate_age_of_oldest_message(
                period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM
            ),
            threshold=dead_letter_retention.minus(DEAD_LETTER_EXPIRY_WARNING).to_seconds(),
        )
        self.queue_age = self._above(
            "OldestEventAge",
            "S3 events wait in the queue: new files are not searchable yet",
            queue.metric_approximate_age_of_oldest_message(period=PERIOD, statistic=cloudwatch.Stats.MAXIMUM),
            threshold=MAX_MESSAGE_AGE.to_seconds(),
        )
        self.indexer_errors = self._above(
            "IndexerErrors",
            "The indexer failed whole invocations (crash or timeout)",
            indexer.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM),
        )
        self.indexer_throttles = self._above(
            "IndexerThrottles",
            "The indexer was throttled: the account's Lambda concurrency is exhausted",
            indexer.metric_throttles(period=PERIOD, statistic=cloudwatch.Stats.SUM),
        )
        # Counted from the access log, where each answer has its status: API Gateway's 5XXError metric
        # would also count the function's deliberate 503 "busy, retry later", which has its own alarm.
        self.api_server_errors = self._above(
            "ApiServerErrors",
            "The search API answered 5xx other than its deliberate 503 (crash, timeout, integration "
            "error): the API promises 4xx for every bad input",
            api_server_errors,
        )
        self.api_retry_later = self._above(
            "ApiThrottled",
            "The search API keeps answering 'retry later' (503: the table throttled it; 429: the stage's "
            "throttling limits): sustained, callers wait or give up",
            api_retry_later_answers,
            threshold=RETRY_LATER_ANSWERS_PER_PERIOD,
            periods=RETRY_LATER_PERIODS,
        )
        self.backfill_failures = self._above(
            "BackfillFailed",
            "A backfill or reconcile run failed: the index may be incomplete (its state says BUILDING)",
            backfill.metric_failed(period=PERIOD, statistic=cloudwatch.Stats.SUM),
        )
        self.all = (
            self.dead_letters,
            self.dead_letters_expiring,
            self.queue_age,
            self.indexer_errors,
            self.indexer_throttles,
            self.api_server_errors,
            self.api_retry_later,
            self.backfill_failures,
        )

        self.topic = self._notify(alarm_email)

    def _above(
        self,
        construct_id: str,
        description: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float = 0,
        periods: int = 1,
    ) -> cloudwatch.Alarm:
        """An alarm when `periods` periods in a row exceed `threshold`; no data (an idle stack) is fine."""
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def _notify(self, alarm_email: str | None) -> sns.Topic:
        # CloudWatch can publish to an encrypted topic only with a customer-managed key whose policy lets
        # the CloudWatch service use it; the AWS-managed SNS key cannot be shared that way.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            description="Encrypts the S3 File Search alarm topic",
            enable_key_rotation=True,
        )
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey")
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True)
        if alarm_email is not None:
            topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        action = cw_actions.SnsAction(topic)
        for alarm in self.all:
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
        return topic
