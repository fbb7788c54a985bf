"""The entries' data access: the conditional writes of the write path, and the reads of a backfill or a
reconcile (a Scan of the table, a BatchGetItem of some keys). Items go in and come out as plain values.

A failed condition is an answer, not an error: each write says whether it applied, and the writer's
(`write_returning_old`) also returns the item as it was, which DynamoDB sends back at no read cost
(`ReturnValuesOnConditionCheckFailure`). Any other ClientError is raised.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from file_index.rules import schema
from file_index.rules.objects import is_record_key
from file_index.store import unprocessed
from file_index.store.sdk import DynamoDBClient, serialize

# BatchGetItem's limit per request.
MAX_BATCH_GET = 100
CONDITION_FAILED = "ConditionalCheckFailedException"

_deserializer = TypeDeserializer()


def plain_item(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item (attribute values) as plain values."""
    return {name: _deserializer.deserialize(value) for name, value in raw.items()}


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def write_returning_old(
    dynamodb: DynamoDBClient,
    table_name: str,
    operation: Literal["put_item", "update_item"],
    **request: Any,
) -> tuple[bool, dict[str, Any] | None]:
    """A conditional PutItem or UpdateItem: (True, the item it replaced as `ReturnValues` gave it, None
    when none) when it applied, (False, the item as it was when the condition failed, None: there was
    none) when the condition failed."""
    try:
        response = getattr(dynamodb, operation)(
            TableName=table_name, ReturnValuesOnConditionCheckFailure="ALL_OLD", **request
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != CONDITION_FAILED:
            raise
        raw = error.response.get("Item")
        return False, None if raw is None else plain_item(raw)
    raw = response.get("Attributes") if isinstance(response, Mapping) else None
    return True, None if not raw else plain_item(raw)


def put_if(
    dynamodb: DynamoDBClient,
    table_name: str,
    item: Mapping[str, Any],
    condition: str,
    names: Mapping[str, str],
    values: Mapping[str, Any] | None = None,
) -> bool:
    """A PutItem of `item` under `condition`; False when the condition failed (nothing written)."""
    try:
        dynamodb.put_item(
            TableName=table_name,
            Item=serialize(item),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            **({"ExpressionAttributeValues": serialize(values)} if values else {}),
        )
    except ClientError as error:
        if error_code(error) == CONDITION_FAILED:
            return False
        raise
    return True


def update_if(
    dynamodb: DynamoDBClient,
    table_name: str,
    object_key: str,
    update: str,
    condition: str,
    names: Mapping[str, str],
    values: Mapping[str, Any],
) -> bool:
    """An UpdateItem of the entry of `object_key` under `condition`; False when the condition failed."""
    try:
        dynamodb.update_item(
            TableName=table_name,
            Key=serialize({schema.OBJECT_KEY: object_key}),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=serialize(values),
        )
    except ClientError as error:
        if error_code(error) == CONDITION_FAILED:
            return False
        raise
    return True


def scan_index(dynamodb: DynamoDBClient, table_name: str) -> Iterator[dict[str, Any]]:
    """Every object item of the table (entries and tombstones), state records left out; one Scan."""
    paginator = dynamodb.get_paginator("scan")
    for page in paginator.paginate(TableName=table_name, ConsistentRead=True):
        for raw in page.get("Items", []):
            if not is_record_key(raw[schema.OBJECT_KEY]["S"]):
                yield plain_item(raw)


def get_items(dynamodb: DynamoDBClient, table_name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The items of `keys` (absent keys are absent), with BatchGetItem, consistent, unprocessed retried."""
    found: dict[str, dict[str, Any]] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), MAX_BATCH_GET):
        request: dict[str, Any] = {
            table_name: {
                "Keys": [{schema.OBJECT_KEY: {"S": key}} for key in unique[start : start + MAX_BATCH_GET]],
                "ConsistentRead": True,
            }
        }
        for raw in unprocessed.batch_get(dynamodb, request).raise_if_left().of(table_name):
            item = plain_item(raw)
            found[item[schema.OBJECT_KEY]] = item
    return found
