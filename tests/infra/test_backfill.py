"""The backfill/reconcile state machine, existing buckets, EventBridge delivery and the reconcile schedule.

The state machine cannot run on an emulator (moto refuses an ItemBatcher), so its definition is checked
state by state in the synthesized template, with every CloudFormation reference replaced by a readable
placeholder: `<LogicalId>` for a Ref, `<LogicalId.Arn>` for a GetAtt.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra import backfill
from tests.infra.conftest import EXISTING_BUCKET, Synth
from tests.infra.test_stack import (
    BACKFILL_HANDLERS,
    INDEXER_HANDLER,
    SEARCH_HANDLER,
    actions,
    actions_of,
    function,
    get_att,
    object_lookup_statements,
    role_statements,
)

pytestmark = pytest.mark.xdist_group("infra")

STEP_FUNCTIONS_ITEM_LIMIT = 256 * 1024
# Lambda's own transient errors, and the functions' batch calls DynamoDB kept throttling.
TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.TooManyRequestsException",
    "Lambda.ServiceException",
    "UnprocessedKeysError",
    "UnprocessedItemsError",
}


def placeholder(value: Any) -> str:
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return f"<{logical_id}.{attribute}>"
    raise AssertionError(f"unexpected reference in the definition: {value}")


def state_machine(synth: Synth) -> tuple[str, dict[str, Any]]:
    (state_machine_id, resource), *others = synth.resources("AWS::StepFunctions::StateMachine").items()
    assert not others
    return state_machine_id, resource["Properties"]


def definition(synth: Synth) -> dict[str, Any]:
    """The definition as Step Functions reads it, references replaced by placeholders."""
    _, props = state_machine(synth)
    body = props["DefinitionString"]
    text = "".join(placeholder(part) for part in body["Fn::Join"][1]) if isinstance(body, dict) else body
    return dict(json.loads(text))


def function_arn(synth: Synth, handler: str) -> str:
    logical_id, _ = function(synth, handler)
    return f"<{logical_id}.Arn>"


def bucket_reference(synth: Synth) -> str:
    """How the definition names the indexed bucket: a Ref when the stack owns it, else its name."""
    if synth.stack.storage.imports_bucket:
        return EXISTING_BUCKET
    return f"<{synth.logical_id(synth.stack.storage.bucket)}>"


def bucket_name(synth: Synth) -> Any:
    """The indexed bucket's name in the template: a literal when imported, else a Ref to the bucket."""
    if synth.stack.storage.imports_bucket:
        return EXISTING_BUCKET
    return {"Ref": synth.logical_id(synth.stack.storage.bucket)}


# --- definition ---------------------------------------------------------------------------------------


@pytest.fixture(params=["default", "imported"])
def synth(request: pytest.FixtureRequest) -> Synth:
    return request.getfixturevalue(f"{request.param}_synth")


def test_is_a_traced_standard_workflow_logging_everything_to_its_own_log_group(synth: Synth) -> None:
    _, props = state_machine(synth)
    log_group_id = synth.logical_id(synth.stack.backfill.log_group)
    log_group = synth.template_json["Resources"][log_group_id]

    assert props["StateMachineType"] == "STANDARD"
    assert props["TracingConfiguration"] == {"Enabled": True}
    (destination,) = props["LoggingConfiguration"]["Destinations"]
    assert destination == {"CloudWatchLogsLogGroup": {"LogGroupArn": get_att(log_group_id)}}
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    assert log_group["Properties"]["RetentionInDays"] == 30
    assert log_group["Properties"]["LogGroupName"].startswith("/aws/vendedlogs/states/")


def test_starts_the_run_then_lists_the_bucket_in_batches(synth: Synth) -> None:
    states = definition(synth)["States"]
    config = synth.stack.config

    assert definition(synth)["StartAt"] == "StartRun"
    start = states["StartRun"]
    assert start["Resource"] == function_arn(synth, "backfill.handler.start_run")
    # The execution input, {"operation": ...}, is the function's input; the run lands at $.run.
    assert "Parameters" not in start
    assert start["ResultPath"] == "$.run"
    assert start["Next"] == "Batches"
    # Nothing is marked BUILDING before StartRun succeeds: there is no run for FailRun to record.
    assert "Catch" not in start

    batches = states["Batches"]
    assert batches["Type"] == "Map"
    assert batches["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"}
    assert batches["ItemReader"] == {
        "Resource": "arn:<AWS::Partition>:states:::s3:listObjectsV2",
        "Parameters": {"Bucket": bucket_reference(synth)},
    }
    assert batches["ItemBatcher"] == {
        "MaxItemsPerBatch": config.backfill_batch_size,
        "MaxInputBytesPerBatch": backfill.MAX_BATCH_BYTES,
        "BatchInput": {
            "bucket.$": "$.run.bucket",
            "operation.$": "$.run.operation",
            "runId.$": "$.run.runId",
        },
    }
    assert backfill.MAX_BATCH_BYTES < STEP_FUNCTIONS_ITEM_LIMIT
    assert batches["MaxConcurrency"] == config.backfill_concurrency
    # One failed batch fails the run (0 is Step Functions' default when the field is absent).
    assert batches.get("ToleratedFailurePercentage", 0) == 0
    assert "ToleratedFailureCount" not in batches
    assert batches["ResultPath"] is None
    assert batches["Next"] == "IsReconcile"


def test_context_sets_batch_size_and_concurrency(default_synth: Synth, imported_synth: Synth) -> None:
    default_batches = definition(default_synth)["States"]["Batches"]
    imported_batches = definition(imported_synth)["States"]["Batches"]

    assert (default_batches["ItemBatcher"]["MaxItemsPerBatch"], default_batches["MaxConcurrency"]) == (
        500,
        10,
    )
    assert (imported_batches["ItemBatcher"]["MaxItemsPerBatch"], imported_batches["MaxConcurrency"]) == (
        200,
        25,
    )


def test_child_results_go_to_the_stack_owned_reports_bucket(synth: Synth) -> None:
    """Gathered into the Map's output instead, thousands of batch results exceed the 256 KiB state limit."""
    batches = definition(synth)["States"]["Batches"]
    reports_id = synth.logical_id(synth.stack.backfill.reports_bucket)
    reports = synth.template_json["Resources"][reports_id]["Properties"]

    assert batches["ResultWriter"] == {
        "Resource": "arn:<AWS::Partition>:states:::s3:putObject",
        "Parameters": {"Bucket": f"<{reports_id}>", "Prefix": backfill.REPORT_PREFIX},
    }
    assert reports["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    assert reports["LifecycleConfiguration"]["Rules"] == [{"ExpirationInDays": 30, "Status": "Enabled"}]
    assert reports["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]


def test_each_batch_is_one_write_batch_call_retried_when_lambda_throttles(synth: Synth) -> None:
    processor = definition(synth)["States"]["Batches"]["ItemProcessor"]

    assert processor["StartAt"] == "WriteBatch"
    (write,) = processor["States"].values()
    assert write["Resource"] == function_arn(synth, "backfill.handler.write_batch")
    # The whole child input, {"BatchInput": {...}, "Items": [...]}, is the payload.
    assert "Parameters" not in write
    assert "InputPath" not in write
    assert write["End"] is True
    (retry,) = write["Retry"]
    assert set(retry["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS
    assert retry["MaxAttempts"] >= 3
    assert retry["BackoffRate"] >= 2


def test_a_reconcile_also_sweeps_every_scan_segment_until_done(synth: Synth) -> None:
    states = definition(synth)["States"]
    segments = synth.stack.config.reconcile_segments

    assert states["IsReconcile"] == {
        "Type": "Choice",
        "Choices": [{"Variable": "$.run.operation", "StringEquals": "reconcile", "Next": "Sweep"}],
        "Default": "FinishRun",
    }
    sweep = states["Sweep"]
    assert sweep["Type"] == "Map"
    assert sweep["ItemProcessor"]["ProcessorConfig"] == {"Mode": "INLINE"}
    assert sweep["ItemsPath"] == "$.run.segments"
    assert sweep["ItemSelector"] == {
        "bucket.$": "$.run.bucket",
        "runId.$": "$.run.runId",
        # StartRun's segments are {"segment": i, "totalSegments": N}.
        "segment.$": "$$.Map.Item.Value.segment",
        "totalSegments.$": "$$.Map.Item.Value.totalSegments",
        # A JSON null for the first call of each segment.
        "startKey.$": "States.StringToJson('null')",
    }
    assert sweep["MaxConcurrency"] == segments
    assert sweep["ResultPath"] is None
    assert sweep["Next"] == "FinishRun"

    loop = sweep["ItemProcessor"]
    assert loop["StartAt"] == "SweepSegment"
    call = loop["States"]["SweepSegment"]
    assert call["Resource"] == function_arn(synth, "backfill.handler.sweep_segment")
    # Its output is its next input: called again with it until it says done.
    assert "ResultPath" not in call
    assert call["Next"] == "SegmentDone"
    assert set(call["Retry"][0]["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS
    assert loop["States"]["SegmentDone"] == {
        "Type": "Choice",
        "Choices": [{"Variable": "$.done", "BooleanEquals": True, "Next": "SegmentSwept"}],
        "Default": "SweepSegment",
    }
    assert loop["States"]["SegmentSwept"] == {"Type": "Succeed"}


def test_segments_come_from_context(default_synth: Synth, imported_synth: Synth) -> None:
    for synth, segments in ((default_synth, 8), (imported_synth, 4)):
        # StartRun makes one segment per SCAN_SEGMENTS; the Map sweeps them all at once.
        assert definition(synth)["States"]["Sweep"]["MaxConcurrency"] == segments
        for handler in BACKFILL_HANDLERS:
            _, props = function(synth, handler)
            assert props["Environment"]["Variables"]["SCAN_SEGMENTS"] == str(segments)


def test_finishes_the_run_or_records_its_failure(synth: Synth) -> None:
    states = definition(synth)["States"]

    finish = states["FinishRun"]
    assert finish["Resource"] == function_arn(synth, "backfill.handler.finish_run")
    assert finish["Parameters"] == {"bucket.$": "$.run.bucket", "runId.$": "$.run.runId"}
    assert finish["End"] is True
    for name in ("Batches", "Sweep", "FinishRun"):
        assert states[name]["Catch"] == [
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "FailRun"}
        ]

    fail = states["FailRun"]
    assert fail["Resource"] == function_arn(synth, "backfill.handler.fail_run")
    assert fail["Parameters"] == {"bucket.$": "$.run.bucket", "runId.$": "$.run.runId", "error.$": "$.error"}
    assert fail["ResultPath"] is None
    assert fail["Next"] == "RunFailed"
    # The execution still fails, with the error that stopped it.
    assert states["RunFailed"] == {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}


def test_every_task_runs_a_backfill_function(synth: Synth) -> None:
    states = definition(synth)["States"]
    tasks = {
        "StartRun": states["StartRun"],
        "WriteBatch": states["Batches"]["ItemProcessor"]["States"]["WriteBatch"],
        "SweepSegment": states["Sweep"]["ItemProcessor"]["States"]["SweepSegment"],
        "FinishRun": states["FinishRun"],
        "FailRun": states["FailRun"],
    }

    assert {name: task["Resource"] for name, task in tasks.items()} == {
        "StartRun": function_arn(synth, "backfill.handler.start_run"),
        "WriteBatch": function_arn(synth, "backfill.handler.write_batch"),
        "SweepSegment": function_arn(synth, "backfill.handler.sweep_segment"),
        "FinishRun": function_arn(synth, "backfill.handler.finish_run"),
        "FailRun": function_arn(synth, "backfill.handler.fail_run"),
    }


# --- functions and permissions ------------------------------------------------------------------------


@pytest.mark.parametrize("handler", BACKFILL_HANDLERS)
def test_backfill_functions_get_the_shared_environment(synth: Synth, handler: str) -> None:
    _, props = function(synth, handler)
    config = synth.stack.config

    assert props["Environment"]["Variables"] == {
        "TABLE_NAME": {"Ref": synth.logical_id(synth.stack.storage.table)},
        "BUCKET_NAME": bucket_name(synth),
        "KEY_LAYOUT": config.key_pattern,
        "TOMBSTONE_TTL_DAYS": str(config.tombstone_ttl_days),
        "SCAN_SEGMENTS": str(config.reconcile_segments),
        # The batch writers and repairs place entries as the indexer does, and keep the name index.
        **config.placement.to_env(),
        "NAME_TABLE_NAME": {"Ref": synth.logical_id(synth.stack.storage.name_table)},
        "POWERTOOLS_SERVICE_NAME": "backfill",
        "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


@pytest.mark.parametrize(
    ("handler", "table_actions", "looks_up_objects"),
    [
        ("backfill.handler.start_run", {"GetItem", "PutItem", "UpdateItem"}, False),
        ("backfill.handler.write_batch", {"BatchGetItem", "GetItem", "PutItem", "UpdateItem"}, True),
        (
            "backfill.handler.sweep_segment",
            {"Scan", "BatchGetItem", "GetItem", "PutItem", "UpdateItem"},
            True,
        ),
        ("backfill.handler.finish_run", {"GetItem", "UpdateItem"}, False),
        ("backfill.handler.fail_run", {"GetItem", "UpdateItem"}, False),
    ],
)
def test_backfill_functions_may_do_exactly_their_calls(
    default_synth: Synth, handler: str, table_actions: set[str], looks_up_objects: bool
) -> None:
    statements = role_statements(default_synth, handler)
    table_id = default_synth.logical_id(default_synth.stack.storage.table)
    bucket_id = default_synth.logical_id(default_synth.stack.storage.bucket)

    name_table_id = default_synth.logical_id(default_synth.stack.storage.name_table)
    dynamodb_statements = [s for s in statements if actions(s)[0].startswith("dynamodb:")]
    table_statement = dynamodb_statements[0]
    assert set(actions(table_statement)) == {f"dynamodb:{action}" for action in table_actions}
    # The table only: never its indexes. No deletes, no batch writes.
    assert table_statement["Resource"] == get_att(table_id)
    # A function that writes entries keeps their name items: batch puts and removals, nothing else.
    assert dynamodb_statements[1:] == (
        [
            {
                "Action": ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"],
                "Effect": "Allow",
                "Resource": get_att(name_table_id),
            }
        ]
        if looks_up_objects
        else []
    )
    s3_statements = [s for s in statements if actions(s)[0].startswith("s3:")]
    assert s3_statements == (object_lookup_statements(bucket_id) if looks_up_objects else [])
    assert not actions_of(statements, "sqs")
    assert not actions_of(statements, "states")


def test_state_machine_invokes_only_its_functions_and_lists_only_the_bucket(synth: Synth) -> None:
    _, props = state_machine(synth)
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    statements = [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    function_ids = {function(synth, handler)[0] for handler in BACKFILL_HANDLERS}

    (invoke,) = [s for s in statements if actions(s) == ["lambda:InvokeFunction"]]
    invoked = {
        resource["Fn::GetAtt"][0] if "Fn::GetAtt" in resource else resource["Fn::Join"][1][0]["Fn::GetAtt"][0]
        for resource in invoke["Resource"]
    }
    assert invoked == function_ids
    assert actions_of(statements, "dynamodb") == set()
    (listing,) = [s for s in statements if actions(s) == ["s3:ListBucket"]]
    if synth.stack.storage.imports_bucket:
        assert listing["Resource"] == {
            "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::{EXISTING_BUCKET}"]]
        }
    else:
        assert listing["Resource"] == get_att(synth.logical_id(synth.stack.storage.bucket))
    # Writes only to its reports bucket, never to the indexed bucket.
    reports_id = synth.logical_id(synth.stack.backfill.reports_bucket)
    for statement in statements:
        if "s3:PutObject" in actions(statement):
            assert statement["Resource"] == {
                "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::", {"Ref": reports_id}, "/*"]]
            }


def test_output_names_the_state_machine(synth: Synth) -> None:
    state_machine_id, _ = state_machine(synth)

    assert synth.template_json["Outputs"]["BackfillStateMachineArn"]["Value"] == {"Ref": state_machine_id}


# --- existing buckets ---------------------------------------------------------------------------------


def test_an_existing_bucket_is_neither_created_nor_deleted(existing_bucket_synth: Synth) -> None:
    resources = existing_bucket_synth.template_json["Resources"]
    buckets = existing_bucket_synth.resources("AWS::S3::Bucket")

    # Only the stack's own reports bucket and the page's: no upload bucket, no access-log bucket.
    assert sorted(buckets) == sorted(
        [
            existing_bucket_synth.logical_id(existing_bucket_synth.stack.backfill.reports_bucket),
            existing_bucket_synth.logical_id(existing_bucket_synth.stack.web_site.bucket),
        ]
    )
    assert existing_bucket_synth.stack.storage.access_log_bucket is None
    # No removal policy, no emptying on deletion, no bucket policy: nothing of it belongs to the stack,
    # even when the stack's own data is destroyed with it (imported_s3 is a removalPolicy=destroy stack).
    for resource in existing_bucket_synth.resources("Custom::S3AutoDeleteObjects").values():
        assert resource["Properties"]["BucketName"] != EXISTING_BUCKET
    for policy in existing_bucket_synth.resources("AWS::S3::BucketPolicy").values():
        assert policy["Properties"]["Bucket"] != EXISTING_BUCKET
    assert all(EXISTING_BUCKET not in json.dumps(r.get("DeletionPolicy", "")) for r in resources.values())
    assert existing_bucket_synth.template_json["Outputs"]["BucketName"]["Value"] == EXISTING_BUCKET


def test_an_existing_bucket_is_indexed_from_the_first_deployment(existing_bucket_synth: Synth) -> None:
    _, search = function(existing_bucket_synth, SEARCH_HANDLER)
    _, indexer = function(existing_bucket_synth, INDEXER_HANDLER)

    # No state record yet means "not built": answers may be partial until the first backfill completes.
    assert search["Environment"]["Variables"]["INDEX_INITIAL_STATE"] == "BUILDING"
    assert search["Environment"]["Variables"]["BUCKET_NAME"] == EXISTING_BUCKET
    assert indexer["Environment"]["Variables"]["BUCKET_NAME"] == EXISTING_BUCKET


def test_the_indexer_heads_objects_of_an_existing_bucket_only(existing_bucket_synth: Synth) -> None:
    statements = role_statements(existing_bucket_synth, INDEXER_HANDLER)
    partition = {"Ref": "AWS::Partition"}

    assert [s for s in statements if actions(s)[0].startswith("s3:")] == [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", ["arn:", partition, f":s3:::{EXISTING_BUCKET}/*"]]},
        },
        {
            "Action": "s3:ListBucket",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", ["arn:", partition, f":s3:::{EXISTING_BUCKET}"]]},
        },
    ]


def test_a_deployment_on_an_existing_bucket_starts_one_backfill(existing_bucket_synth: Synth) -> None:
    (resource, *others) = existing_bucket_synth.resources("Custom::AWS").values()
    assert not others
    props = resource["Properties"]
    state_machine_id, _ = state_machine(existing_bucket_synth)

    create = json.loads("".join(placeholder(part) for part in props["Create"]["Fn::Join"][1]))
    assert create["service"] == "SFN"
    assert create["action"] == "startExecution"
    assert create["parameters"]["stateMachineArn"] == f"<{state_machine_id}>"
    assert json.loads(create["parameters"]["input"]) == {"operation": "backfill"}
    # Once: on create only; an update or a delete of the stack starts nothing.
    assert "Update" not in props
    assert "Delete" not in props
    # Its handler may start this state machine and nothing else.
    (policy,) = [
        p
        for p in existing_bucket_synth.resources("AWS::IAM::Policy").values()
        if p["Properties"]["PolicyName"].startswith("BackfillInitialBackfill")
    ]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": state_machine_id}}
    ]
    # Live events flow before the listing starts: what changes during the run is not missed.
    depends_on = set(resource["DependsOn"])
    notifications = set(existing_bucket_synth.resources("Custom::S3BucketNotifications"))
    mappings = set(existing_bucket_synth.resources("AWS::Lambda::EventSourceMapping"))
    assert notifications
    assert notifications <= depends_on
    assert mappings
    assert mappings <= depends_on
    rule = existing_bucket_synth.stack.ingest.event_rule
    if rule is not None:
        assert existing_bucket_synth.logical_id(rule) in depends_on


def test_a_bucket_the_stack_creates_needs_no_backfill(default_synth: Synth, eventbridge_synth: Synth) -> None:
    for synth in (default_synth, eventbridge_synth):
        synth.template.resource_count_is("Custom::AWS", 0)
        _, search = function(synth, SEARCH_HANDLER)
        assert search["Environment"]["Variables"]["INDEX_INITIAL_STATE"] == "READY"


def test_s3_notifications_of_an_existing_bucket_keep_its_other_notifications(
    imported_s3_synth: Synth,
) -> None:
    (notifications,) = imported_s3_synth.resources("Custom::S3BucketNotifications").values()
    props = notifications["Properties"]

    assert props["BucketName"] == EXISTING_BUCKET
    # Unmanaged: CDK's handler replaces only its own entries of the bucket's configuration.
    assert props["Managed"] is False
    events = {
        event for c in props["NotificationConfiguration"]["QueueConfigurations"] for event in c["Events"]
    }
    assert events == {"s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:LifecycleExpiration:*"}
    imported_s3_synth.template.resource_count_is("AWS::Events::Rule", 0)


# --- EventBridge --------------------------------------------------------------------------------------


@pytest.fixture(params=["imported", "eventbridge"])
def eventbridge_stack(request: pytest.FixtureRequest) -> Synth:
    return request.getfixturevalue(f"{request.param}_synth")


def test_eventbridge_rule_forwards_this_buckets_object_events_to_the_queue(eventbridge_stack: Synth) -> None:
    synth = eventbridge_stack
    ingest = synth.stack.ingest
    assert ingest.event_rule is not None
    rule = synth.template_json["Resources"][synth.logical_id(ingest.event_rule)]["Properties"]
    queue_id = synth.logical_id(ingest.queue)
    dlq_id = synth.logical_id(ingest.dead_letter_queue)

    assert rule["EventPattern"] == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created", "Object Deleted"],
        "detail": {"bucket": {"name": [bucket_name(synth)]}},
    }
    (target,) = rule["Targets"]
    assert target["Arn"] == get_att(queue_id)
    # An event EventBridge cannot deliver is kept in the dead-letter queue, ready for a redrive.
    assert target["DeadLetterConfig"] == {"Arn": get_att(dlq_id)}
    assert rule["State"] == "ENABLED"


def test_eventbridge_may_send_to_the_queues_only_for_its_rule(eventbridge_stack: Synth) -> None:
    synth = eventbridge_stack
    ingest = synth.stack.ingest
    assert ingest.event_rule is not None
    rule_arn = get_att(synth.logical_id(ingest.event_rule))

    for queue in (ingest.queue, ingest.dead_letter_queue):
        queue_id = synth.logical_id(queue)
        (policy,) = [
            p
            for p in synth.resources("AWS::SQS::QueuePolicy").values()
            if p["Properties"]["Queues"] == [{"Ref": queue_id}]
        ]
        allows = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
        assert allows
        for statement in allows:
            assert statement["Principal"] == {"Service": "events.amazonaws.com"}
            assert "sqs:SendMessage" in actions(statement)
            assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}


def test_eventbridge_replaces_the_s3_notification_rules(eventbridge_stack: Synth) -> None:
    """The bucket only turns EventBridge delivery on: no notification rule that could overlap another."""
    (notifications,) = eventbridge_stack.resources("Custom::S3BucketNotifications").values()

    assert notifications["Properties"]["NotificationConfiguration"] == {"EventBridgeConfiguration": {}}


def test_s3_event_source_has_no_eventbridge_rule(default_synth: Synth) -> None:
    assert default_synth.stack.ingest.event_rule is None
    for rule in default_synth.resources("AWS::Events::Rule").values():
        assert "EventPattern" not in rule["Properties"]


# --- reconcile schedule -------------------------------------------------------------------------------


def test_a_schedule_starts_a_reconcile(imported_synth: Synth) -> None:
    state_machine_id, _ = state_machine(imported_synth)
    (rule,) = [
        r
        for r in imported_synth.resources("AWS::Events::Rule").values()
        if "ScheduleExpression" in r["Properties"]
    ]
    props = rule["Properties"]

    assert props["ScheduleExpression"] == "rate(7 days)"
    (target,) = props["Targets"]
    assert target["Arn"] == {"Ref": state_machine_id}
    assert json.loads(target["Input"]) == {"operation": "reconcile"}
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in imported_synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert statements == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": state_machine_id}}
    ]


def test_no_schedule_without_reconcile_schedule(default_synth: Synth, imported_s3_synth: Synth) -> None:
    for synth in (default_synth, imported_s3_synth):
        for rule in synth.resources("AWS::Events::Rule").values():
            assert "ScheduleExpression" not in rule["Properties"]


# --- the sweep, run -----------------------------------------------------------------------------------


def test_sweep_hands_each_segment_its_first_input(default_synth: Synth) -> None:
    """The synthesized Sweep state, run by moto's interpreter with the Lambda call replaced by a Pass.

    Checks what the template text means to a Step Functions interpreter: the item selector's paths into
    StartRun's segments, the JSON null from the intrinsic, and the loop ending on `done`.
    """
    import time

    import boto3
    from moto import mock_aws

    sweep = definition(default_synth)["States"]["Sweep"]
    loop = sweep["ItemProcessor"]["States"]
    # Stands in for sweep_segment: records the input it was given and reports the segment done.
    loop["SweepSegment"] = {
        "Type": "Pass",
        "Parameters": {"input.$": "$", "done": True},
        "Next": loop["SweepSegment"]["Next"],
    }
    sweep.pop("Catch")
    sweep.pop("Next")
    sweep["End"] = True
    sweep["ResultPath"] = "$.swept"
    run = {
        "bucket": "fileupload.a",
        "operation": "reconcile",
        "runId": "run-1",
        "segments": [{"segment": i, "totalSegments": 2} for i in range(2)],
    }

    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name="us-east-1")
        arn = client.create_state_machine(
            name="sweep",
            definition=json.dumps({"StartAt": "Sweep", "States": {"Sweep": sweep}}),
            roleArn="arn:aws:iam::123456789012:role/sweep",
        )["stateMachineArn"]
        execution = client.start_execution(stateMachineArn=arn, input=json.dumps({"run": run}))[
            "executionArn"
        ]
        for _ in range(100):
            described = client.describe_execution(executionArn=execution)
            if described["status"] != "RUNNING":
                break
            time.sleep(0.05)

    assert described["status"] == "SUCCEEDED", described
    swept = json.loads(described["output"])["swept"]
    assert [item["input"] for item in swept] == [
        {"bucket": "fileupload.a", "runId": "run-1", "segment": i, "totalSegments": 2, "startKey": None}
        for i in range(2)
    ]
    assert all(item["done"] is True for item in swept)
