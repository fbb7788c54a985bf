"""The backfill and reconcile engine at scale: a Step Functions Standard workflow over the bucket listing.

    StartRun -> Batches (Distributed Map over ListObjectsV2, batched) -> IsReconcile?
        reconcile: Sweep (one loop per table scan segment) -> FinishRun
        backfill:  FinishRun
    any failure after StartRun -> FailRun -> RunFailed

Every state runs a function of `backfill.handler` from the `functions/` asset:

- `start_run({"operation": "backfill" | "reconcile"})` marks the bucket's index BUILDING and returns the
  run, kept at `$.run`: `{"bucket", "operation", "runId", "segments": [{"segment", "totalSegments"}, ...]}`.
- `write_batch({"BatchInput": {"bucket", "operation", "runId"}, "Items": [...]})` writes (backfill) or
  repairs (reconcile) one batch of listed objects; the items are Distributed Map's listing items
  (`Key`, `Etag`, `Size`, `LastModified`, `StorageClass`).
- `sweep_segment({"bucket", "runId", "segment", "totalSegments", "startKey"})` scans one segment of the
  table for entries whose objects are gone, for as long as its time allows, and returns its next input
  with `"done"`: the workflow calls it again with that input until `done` is true.
- `finish_run({"bucket", "runId"})` marks the index READY; `fail_run({"bucket", "runId", "error"})`
  records the error.

Children of the Distributed Map are Express workflows: each is one Lambda call whose writes are all
conditional (so a retried batch changes nothing twice), and Express children cost far less than Standard
ones at a billion objects. Their results go to a stack-owned reports bucket: Step Functions gathers the
results of every child into the Map's output unless a ResultWriter exports them, and at a few thousand
batches that output would exceed the 256 KiB state limit, whatever the Map's ResultPath says.
"""

from __future__ import annotations

import json

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from file_index.rules.placement import ShardPlacement
from file_index.store.unprocessed import UnprocessedItemsError, UnprocessedKeysError
from infra.nag import BASIC_EXECUTION_ROLE, acknowledge, arn_reference
from infra.powertools_function import LOG_RETENTION, FunctionBasics, PowertoolsFunction
from infra.storage import grant_object_lookup, private_bucket_settings

HANDLER_MODULE = "backfill.handler"
# Step Functions refuses a child input above 256 KiB; the batch is cut below that, with room for the
# BatchInput and the envelope, whatever the item count allows.
MAX_BATCH_BYTES = 200 * 1024
# A batch of a few thousand conditional writes takes seconds; an Express child may run five minutes,
# retries included.
WRITE_BATCH_TIMEOUT = Duration.minutes(2)
# The sweep returns before its timeout with the key to resume from; a longer call means fewer loops in
# the workflow's history (a Standard execution keeps at most 25,000 events).
SWEEP_TIMEOUT = Duration.minutes(10)
RUN_STATE_TIMEOUT = Duration.seconds(30)
# Lambda throttling and transient service errors: retried with backoff, so a busy account slows a
# backfill down instead of failing it.
LAMBDA_TRANSIENT_ERRORS = (
    "Lambda.TooManyRequestsException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.ClientExecutionTimeoutException",
)
# A batch call DynamoDB kept leaving unprocessed (throttled) for all its rounds
# (`file_index.store.unprocessed`): retried with the same backoff, so a throttled table slows a run down
# instead of failing it.
THROTTLED_BATCH_ERRORS = (UnprocessedKeysError.__name__, UnprocessedItemsError.__name__)
# Map Run reports are for diagnosing a failed run; a month is enough to look.
REPORT_RETENTION = Duration.days(30)
REPORT_PREFIX = "map-runs"
BACKFILL_INPUT = {"operation": "backfill"}
RECONCILE_INPUT = {"operation": "reconcile"}
# What each function does to the table, nothing more (the state record is an item of the table).
_RUN_STATE_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
_START_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
_WRITE_BATCH_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
# BatchGetItem: a repair that removes an entry's name items reads the entry back (`file_index.write.names`).
_SWEEP_ACTIONS = (
    "dynamodb:Scan",
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)


def handler(name: str) -> str:
    """The handler string of function `name` of the backfill package."""
    return f"{HANDLER_MODULE}.{name}"


class Backfill(Construct):
    """Builds (backfill) or verifies and repairs (reconcile) the index of `bucket` from its listing."""

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
        concurrency: int,
        batch_size: int,
        segments: int,
        placement: ShardPlacement | None = None,
        name_table: dynamodb.ITable | None = None,
    ) -> None:
        """`placement`: where the batch writers and repairs put entries, as the indexer does; `name_table`:
        the name index they keep in step (None: none)."""
        super().__init__(scope, construct_id)
        placement = placement or ShardPlacement()
        self._name_table = name_table
        self._bucket = bucket
        self._basics = basics
        self._environment = {
            "TABLE_NAME": table.table_name,
            "BUCKET_NAME": bucket.bucket_name,
            "KEY_LAYOUT": key_pattern,
            "TOMBSTONE_TTL_DAYS": str(tombstone_ttl_days),
            "SCAN_SEGMENTS": str(segments),
            **placement.to_env(),
            **({"NAME_TABLE_NAME": name_table.table_name} if name_table is not None else {}),
        }
        self.functions: dict[str, lambda_.Function] = {}

        start_run = self._function("start_run", "Starts a backfill or reconcile run of the index", table)
        write_batch = self._function(
            "write_batch",
            "Writes or repairs the index entries of one batch of listed objects",
            table,
            actions=_WRITE_BATCH_ACTIONS,
            timeout=WRITE_BATCH_TIMEOUT,
            memory_size=512,
            looks_up_objects=True,
        )
        sweep_segment = self._function(
            "sweep_segment",
            "Removes index entries of objects that no longer exist, one table scan segment at a time",
            table,
            actions=_SWEEP_ACTIONS,
            timeout=SWEEP_TIMEOUT,
            looks_up_objects=True,
        )
        finish_run = self._function("finish_run", "Marks the index READY after a completed run", table)
        fail_run = self._function("fail_run", "Records the error of a failed run", table)

        self.reports_bucket = s3.Bucket(
            self,
            "RunReports",
            lifecycle_rules=[s3.LifecycleRule(expiration=REPORT_RETENTION)],
            **private_bucket_settings(basics.removal),
        )
        acknowledge(
            self.reports_bucket,
            "AwsSolutions-S1",
            "Holds only the reports Step Functions writes about its own Map Runs (results of the batch "
            "workflows), kept a month for diagnosing a failed run; no user data and no downloads, so "
            "server access logs would record nothing but the state machine's own writes.",
        )

        definition = self._definition(
            start_run=start_run,
            write_batch=write_batch,
            sweep_segment=sweep_segment,
            finish_run=finish_run,
            fail_run=fail_run,
            concurrency=concurrency,
            batch_size=batch_size,
            segments=segments,
        )
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            # Step Functions delivers logs as a vended log source: under this prefix CloudWatch Logs needs
            # no resource policy entry per log group (that policy is capped at 5,120 characters).
            log_group_name=f"/aws/vendedlogs/states/{Stack.of(self).stack_name}-backfill",
            retention=LOG_RETENTION,
            removal_policy=basics.removal.policy,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment="Builds or repairs the file index from the bucket listing",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            state_machine_type=sfn.StateMachineType.STANDARD,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL),
            tracing_enabled=True,
        )
        self._acknowledge_state_machine_findings()

    def start_once_on_create(self, *, after: list[IConstruct]) -> cr.AwsCustomResource:
        """A backfill started by the deployment that creates the stack, and never again.

        `after`: what must be in place first, so that every object the listing misses (uploaded or
        deleted while it runs) reaches the index through its live event.
        """
        start = cr.AwsCustomResource(
            self,
            "InitialBackfill",
            # on_create only: an update or a delete of the stack starts nothing.
            on_create=cr.AwsSdkCall(
                service="SFN",
                action="startExecution",
                parameters={
                    "stateMachineArn": self.state_machine.state_machine_arn,
                    "input": json.dumps(BACKFILL_INPUT),
                },
                physical_resource_id=cr.PhysicalResourceId.from_response("executionArn"),
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [
                    iam.PolicyStatement(
                        actions=["states:StartExecution"],
                        resources=[self.state_machine.state_machine_arn],
                    )
                ]
            ),
            install_latest_aws_sdk=False,
        )
        for construct in after:
            start.node.add_dependency(construct)
        self._acknowledge_custom_resource_provider()
        return start

    def schedule_reconcile(self, schedule: str) -> events.Rule:
        """An EventBridge rule that starts a reconcile run on `schedule` (a rate or cron expression)."""
        return events.Rule(
            self,
            "ReconcileSchedule",
            description="Starts a reconcile of the file index with its bucket",
            schedule=events.Schedule.expression(schedule),
            targets=[
                targets.SfnStateMachine(
                    self.state_machine, input=events.RuleTargetInput.from_object(RECONCILE_INPUT)
                )
            ],
        )

    # --- functions ----------------------------------------------------------------------------------

    def _function(
        self,
        name: str,
        description: str,
        table: dynamodb.ITable,
        *,
        actions: tuple[str, ...] | None = None,
        timeout: Duration = RUN_STATE_TIMEOUT,
        memory_size: int = 256,
        looks_up_objects: bool = False,
    ) -> lambda_.Function:
        construct_id = "".join(part.title() for part in name.split("_")) + "Function"
        if actions is None:
            actions = _START_ACTIONS if name == "start_run" else _RUN_STATE_ACTIONS
        function = PowertoolsFunction(
            self,
            construct_id,
            handler=handler(name),
            description=description,
            service_name="backfill",
            environment=self._environment,
            timeout=timeout,
            memory_size=memory_size,
            basics=self._basics,
        ).function
        iam.Grant.add_to_principal(grantee=function, actions=list(actions), resource_arns=[table.table_arn])
        if looks_up_objects and self._name_table is not None:
            # Every entry a batch writes or a repair removes takes its name items along, in batches
            # (BatchGetItem: the bucket's term-items flag).
            iam.Grant.add_to_principal(
                grantee=function,
                actions=["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"],
                resource_arns=[self._name_table.table_arn],
            )
        if looks_up_objects:
            grant_object_lookup(
                function,
                self._bucket,
                reason="a listed object's version id, and whether an indexed object still exists, are known "
                "only from a HEAD of that object.",
            )
        self.functions[name] = function
        return function

    # --- definition ---------------------------------------------------------------------------------

    def _definition(
        self,
        *,
        start_run: lambda_.IFunction,
        write_batch: lambda_.IFunction,
        sweep_segment: lambda_.IFunction,
        finish_run: lambda_.IFunction,
        fail_run: lambda_.IFunction,
        concurrency: int,
        batch_size: int,
        segments: int,
    ) -> sfn.IChainable:
        run = "$.run"
        # The run a state after StartRun works on: every function but start_run is called with it.
        this_run = {
            "bucket": sfn.JsonPath.string_at(f"{run}.bucket"),
            "runId": sfn.JsonPath.string_at(f"{run}.runId"),
        }
        start = tasks.LambdaInvoke(
            self,
            "StartRun",
            lambda_function=start_run,
            # The execution input, `{"operation": ...}`; a bad operation fails the run here, before
            # anything is marked BUILDING, so there is nothing for FailRun to record.
            payload_response_only=True,
            result_path=run,
        )

        failed = tasks.LambdaInvoke(
            self,
            "FailRun",
            lambda_function=fail_run,
            payload=sfn.TaskInput.from_object({**this_run, "error": sfn.JsonPath.object_at("$.error")}),
            payload_response_only=True,
            result_path=sfn.JsonPath.DISCARD,
        ).next(sfn.Fail(self, "RunFailed", error_path="$.error.Error", cause_path="$.error.Cause"))

        write = tasks.LambdaInvoke(
            self,
            "WriteBatch",
            lambda_function=write_batch,
            # The whole child input: {"BatchInput": {...}, "Items": [...]}.
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        self._retry_transient(write)
        batches = sfn.DistributedMap(
            self,
            "Batches",
            item_reader=sfn.S3ObjectsItemReader(bucket=self._bucket),
            item_batcher=sfn.ItemBatcher(
                max_items_per_batch=batch_size,
                max_input_bytes_per_batch=MAX_BATCH_BYTES,
                # CDK copies BatchInput as given (unlike ItemSelector, it turns no JsonPath into a
                # `.$` key), so the paths are spelled as Step Functions reads them.
                batch_input={
                    "bucket.$": f"{run}.bucket",
                    "operation.$": f"{run}.operation",
                    "runId.$": f"{run}.runId",
                },
            ),
            # Bounds the batch writers running at once, so a backfill never starves live indexing of
            # table capacity or of the account's Lambda concurrency.
            max_concurrency=concurrency,
            map_execution_type=sfn.StateMachineType.EXPRESS,
            # One failed batch fails the run: the index is READY only if every listed object was written.
            tolerated_failure_percentage=0,
            result_writer_v2=sfn.ResultWriterV2(bucket=self.reports_bucket, prefix=REPORT_PREFIX),
            result_path=sfn.JsonPath.DISCARD,
        )
        batches.item_processor(write)
        batches.add_catch(failed, result_path="$.error")

        sweep_call = tasks.LambdaInvoke(
            self,
            "SweepSegment",
            lambda_function=sweep_segment,
            # The function returns its next input, with `done`.
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        self._retry_transient(sweep_call)
        segment_done = (
            sfn.Choice(self, "SegmentDone")
            .when(sfn.Condition.boolean_equals("$.done", True), sfn.Succeed(self, "SegmentSwept"))
            .otherwise(sweep_call)
        )
        sweep = sfn.Map(
            self,
            "Sweep",
            items_path=f"{run}.segments",
            item_selector={
                **this_run,
                # Each of StartRun's segments is {"segment": i, "totalSegments": N}.
                "segment": sfn.JsonPath.number_at("$$.Map.Item.Value.segment"),
                "totalSegments": sfn.JsonPath.number_at("$$.Map.Item.Value.totalSegments"),
                # A JSON null: CDK drops a None value from the selector, the intrinsic yields null.
                "startKey.$": "States.StringToJson('null')",
            },
            max_concurrency=segments,
            result_path=sfn.JsonPath.DISCARD,
        )
        sweep.item_processor(sweep_call.next(segment_done))
        sweep.add_catch(failed, result_path="$.error")

        finish = tasks.LambdaInvoke(
            self,
            "FinishRun",
            lambda_function=finish_run,
            payload=sfn.TaskInput.from_object(this_run),
            payload_response_only=True,
            result_path="$.result",
        )
        finish.add_catch(failed, result_path="$.error")

        is_reconcile = (
            sfn.Choice(self, "IsReconcile")
            .when(sfn.Condition.string_equals(f"{run}.operation", "reconcile"), sweep.next(finish))
            .otherwise(finish)
        )
        return start.next(batches).next(is_reconcile)

    @staticmethod
    def _retry_transient(task: tasks.LambdaInvoke) -> None:
        task.add_retry(
            errors=[*LAMBDA_TRANSIENT_ERRORS, *THROTTLED_BATCH_ERRORS],
            interval=Duration.seconds(2),
            max_attempts=6,
            backoff_rate=2,
            max_delay=Duration.seconds(60),
            jitter_strategy=sfn.JitterType.FULL,
        )

    # --- cdk-nag ------------------------------------------------------------------------------------

    def _acknowledge_state_machine_findings(self) -> None:
        role = self.state_machine.role
        for function in self.functions.values():
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{arn_reference(function)}:*]",
                "lambda:InvokeFunction on this one function and its versions and aliases (CDK's grant for "
                "a Lambda task adds the qualified ARN with ':*'); no other function.",
            )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "Only the CloudWatch Logs delivery actions (logs:CreateLogDelivery, PutResourcePolicy, ...) "
            "and X-Ray's PutTraceSegments/PutTelemetryRecords/GetSampling*: neither service supports "
            "resource-level permissions for them, so Step Functions logging and tracing require '*'.",
        )
        # CDK's policy for a Distributed Map: the parent execution starts, watches and stops (or redrives)
        # its own child executions, whose ARNs exist only at run time.
        name = (
            f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{self._logical_id(self.state_machine)}"}}]}}]}}'
        )
        executions = f"arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{name}"
        for pattern, actions in ((":*", "DescribeExecution/StopExecution"), ("/*:*", "RedriveExecution")):
            acknowledge(
                self.state_machine,
                f"AwsSolutions-IAM5[Resource::{executions}{pattern}]",
                f"states:{actions} on the executions of this state machine only (the Distributed Map's "
                "child executions, named by Step Functions at run time), as CDK grants for a Map Run.",
            )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::<{self._logical_id(self.reports_bucket)}>/*]",
            "The Distributed Map's ResultWriter writes its Map Run reports as objects of the stack's own "
            "reports bucket; the wildcard covers that bucket's objects only.",
        )

    @staticmethod
    def _logical_id(construct: IConstruct) -> str:
        default_child = construct.node.default_child
        if not isinstance(default_child, CfnElement):
            raise TypeError(f"{construct.node.path} has no CloudFormation resource")
        return Stack.of(construct).get_logical_id(default_child)

    def _acknowledge_custom_resource_provider(self) -> None:
        """CDK's singleton function behind every AwsCustomResource of the stack."""
        stack = Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("AWS679f53fac002430cb0da5b7982bd2287"):
                acknowledge(
                    child,
                    f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
                    "CDK's AwsCustomResource handler gets AWSLambdaBasicExecutionRole, which allows "
                    "creating and writing any log group of the account, wider than the handler's own. "
                    "Accepted: it is CDK's code, it runs only while a deployment creates the stack (to "
                    "start the first backfill once), and its generated name gives no narrower ARN.",
                )
