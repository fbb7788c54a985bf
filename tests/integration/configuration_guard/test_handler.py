"""The shard placement guard as CloudFormation calls it: on moto's DynamoDB and CloudFormation, answering a
real HTTP endpoint that stands in for the request's presigned response URL."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from moto import mock_aws

from configuration_guard import handler
from configuration_guard.guard import to_properties
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.store.state import IndexStateStore, Operation

TABLE = "FileMetaData"
BUCKET = "fileupload.a"
STACK_TEMPLATE = json.dumps({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}})


class ResponseEndpoint:
    """Keeps every body PUT to it, as S3 keeps CloudFormation's response object."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                length = int(self.headers["Content-Length"])
                endpoint.bodies.append(json.loads(self.rfile.read(length)))
                endpoint.headers.append(dict(self.headers))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/response?signature=x"

    @property
    def only(self) -> dict[str, Any]:
        (body,) = self.bodies
        return body


@pytest.fixture
def endpoint() -> Iterator[ResponseEndpoint]:
    endpoint = ResponseEndpoint()
    thread = threading.Thread(target=endpoint.server.serve_forever, daemon=True)
    thread.start()
    yield endpoint
    endpoint.server.shutdown()
    endpoint.server.server_close()


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    """moto's DynamoDB (no table yet) and a CloudFormation stack for the guard to ask its status."""
    with mock_aws():
        stack_id = boto3.client("cloudformation").create_stack(
            StackName="S3FileSearch", TemplateBody=STACK_TEMPLATE
        )["StackId"]
        yield {"stack_id": stack_id, "dynamodb": boto3.client("dynamodb")}


def create_table(dynamodb: Any) -> None:
    dynamodb.create_table(**schema.create_table_request(TABLE))


def properties(**placement: Any) -> dict[str, str]:
    return to_properties(ShardPlacement(**placement), table_name=TABLE, bucket_name=BUCKET)


def call(
    aws: dict[str, Any],
    endpoint: ResponseEndpoint,
    request: str,
    new: dict[str, str] | None,
    old: dict[str, str] | None = None,
    lambda_context: Any = None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "RequestType": request,
        "ResponseURL": endpoint.url,
        "StackId": aws["stack_id"],
        "RequestId": "request-1",
        "ResourceType": "Custom::IndexLayoutGuard",
        "LogicalResourceId": "IndexLayoutGuardC0E62A00",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:guard",
            **(new or {}),
        },
    }
    if request != "Create":
        event["PhysicalResourceId"] = "index-configuration-guard-IndexLayoutGuardC0E62A00"
    if old is not None:
        event["OldResourceProperties"] = {"ServiceToken": "arn:aws:lambda:...", **old}
    handler.lambda_handler(event, lambda_context)
    return endpoint.only


def z_order_pending(aws: dict[str, Any]) -> bool:
    state = IndexStateStore(aws["dynamodb"], TABLE).read(BUCKET)
    return state is not None and state.z_order_pending


def test_a_raise_of_every_count_is_accepted(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    create_table(aws["dynamodb"])
    old = properties(bucket_shards=16, hot_users={"bot": 4})
    new = properties(bucket_shards=32, hot_users={"bot": 8, "crawler": 2})

    answer = call(aws, endpoint, "Update", new, old)

    assert answer["Status"] == "SUCCESS"
    assert answer["PhysicalResourceId"] == "index-configuration-guard-IndexLayoutGuardC0E62A00"
    assert (answer["StackId"], answer["RequestId"]) == (aws["stack_id"], "request-1")
    assert answer["LogicalResourceId"] == "IndexLayoutGuardC0E62A00"
    assert answer["Data"] == {"ZOrderPendingMarked": "false"}
    # The presigned URL was signed for an empty content type.
    assert endpoint.headers[0].get("Content-Type", "") == ""


def test_a_lower_bucket_shard_count_fails_the_deployment_naming_both_values(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    answer = call(aws, endpoint, "Update", properties(bucket_shards=8), properties(bucket_shards=16))

    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == (
        "bucketIndexShards cannot go from 16 to 8: the entries of shards 8-15 would vanish from every "
        "search; raise it or keep 16"
    )


def test_a_lower_hot_user_count_fails_naming_the_user_and_both_values(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    old = properties(bucket_shards=16, hot_users={"bot": 8})
    new = properties(bucket_shards=16, hot_users={"bot": 7})

    answer = call(aws, endpoint, "Update", new, old)

    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == (
        "hotUsers['bot'] cannot go from 8 to 7: the entries of shard 7 of 'bot' would vanish from every "
        "search; raise it or keep 8"
    )


def test_removing_a_hot_user_fails_naming_it(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    old = properties(bucket_shards=16, hot_users={"bot": 8, "crawler": 2})
    new = properties(bucket_shards=16, hot_users={"crawler": 2})

    answer = call(aws, endpoint, "Update", new, old)

    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == (
        "hotUsers cannot drop 'bot' (from 8 shards to 1): the entries of shards 1-7 of 'bot' would vanish "
        "from every search; keep it at 8 or more"
    )


def test_every_refused_change_is_named_at_once(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    old = properties(bucket_shards=16, hot_users={"bot": 8})
    new = properties(bucket_shards=4, hot_users={})

    reason = call(aws, endpoint, "Update", new, old)["Reason"]

    assert "bucketIndexShards cannot go from 16 to 4" in reason
    assert "hotUsers cannot drop 'bot'" in reason


def test_a_refused_change_marks_nothing(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    create_table(aws["dynamodb"])
    old = properties(bucket_shards=16)
    new = properties(bucket_shards=8, multi_attribute_index=True)

    assert call(aws, endpoint, "Update", new, old)["Status"] == "FAILED"
    assert not z_order_pending(aws)


def test_a_rollback_to_a_lower_count_is_let_through(aws: dict[str, Any]) -> None:
    """A deployment that raised a count and failed later is rolled back; refusing would strand the stack."""
    event = {
        "RequestType": "Update",
        "StackId": aws["stack_id"],
        "ResourceProperties": properties(bucket_shards=16),
        "OldResourceProperties": properties(bucket_shards=32),
    }
    # moto's stacks never roll back: the status is the one thing stood in for here.
    assert handler.handle(
        event, dynamodb=aws["dynamodb"], stack_status=lambda _: "UPDATE_ROLLBACK_IN_PROGRESS"
    )
    with pytest.raises(handler.PlacementChangeRefusedError):
        handler.handle(event, dynamodb=aws["dynamodb"], stack_status=lambda _: "UPDATE_IN_PROGRESS")


def test_switching_the_z_order_index_on_marks_the_bucket_pending(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    create_table(aws["dynamodb"])
    old = properties(bucket_shards=16)
    new = properties(bucket_shards=16, multi_attribute_index=True)

    answer = call(aws, endpoint, "Update", new, old)

    assert answer["Status"] == "SUCCESS"
    assert answer["Data"] == {"ZOrderPendingMarked": "true"}
    assert z_order_pending(aws)


def test_a_run_in_progress_keeps_its_state_when_the_bucket_is_marked(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    create_table(aws["dynamodb"])
    store = IndexStateStore(aws["dynamodb"], TABLE)
    store.start(BUCKET, Operation.BACKFILL, "run-1")

    call(aws, endpoint, "Update", properties(multi_attribute_index=True), properties())

    state = store.read(BUCKET)
    assert state is not None
    assert state.z_order_pending
    assert state.run_id == "run-1"


@pytest.mark.parametrize(("old", "new"), [(True, True), (True, False), (False, False)])
def test_no_switch_on_marks_nothing(
    aws: dict[str, Any], endpoint: ResponseEndpoint, old: bool, new: bool
) -> None:
    create_table(aws["dynamodb"])

    answer = call(
        aws, endpoint, "Update", properties(multi_attribute_index=new), properties(multi_attribute_index=old)
    )

    assert answer["Status"] == "SUCCESS"
    assert not z_order_pending(aws)


def test_a_new_stack_marks_nothing_and_creates_no_table(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    answer = call(aws, endpoint, "Create", properties(bucket_shards=16, multi_attribute_index=True))

    assert answer["Status"] == "SUCCESS"
    assert answer["Data"] == {"ZOrderPendingMarked": "false"}
    assert aws["dynamodb"].list_tables()["TableNames"] == []


def put_entry(dynamodb: Any, key: str, *, deleted: bool = False) -> None:
    item: dict[str, Any] = {schema.OBJECT_KEY: {"S": key}}
    if deleted:
        item[schema.DELETED] = {"BOOL": True}
    else:
        item |= {schema.BUCKET_NAME: {"S": BUCKET}, schema.SIZE: {"N": "12"}}
    dynamodb.put_item(TableName=TABLE, Item=item)


def test_an_upgraded_stack_with_entries_is_marked_on_create(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    """A stack deployed before the guard existed: the guard is created, the table is already full."""
    create_table(aws["dynamodb"])
    put_entry(aws["dynamodb"], "USER001_FILE001.txt")

    answer = call(aws, endpoint, "Create", properties(bucket_shards=16, multi_attribute_index=True))

    assert answer["Data"] == {"ZOrderPendingMarked": "true"}
    assert z_order_pending(aws)


def test_a_table_of_tombstones_and_state_records_holds_no_entry(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    create_table(aws["dynamodb"])
    put_entry(aws["dynamodb"], "USER001_gone.txt", deleted=True)
    IndexStateStore(aws["dynamodb"], TABLE).start(BUCKET, Operation.BACKFILL, "run-1")

    answer = call(aws, endpoint, "Create", properties(multi_attribute_index=True))

    assert answer["Data"] == {"ZOrderPendingMarked": "false"}
    assert not z_order_pending(aws)


def test_an_upgraded_stack_without_the_z_order_index_is_not_marked(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    create_table(aws["dynamodb"])
    put_entry(aws["dynamodb"], "USER001_FILE001.txt")

    assert call(aws, endpoint, "Create", properties(bucket_shards=16))["Status"] == "SUCCESS"
    assert not z_order_pending(aws)


def test_delete_always_succeeds(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    answer = call(aws, endpoint, "Delete", {"BucketIndexShards": "not a number"})

    assert answer["Status"] == "SUCCESS"


def test_properties_that_are_no_placement_fail_naming_the_setting(
    aws: dict[str, Any], endpoint: ResponseEndpoint
) -> None:
    answer = call(aws, endpoint, "Create", {**properties(), "BucketIndexShards": "0"})

    assert answer["Status"] == "FAILED"
    assert "BUCKET_INDEX_SHARDS must be a whole number from 1 to 256, got 0" in answer["Reason"]


def test_an_unexpected_error_still_answers(aws: dict[str, Any], endpoint: ResponseEndpoint) -> None:
    """A custom resource that never answers holds the stack for an hour."""
    event_without_old_properties = properties(bucket_shards=8)

    answer = call(aws, endpoint, "Update", event_without_old_properties)

    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("the shard placement guard failed: KeyError('OldResourceProperties')")
