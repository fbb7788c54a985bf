"""The synthesized template, point by point: storage, ingest, functions, permissions, search API, alarms."""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from typing import Any
from unittest.mock import ANY

import pytest
from aws_cdk.assertions import Match

from file_index.rules import schema
from infra import alarms as alarms_module
from infra import powertools_function, search_api
from infra.config import RemovalChoice
from tests.infra.conftest import STACK_NAME, Synth

pytestmark = pytest.mark.xdist_group("infra")

INDEXER_HANDLER = "indexer.handler.lambda_handler"
SEARCH_HANDLER = "search.handler.lambda_handler"
BACKFILL_HANDLERS = [
    "backfill.handler.start_run",
    "backfill.handler.write_batch",
    "backfill.handler.sweep_segment",
    "backfill.handler.finish_run",
    "backfill.handler.fail_run",
]
GUARD_HANDLER = "configuration_guard.handler.lambda_handler"
ALL_HANDLERS = [INDEXER_HANDLER, SEARCH_HANDLER, *BACKFILL_HANDLERS, GUARD_HANDLER]


def function(synth: Synth, handler: str) -> tuple[str, dict[str, Any]]:
    matches = [
        (logical_id, resource["Properties"])
        for logical_id, resource in synth.resources("AWS::Lambda::Function").items()
        if resource["Properties"].get("Handler") == handler
    ]
    assert len(matches) == 1, f"expected one function with handler {handler}"
    return matches[0]


def role_statements(synth: Synth, handler: str) -> list[dict[str, Any]]:
    """Every statement of the policies attached to the role of the function with `handler`."""
    _, props = function(synth, handler)
    role_id = props["Role"]["Fn::GetAtt"][0]
    statements = []
    for policy in synth.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def actions_of(statements: list[dict[str, Any]], service: str) -> set[str]:
    return {a for s in statements for a in actions(s) if a.startswith(f"{service}:")}


def get_att(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


# --- storage ------------------------------------------------------------------------------------------


def test_table_keys_and_indexes_are_the_schema_ones(default_synth: Synth) -> None:
    """The deployed table equals what the tests build with boto3 from `create_table_request()`."""
    request = schema.create_table_request()
    (table,) = [
        table
        for table in default_synth.resources("AWS::DynamoDB::Table").values()
        if table["Properties"]["TableName"] == schema.TABLE_NAME
    ]
    props = table["Properties"]

    assert props["TableName"] == schema.TABLE_NAME
    assert props["KeySchema"] == request["KeySchema"]
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
        request["AttributeDefinitions"], key=lambda a: a["AttributeName"]
    )
    assert sorted(props["GlobalSecondaryIndexes"], key=lambda i: i["IndexName"]) == sorted(
        request["GlobalSecondaryIndexes"], key=lambda i: i["IndexName"]
    )
    assert {index["IndexName"] for index in props["GlobalSecondaryIndexes"]} == {
        "uploadUser-uploadDate-index",
        "bucketName-size-index",
        "uploadUser-size-index",
        "bucketName-uploadDate-index",
    }


def test_table_is_on_demand_recoverable_expiring_and_retained(default_synth: Synth) -> None:
    default_synth.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like(
                {
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    "TimeToLiveSpecification": {"AttributeName": schema.EXPIRES_AT, "Enabled": True},
                    "SSESpecification": {"SSEEnabled": True},
                    "DeletionProtectionEnabled": True,
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_table_name_comes_from_context(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Built without synth: reading the construct tree is enough and costs no template validation."""
    import aws_cdk as cdk

    from infra.config import StackConfig
    from infra.stack import FileSearchStack
    from tests.infra.conftest import cdk_json_context

    app = cdk.App(context={**cdk_json_context(), "tableName": "FileMetaData-dev"})
    stack = FileSearchStack(app, "Named", config=StackConfig.from_context(app.node.try_get_context))
    table = stack.storage.table.node.default_child

    assert stack.resolve(table.table_name) == "FileMetaData-dev"  # type: ignore[union-attr]


def test_upload_bucket_is_private_encrypted_ssl_only_logged_and_retained(default_synth: Synth) -> None:
    bucket_id = default_synth.logical_id(default_synth.stack.storage.bucket)
    log_bucket_id = default_synth.logical_id(default_synth.stack.storage.access_log_bucket)
    bucket = default_synth.template_json["Resources"][bucket_id]

    assert bucket["DeletionPolicy"] == "Retain"
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": log_bucket_id}
    assert "AutoDeleteObjects" not in str(default_synth.resources("Custom::S3AutoDeleteObjects"))
    assert_denies_insecure_transport(default_synth, bucket_id)
    assert_denies_insecure_transport(default_synth, log_bucket_id)


def assert_denies_insecure_transport(synth: Synth, bucket_id: str) -> None:
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synth.resources("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    ), f"bucket {bucket_id} does not deny plain HTTP"


def test_access_log_bucket_is_private_encrypted_and_expires_logs(default_synth: Synth) -> None:
    log_bucket_id = default_synth.logical_id(default_synth.stack.storage.access_log_bucket)
    props = default_synth.template_json["Resources"][log_bucket_id]["Properties"]

    assert props["PublicAccessBlockConfiguration"]["BlockPublicAcls"] is True
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert props["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 365


def test_dev_stack_destroys_its_data(dev_synth: Synth) -> None:
    bucket_id = dev_synth.logical_id(dev_synth.stack.storage.bucket)
    table_id = dev_synth.logical_id(dev_synth.stack.storage.table)
    resources = dev_synth.template_json["Resources"]

    assert resources[bucket_id]["DeletionPolicy"] == "Delete"
    assert resources[table_id]["DeletionPolicy"] == "Delete"
    assert resources[table_id]["Properties"]["DeletionProtectionEnabled"] is False
    auto_delete = dev_synth.resources("Custom::S3AutoDeleteObjects")
    emptied = {resource["Properties"]["BucketName"]["Ref"] for resource in auto_delete.values()}
    assert bucket_id in emptied


# --- ingest -------------------------------------------------------------------------------------------


def queues(synth: Synth) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    queue_id = synth.logical_id(synth.stack.ingest.queue)
    dlq_id = synth.logical_id(synth.stack.ingest.dead_letter_queue)
    resources = synth.template_json["Resources"]
    return queue_id, resources[queue_id]["Properties"], dlq_id, resources[dlq_id]["Properties"]


def test_queue_is_encrypted_sized_for_s3_events_and_redrives_to_the_dlq(default_synth: Synth) -> None:
    _, queue, dlq_id, dlq = queues(default_synth)
    _, indexer = function(default_synth, INDEXER_HANDLER)

    assert queue["SqsManagedSseEnabled"] is True
    assert dlq["SqsManagedSseEnabled"] is True
    assert queue["VisibilityTimeout"] >= 6 * indexer["Timeout"]
    assert queue["MaximumMessageSize"] >= 64 * 1024
    assert queue["MessageRetentionPeriod"] == dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": get_att(dlq_id), "maxReceiveCount": 5}


def test_both_queues_refuse_plain_http(default_synth: Synth) -> None:
    queue_id, _, dlq_id, _ = queues(default_synth)

    for logical_id in (queue_id, dlq_id):
        default_synth.template.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": logical_id}],
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                    "Resource": get_att(logical_id),
                                }
                            )
                        ]
                    )
                },
            },
        )


def test_bucket_sends_created_removed_and_lifecycle_events_to_the_queue(default_synth: Synth) -> None:
    queue_id, _, _, _ = queues(default_synth)
    bucket_id = default_synth.logical_id(default_synth.stack.storage.bucket)
    (notifications,) = default_synth.resources("Custom::S3BucketNotifications").values()
    props = notifications["Properties"]

    assert props["BucketName"] == {"Ref": bucket_id}
    configurations = props["NotificationConfiguration"]["QueueConfigurations"]
    assert {event for c in configurations for event in c["Events"]} == {
        "s3:ObjectCreated:*",
        "s3:ObjectRemoved:*",
        "s3:LifecycleExpiration:*",
    }
    assert all(c["QueueArn"] == get_att(queue_id) and "Filter" not in c for c in configurations)
    assert "TopicConfigurations" not in props["NotificationConfiguration"]
    # ...and the queue lets exactly this bucket send to it.
    default_synth.template.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "Queues": [{"Ref": queue_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "s3.amazonaws.com"},
                                "Action": Match.array_with(["sqs:SendMessage"]),
                                # Both keys: the bucket, and the account it must belong to.
                                "Condition": Match.exact(
                                    {
                                        "ArnLike": {"aws:SourceArn": get_att(bucket_id)},
                                        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                                    }
                                ),
                            }
                        )
                    ]
                )
            },
        },
    )


def test_indexer_drains_the_queue_with_partial_batch_responses(default_synth: Synth) -> None:
    queue_id, _, _, _ = queues(default_synth)
    indexer_id, _ = function(default_synth, INDEXER_HANDLER)
    (mapping,) = default_synth.resources("AWS::Lambda::EventSourceMapping").values()

    assert mapping["Properties"] == {
        "EventSourceArn": get_att(queue_id),
        "FunctionName": {"Ref": indexer_id},
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        # cdk.json's sizing (infra/sizing.py): 100 records, a 1 s window, 10 concurrent batches.
        "BatchSize": 100,
        "MaximumBatchingWindowInSeconds": 1,
        "ScalingConfig": {"MaximumConcurrency": 10},
    }


# --- functions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_functions_are_python_arm64_traced_with_the_powertools_layer(
    default_synth: Synth, handler: str
) -> None:
    _, props = function(default_synth, handler)

    # Amazon Linux 2023, the Python the tests run with.
    assert props["Runtime"] == "python3.13"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    (layer,) = props["Layers"]
    # The layer ARN is AWS's public SSM parameter for the exact Powertools release the tests ran with.
    pinned = version("aws-lambda-powertools")
    assert layer == {"Ref": f"PowertoolsLayerPython313Release{pinned.replace('.', 'x')}"}
    parameter = default_synth.template_json["Parameters"][layer["Ref"]]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>"
    assert parameter["Default"] == f"/aws/service/powertools/python/arm64/python3.13/{pinned}"
    # The layer is built for one Python version and architecture: its parameter path moves with them.
    assert f"/{props['Runtime']}/" in parameter["Default"]
    assert f"/{props['Architectures'][0]}/" in parameter["Default"]
    assert "LogGroup" in props["LoggingConfig"]


def test_a_missing_layer_parameter_fails_the_deployment_naming_it(default_synth: Synth) -> None:
    """Resolved as a template parameter: CloudFormation refuses a missing one before changing anything.

    An SSM dynamic reference (`{{resolve:ssm:...}}`) in a resource would fail only when that resource is
    created, half-way through the deployment.
    """
    ((parameter_id, parameter),) = [
        (logical_id, parameter)
        for logical_id, parameter in default_synth.template_json["Parameters"].items()
        if parameter["Default"].startswith("/aws/service/powertools/")
    ]
    name = parameter["Default"]

    assert "resolve:ssm" not in json.dumps(default_synth.template_json["Resources"])
    # The parameter's description names the parameter and what to do; nothing else can be passed.
    assert powertools_function.RUNTIME.name in parameter["Description"]
    assert version("aws-lambda-powertools") in parameter["Description"]
    assert "requirements.txt" in parameter["Description"]
    assert parameter["AllowedValues"] == [name]
    assert "requirements.txt" in parameter["ConstraintDescription"]
    # Every function uses this one layer.
    for handler in ALL_HANDLERS:
        assert function(default_synth, handler)[1]["Layers"] == [{"Ref": parameter_id}]


def test_the_layer_parameter_is_new_for_every_release() -> None:
    """On an update the CDK CLI passes UsePreviousValue for an existing parameter, whose previous value is
    the previous release's parameter name: a new release must be a new template parameter."""
    ids = {powertools_function.powertools_layer_parameter_id(v) for v in ("3.37.0", "3.38.0", "3.3.70")}

    assert len(ids) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9]+", logical_id) for logical_id in ids)


def test_function_code_is_the_functions_directory_without_caches(default_synth: Synth) -> None:
    _, indexer = function(default_synth, INDEXER_HANDLER)
    _, search = function(default_synth, SEARCH_HANDLER)
    asset_hash = indexer["Code"]["S3Key"].removesuffix(".zip")
    asset_dir = default_synth.outdir / f"asset.{asset_hash}"

    assert search["Code"]["S3Key"] == indexer["Code"]["S3Key"]
    assert (asset_dir / "file_index" / "rules" / "schema.py").is_file()
    assert (asset_dir / "indexer" / "__init__.py").is_file()
    assert (asset_dir / "search" / "__init__.py").is_file()
    assert (asset_dir / "backfill" / "__init__.py").is_file()
    for handler in BACKFILL_HANDLERS:
        _, backfill = function(default_synth, handler)
        assert backfill["Code"]["S3Key"] == indexer["Code"]["S3Key"]
    assert not list(asset_dir.rglob("__pycache__"))
    assert not list(asset_dir.rglob("*.pyc"))


def test_indexer_environment_is_the_contract(default_synth: Synth) -> None:
    _, props = function(default_synth, INDEXER_HANDLER)
    table_id = default_synth.logical_id(default_synth.stack.storage.table)

    assert props["Environment"]["Variables"] == {
        "TABLE_NAME": {"Ref": table_id},
        # The indexer refuses events of any other bucket.
        "BUCKET_NAME": {"Ref": default_synth.logical_id(default_synth.stack.storage.bucket)},
        "KEY_LAYOUT": "default",
        "TOMBSTONE_TTL_DAYS": "30",
        # cdk.json's shard placement: 16 shards per bucket, no hot user, no Z-order index.
        "BUCKET_INDEX_SHARDS": "16",
        "HOT_USERS": "{}",
        "MULTI_ATTRIBUTE_INDEX": "false",
        "NAME_TABLE_NAME": {"Ref": default_synth.logical_id(default_synth.stack.storage.name_table)},
        "POWERTOOLS_SERVICE_NAME": "indexer",
        "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


def test_search_environment_is_the_contract(default_synth: Synth) -> None:
    _, props = function(default_synth, SEARCH_HANDLER)
    storage, ingest_ = default_synth.stack.storage, default_synth.stack.ingest

    assert props["Environment"]["Variables"] == {
        "TABLE_NAME": {"Ref": default_synth.logical_id(storage.table)},
        "BUCKET_NAME": {"Ref": default_synth.logical_id(storage.bucket)},
        "CURSOR_SECRET_ARN": {"Ref": default_synth.logical_id(default_synth.stack.search_api.cursor_secret)},
        "DOWNLOAD_URL_EXPIRY_SECONDS": str(search_api.DOWNLOAD_URL_EXPIRY_SECONDS),
        "QUEUE_URL": {"Ref": default_synth.logical_id(ingest_.queue)},
        "DEAD_LETTER_QUEUE_URL": {"Ref": default_synth.logical_id(ingest_.dead_letter_queue)},
        # The stack created the bucket empty: every object since has an event, so the index is complete.
        "INDEX_INITIAL_STATE": "READY",
        "BUCKET_INDEX_SHARDS": "16",
        "HOT_USERS": "{}",
        "MULTI_ATTRIBUTE_INDEX": "false",
        "BUCKET_TIME_INDEX": "true",
        "NAME_TABLE_NAME": {"Ref": default_synth.logical_id(storage.name_table)},
        # The routes of signed-in people (tests/infra/test_user_access.py checks their values).
        "USER_POOL_CLIENT_ID": ANY,
        "USER_CLAIM": "sub",
        "ADMIN_GROUP": "admins",
        "MAX_UPLOAD_BYTES": str(5 * 1024**4),
        "SHARE_LINK_MAX_SECONDS": "3600",
        "USER_POOL_ID": ANY,
        "OWNER_NAME_ATTRIBUTE": "name",
        "WEB_ORIGIN": ANY,
        "KEY_LAYOUT": "default",
        "POWERTOOLS_SERVICE_NAME": "search",
        "POWERTOOLS_METRICS_NAMESPACE": "S3FileSearch",
        "POWERTOOLS_LOG_LEVEL": "INFO",
    }


def test_context_reaches_the_indexer_environment(dev_synth: Synth) -> None:
    # The dev overrides change no indexer setting: the defaults of cdk.json flow through unchanged.
    _, props = function(dev_synth, INDEXER_HANDLER)

    assert props["Environment"]["Variables"]["KEY_LAYOUT"] == "default"
    assert props["Environment"]["Variables"]["TOMBSTONE_TTL_DAYS"] == "30"


def test_cursor_secret_is_a_generated_key(default_synth: Synth) -> None:
    default_synth.template.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {"GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True}},
    )


# --- permissions --------------------------------------------------------------------------------------


def test_no_policy_allows_a_wildcard_action(any_synth: Synth) -> None:
    for logical_id, policy in any_synth.resources("AWS::IAM::Policy").items():
        # CDK's BucketDeployment copies the page at deploy time with CDK's own grants (s3:GetObject*...),
        # acknowledged in infra/web_site.py; every policy of the project's own functions is exact.
        if logical_id.startswith("CustomCDKBucketDeployment"):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Allow":
                wildcards = [a for a in actions(statement) if "*" in a]
                assert not wildcards, f"{logical_id} allows {wildcards}"


def test_indexer_may_write_the_table_and_head_objects(default_synth: Synth) -> None:
    statements = role_statements(default_synth, INDEXER_HANDLER)
    table_id = default_synth.logical_id(default_synth.stack.storage.table)
    bucket_id = default_synth.logical_id(default_synth.stack.storage.bucket)

    # Exactly the calls the indexer makes, on the table only: no deletes, batch writes, DescribeTable, or
    # index ARNs.
    dynamodb_statements = [s for s in statements if actions(s)[0].startswith("dynamodb:")]
    name_table_id = default_synth.logical_id(default_synth.stack.storage.name_table)
    assert dynamodb_statements == [
        # BatchGetItem: a removal of name items reads the key's entry back.
        {
            "Action": ["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"],
            "Effect": "Allow",
            "Resource": get_att(table_id),
        },
        # The name index: a key's items put and removed in batches; no DeleteItem.
        {
            "Action": ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"],
            "Effect": "Allow",
            "Resource": get_att(name_table_id),
        },
    ]
    # HEAD of an object whose current version was deleted for good (GetObject covers HeadObject; ListBucket
    # turns a missing key's 403 into a 404). No writes, deletes or version reads.
    assert [s for s in statements if actions(s)[0].startswith("s3:")] == object_lookup_statements(bucket_id)
    assert not actions_of(statements, "secretsmanager")
    queue_id = default_synth.logical_id(default_synth.stack.ingest.queue)
    assert actions_of(statements, "sqs") == {
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:GetQueueUrl",
        "sqs:ReceiveMessage",
    }
    assert all(s["Resource"] == get_att(queue_id) for s in statements if actions(s)[0].startswith("sqs:"))


def object_lookup_statements(bucket_id: str) -> list[dict[str, Any]]:
    """What a function that HEADs objects of the bucket created by the stack may do to it."""
    return [
        {
            "Action": "s3:GetObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [get_att(bucket_id), "/*"]]},
        },
        {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": get_att(bucket_id)},
    ]


def test_search_may_read_the_table_presign_objects_and_read_its_secret(default_synth: Synth) -> None:
    statements = role_statements(default_synth, SEARCH_HANDLER)
    storage = default_synth.stack.storage
    bucket_id = default_synth.logical_id(storage.bucket)
    secret_id = default_synth.logical_id(default_synth.stack.search_api.cursor_secret)

    table_id = default_synth.logical_id(storage.table)
    # GetItem of one entry on the table, Query on its GSIs; no Scan, BatchGetItem, DescribeTable or writes.
    dynamodb_statements = [s for s in statements if actions(s)[0].startswith("dynamodb:")]
    name_table_id = default_synth.logical_id(storage.name_table)
    # A name list reads the name index (table and user GSI), then BatchGetItem of the candidates' entries.
    assert dynamodb_statements == [
        {
            "Action": ["dynamodb:BatchGetItem", "dynamodb:GetItem"],
            "Effect": "Allow",
            "Resource": get_att(table_id),
        },
        {
            "Action": "dynamodb:Query",
            "Effect": "Allow",
            "Resource": [
                get_att(name_table_id),
                {"Fn::Join": ["", [get_att(table_id), "/index/*"]]},
                {"Fn::Join": ["", [get_att(name_table_id), "/index/*"]]},
            ],
        },
        # Whether a bucket's term items are complete: the name table's state items, read together.
        {"Action": "dynamodb:BatchGetItem", "Effect": "Allow", "Resource": get_att(name_table_id)},
    ]
    s3_statements = [s for s in statements if actions(s)[0].startswith("s3:")]
    # Presigned downloads; and for signed-in people the presigned POST of an upload (s3:PutObject) and
    # the delete of one's own file.
    assert s3_statements == [
        {
            "Action": [
                "s3:AbortMultipartUpload",
                "s3:DeleteObject",
                "s3:GetObject",
                "s3:GetObjectVersion",
                "s3:ListMultipartUploadParts",
                "s3:PutObject",
            ],
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [get_att(bucket_id), "/*"]]},
        },
    ]
    secret_statements = [s for s in statements if actions(s)[0].startswith("secretsmanager:")]
    assert secret_statements == [
        {
            "Action": ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"],
            "Effect": "Allow",
            "Resource": {"Ref": secret_id},
        }
    ]
    # `GET /status`: the backlog of both queues, and the age of the oldest event (CloudWatch only).
    queue_id, _, dlq_id, _ = queues(default_synth)
    (sqs_statement,) = [s for s in statements if actions(s)[0].startswith("sqs:")]
    assert actions(sqs_statement) == ["sqs:GetQueueAttributes"]
    assert sorted(sqs_statement["Resource"], key=str) == sorted([get_att(queue_id), get_att(dlq_id)], key=str)
    # Merged with X-Ray's statement: both are on Resource "*", which the services force.
    assert actions_of(statements, "cloudwatch") == {"cloudwatch:GetMetricStatistics"}


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_functions_write_only_their_own_log_group(default_synth: Synth, handler: str) -> None:
    """No AWSLambdaBasicExecutionRole (every log group of the account): log events to its own group only."""
    _, props = function(default_synth, handler)
    role_id = props["Role"]["Fn::GetAtt"][0]
    role = default_synth.template_json["Resources"][role_id]["Properties"]
    log_group_id = props["LoggingConfig"]["LogGroup"]["Ref"]

    assert "ManagedPolicyArns" not in role
    assert "Policies" not in role
    logs_statements = [
        s for s in role_statements(default_synth, handler) if actions(s)[0].startswith("logs:")
    ]
    assert logs_statements == [
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": get_att(log_group_id),
        }
    ]


@pytest.mark.parametrize("handler", ALL_HANDLERS)
def test_only_xray_and_cloudwatch_use_a_wildcard_resource(default_synth: Synth, handler: str) -> None:
    """Only actions without resource-level permissions; CloudWatch metrics only for `GET /status`."""
    forced = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
    if handler == SEARCH_HANDLER:
        forced.add("cloudwatch:GetMetricStatistics")
    wildcard_actions = {
        action
        for statement in role_statements(default_synth, handler)
        if statement["Resource"] == "*"
        for action in actions(statement)
    }

    assert wildcard_actions == forced


# --- search API ---------------------------------------------------------------------------------------


def test_every_method_is_a_get_with_iam_authorization(default_synth: Synth) -> None:
    # Apart from the routes of signed-in people under /me (tests/infra/test_user_access.py).
    methods = [
        method
        for method in default_synth.resources("AWS::ApiGateway::Method").values()
        if method["Properties"]["AuthorizationType"] in ("AWS_IAM", "NONE")
        and method["Properties"]["HttpMethod"] != "OPTIONS"
    ]
    search_id, _ = function(default_synth, SEARCH_HANDLER)

    assert len(methods) == 2  # `/` and `/{proxy+}`
    for method in methods:
        props = method["Properties"]
        assert props["HttpMethod"] == "GET"
        assert props["AuthorizationType"] == "AWS_IAM"
        assert props["Integration"]["Type"] == "AWS_PROXY"
        assert get_att(search_id) in props["Integration"]["Uri"]["Fn::Join"][1]
        assert "RequestValidatorId" in props
    default_synth.template.has_resource_properties("AWS::ApiGateway::Resource", {"PathPart": "{proxy+}"})


def test_dev_stack_may_open_the_api(dev_synth: Synth) -> None:
    # The routes of signed-in people keep their user pool: they exist to tell people apart.
    for method in dev_synth.resources("AWS::ApiGateway::Method").values():
        expected = "COGNITO_USER_POOLS" if "AuthorizerId" in method["Properties"] else "NONE"
        assert method["Properties"]["AuthorizationType"] == expected


def test_stage_throttles_logs_traces_and_measures(default_synth: Synth) -> None:
    access_logs_id = default_synth.logical_id(default_synth.stack.search_api.access_log_group)
    (stage,) = default_synth.resources("AWS::ApiGateway::Stage").values()
    props = stage["Properties"]

    assert props["TracingEnabled"] is True
    (settings,) = props["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == search_api.THROTTLING_RATE_LIMIT
    assert settings["ThrottlingBurstLimit"] == search_api.THROTTLING_BURST_LIMIT
    assert settings["MetricsEnabled"] is True
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False
    assert {"Ref": access_logs_id} in props["AccessLogSetting"]["DestinationArn"]["Fn::Join"][1]
    assert "$context.requestId" in props["AccessLogSetting"]["Format"]
    # Logging needs the account's API Gateway CloudWatch role.
    default_synth.template.resource_count_is("AWS::ApiGateway::Account", 1)


def test_stack_owns_the_execution_log_group_with_a_retention(any_synth: Synth) -> None:
    """API Gateway would otherwise create it on its first error, outside the stack, kept forever."""
    search = any_synth.stack.search_api
    log_group_id = any_synth.logical_id(search.execution_log_group)
    log_group = any_synth.template_json["Resources"][log_group_id]
    (stage,) = any_synth.resources("AWS::ApiGateway::Stage").values()

    assert log_group["Properties"]["LogGroupName"] == {
        "Fn::Join": [
            "",
            [
                "API-Gateway-Execution-Logs_",
                {"Ref": any_synth.logical_id(search.api)},
                f"/{stage['Properties']['StageName']}",
            ],
        ]
    }
    assert log_group["Properties"]["RetentionInDays"] == 30
    # Removed with the stack exactly when the data is.
    destroy = any_synth.stack.config.removal is RemovalChoice.DESTROY
    assert log_group["DeletionPolicy"] == ("Delete" if destroy else "Retain")
    # It exists before the stage can log anything, so API Gateway never creates it first.
    assert log_group_id in stage["DependsOn"]


def test_api_is_regional(default_synth: Synth) -> None:
    default_synth.template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}}
    )


def test_outputs_name_the_api_url_bucket_table_and_queues(default_synth: Synth) -> None:
    outputs = default_synth.template_json["Outputs"]
    storage, ingest_ = default_synth.stack.storage, default_synth.stack.ingest

    assert set(outputs) == {
        "ApiUrl",
        "BucketName",
        "TableName",
        "QueueUrl",
        "DeadLetterQueueUrl",
        "BackfillStateMachineArn",
        "AlarmTopicArn",
        "DashboardName",
        "WebUrl",
        "UserPoolId",
        "UserPoolClientId",
        "IndexerFunctionName",
    }
    assert outputs["BackfillStateMachineArn"]["Value"] == {
        "Ref": default_synth.logical_id(default_synth.stack.backfill.state_machine)
    }
    assert outputs["AlarmTopicArn"]["Value"] == {
        "Ref": default_synth.logical_id(default_synth.stack.alarms.topic)
    }
    assert outputs["BucketName"]["Value"] == {"Ref": default_synth.logical_id(storage.bucket)}
    assert outputs["TableName"]["Value"] == {"Ref": default_synth.logical_id(storage.table)}
    assert outputs["QueueUrl"]["Value"] == {"Ref": default_synth.logical_id(ingest_.queue)}
    assert outputs["DeadLetterQueueUrl"]["Value"] == {
        "Ref": default_synth.logical_id(ingest_.dead_letter_queue)
    }
    url_parts = outputs["ApiUrl"]["Value"]["Fn::Join"][1]
    assert url_parts[0] == "https://"
    assert {"Ref": default_synth.logical_id(default_synth.stack.search_api.api)} in url_parts


# --- alarms -------------------------------------------------------------------------------------------


def alarms_by_id(synth: Synth) -> dict[str, dict[str, Any]]:
    """Each alarm's properties, by the construct id of the alarm in `Alarms`."""
    construct_ids = {synth.logical_id(alarm): alarm.node.id for alarm in synth.stack.alarms.all}
    return {
        construct_ids[logical_id]: alarm["Properties"]
        for logical_id, alarm in synth.resources("AWS::CloudWatch::Alarm").items()
    }


def metric(alarm: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    return alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"]


def queue_name(logical_id: str) -> list[dict[str, Any]]:
    return [{"Name": "QueueName", "Value": {"Fn::GetAtt": [logical_id, "QueueName"]}}]


def test_day_one_alarms_watch_the_right_resources(default_synth: Synth) -> None:
    alarms = alarms_by_id(default_synth)
    queue_id, _, dlq_id, _ = queues(default_synth)
    indexer_id, _ = function(default_synth, INDEXER_HANDLER)
    state_machine_id = default_synth.logical_id(default_synth.stack.backfill.state_machine)

    assert set(alarms) == {
        "DeadLetters",
        "DeadLettersExpiring",
        "OldestEventAge",
        "IndexerErrors",
        "IndexerThrottles",
        "ApiServerErrors",
        "ApiThrottled",
        "BackfillFailed",
    }
    dlq = alarms["DeadLetters"]
    assert metric(dlq) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible", queue_name(dlq_id))
    assert (dlq["Threshold"], dlq["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    age = alarms["OldestEventAge"]
    assert metric(age) == ("AWS/SQS", "ApproximateAgeOfOldestMessage", queue_name(queue_id))
    assert age["Threshold"] == 900
    for construct_id, metric_name in (("IndexerErrors", "Errors"), ("IndexerThrottles", "Throttles")):
        lambda_alarm = alarms[construct_id]
        dimensions = [{"Name": "FunctionName", "Value": {"Ref": indexer_id}}]
        assert metric(lambda_alarm) == ("AWS/Lambda", metric_name, dimensions)
        assert (lambda_alarm["Threshold"], lambda_alarm["Statistic"]) == (0, "Sum")
    api_id = default_synth.logical_id(default_synth.stack.search_api.api)
    (api,) = default_synth.resources("AWS::ApiGateway::RestApi").values()
    # API Gateway's own metrics (on the dashboard) are keyed by the API's name: one name per stack.
    assert api["Properties"]["Name"] == f"{STACK_NAME}-api"
    api_alarm = alarms["ApiServerErrors"]
    # Counted from the access log per API (API Gateway's 5XXError also counts the deliberate 503).
    assert metric(api_alarm) == (
        "S3FileSearch",
        "ApiServerErrors",
        [{"Name": "ApiId", "Value": {"Ref": api_id}}],
    )
    assert (api_alarm["Threshold"], api_alarm["Statistic"], api_alarm["EvaluationPeriods"]) == (0, "Sum", 1)
    failed = alarms["BackfillFailed"]
    dimensions = [{"Name": "StateMachineArn", "Value": {"Ref": state_machine_id}}]
    assert metric(failed) == ("AWS/States", "ExecutionsFailed", dimensions)
    assert (failed["Threshold"], failed["Statistic"], failed["ComparisonOperator"]) == (
        0,
        "Sum",
        "GreaterThanThreshold",
    )
    assert all(a["TreatMissingData"] == "notBreaching" for a in alarms.values())


def test_dead_letters_alarm_before_the_queue_deletes_them(default_synth: Synth) -> None:
    """SQS deletes a message when its retention ends: the alarm leaves three days to redrive it."""
    _, _, dlq_id, dlq = queues(default_synth)
    expiring = alarms_by_id(default_synth)["DeadLettersExpiring"]

    assert metric(expiring) == ("AWS/SQS", "ApproximateAgeOfOldestMessage", queue_name(dlq_id))
    assert expiring["Statistic"] == "Maximum"
    assert expiring["ComparisonOperator"] == "GreaterThanThreshold"
    assert expiring["Threshold"] == dlq["MessageRetentionPeriod"] - 3 * 24 * 3600
    # The metric is reported every 5 minutes at most; one breaching period must be enough.
    assert expiring["EvaluationPeriods"] * expiring["Period"] <= 3600


def test_two_stacks_in_one_account_alarm_on_their_own_api() -> None:
    """Built without synth: the construct tree gives the names the template would carry."""
    import aws_cdk as cdk

    from infra.config import StackConfig
    from infra.stack import FileSearchStack
    from tests.infra.conftest import cdk_json_context

    app = cdk.App(context=cdk_json_context())
    config = StackConfig.from_context(app.node.try_get_context)
    stacks = [FileSearchStack(app, name, config=config) for name in ("SearchProd", "SearchStaging")]
    names = [stack.search_api.api.rest_api_name for stack in stacks]

    assert names == ["SearchProd-api", "SearchStaging-api"]
    for stack in stacks:
        for alarm in (stack.alarms.api_server_errors, stack.alarms.api_retry_later):
            metric = alarm.metric
            assert isinstance(metric, cdk.aws_cloudwatch.Metric)
            assert metric.dimensions == {"ApiId": stack.search_api.api.rest_api_id}


# --- API server errors apart from deliberate throttling ----------------------------------------------


def metric_filters(synth: Synth) -> dict[str, dict[str, Any]]:
    """Each metric filter's properties, by the name of the metric it counts."""
    return {
        f["Properties"]["MetricTransformations"][0]["MetricName"]: f["Properties"]
        for f in synth.resources("AWS::Logs::MetricFilter").values()
    }


def access_log_format(synth: Synth) -> dict[str, str]:
    (stage,) = synth.resources("AWS::ApiGateway::Stage").values()
    return dict(json.loads(stage["Properties"]["AccessLogSetting"]["Format"]))


def test_access_log_lines_carry_the_status_and_the_api(default_synth: Synth) -> None:
    fields = access_log_format(default_synth)

    assert fields["status"] == "$context.status"
    assert fields["apiId"] == "$context.apiId"
    assert fields["requestId"] == "$context.requestId"


def test_server_errors_are_every_5xx_but_the_deliberate_503(default_synth: Synth) -> None:
    """The function answers 503 "busy, retry later" when the table throttles it: not an error."""
    access_logs_id = default_synth.logical_id(default_synth.stack.search_api.access_log_group)
    server_errors = metric_filters(default_synth)["ApiServerErrors"]

    assert server_errors["LogGroupName"] == {"Ref": access_logs_id}
    assert server_errors["FilterPattern"] == '{ ($.status = %^5[0-9][0-9]$%) && ($.status != "503") }'
    (transformation,) = server_errors["MetricTransformations"]
    assert transformation == {
        "MetricNamespace": "S3FileSearch",
        "MetricName": "ApiServerErrors",
        "MetricValue": "1",
        "Unit": "Count",
        # The dimension's value comes from the log line, which names the API it belongs to.
        "Dimensions": [{"Key": "ApiId", "Value": "$.apiId"}],
    }


def test_retry_later_answers_have_their_own_alarm(default_synth: Synth) -> None:
    """429 (stage limits) and 503 (table throttled): alarmed only when sustained, apart from errors."""
    retry_later = metric_filters(default_synth)["ApiRetryLaterAnswers"]
    alarm = alarms_by_id(default_synth)["ApiThrottled"]
    api_id = default_synth.logical_id(default_synth.stack.search_api.api)

    assert retry_later["FilterPattern"] == '{ ($.status = "429") || ($.status = "503") }'
    assert metric(alarm) == (
        "S3FileSearch",
        "ApiRetryLaterAnswers",
        [{"Name": "ApiId", "Value": {"Ref": api_id}}],
    )
    assert alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] == alarms_module.RETRY_LATER_ANSWERS_PER_PERIOD > 0
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == alarms_module.RETRY_LATER_PERIODS > 1
    assert alarm["TreatMissingData"] == "notBreaching"


def test_no_alarm_counts_api_gateways_5xx_metric(any_synth: Synth) -> None:
    """5XXError counts the deliberate 503 too; no alarm may watch it (the dashboard shows it)."""
    for alarm in any_synth.resources("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"].get("MetricName") != "5XXError"
        assert "5XXError" not in json.dumps(alarm["Properties"].get("Metrics", []))


def test_every_alarm_publishes_to_the_alarm_topic(any_synth: Synth) -> None:
    """The topic exists without an e-mail too: no alarm ever fires into nothing."""
    (topic_id,) = any_synth.resources("AWS::SNS::Topic")
    alarms = any_synth.resources("AWS::CloudWatch::Alarm").values()

    assert len(alarms) == len(any_synth.stack.alarms.all) == 8
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["Properties"]["OKActions"] == [{"Ref": topic_id}]


def test_without_an_alarm_email_the_topic_has_no_subscription(default_synth: Synth) -> None:
    default_synth.template.resource_count_is("AWS::SNS::Topic", 1)
    default_synth.template.resource_count_is("AWS::SNS::Subscription", 0)


def test_an_alarm_email_subscribes_to_an_encrypted_ssl_only_topic(dev_synth: Synth) -> None:
    (topic_id, topic), *_ = dev_synth.resources("AWS::SNS::Topic").items()
    key_id = next(iter(dev_synth.resources("AWS::KMS::Key")))

    assert topic["Properties"]["KmsMasterKeyId"] == get_att(key_id)
    dev_synth.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {"Protocol": "email", "Endpoint": "ops@example.com", "TopicArn": {"Ref": topic_id}},
    )
    dev_synth.template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            }
        },
    )
    dev_synth.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
