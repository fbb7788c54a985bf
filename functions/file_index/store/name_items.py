"""The name table's conditional delete (`file_index.write.name_sync` decides which items go).

BatchWriteItem takes no condition, so it is one DeleteItem. A failed condition is an answer (the item
was written again meanwhile and stays): it returns whether the item was removed. (The writer's removals
are unconditional BatchWriteItems, checked against the entry afterwards: `file_index.write.names`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from file_index.rules import schema
from file_index.store.sdk import serialize


def delete_if_unchanged(client: Any, table_name: str, key: Mapping[str, Any], since: str) -> bool:
    """Delete the item of `key` where its `since` is still `since` (or absent): unchanged since read."""
    return _delete_where(client, table_name, key, "attribute_not_exists(#since) OR #since = :value", since)


def _delete_where(client: Any, table_name: str, key: Mapping[str, Any], condition: str, value: str) -> bool:
    """Delete the item of `key` where `condition` holds of its `since` (`#since`) and `value` (`:value`)."""
    try:
        client.delete_item(
            TableName=table_name,
            Key=serialize(dict(key)),
            ConditionExpression=condition,
            ExpressionAttributeNames={"#since": schema.NAME_SINCE},
            ExpressionAttributeValues={":value": {"S": value}},
        )
    except client.exceptions.ConditionalCheckFailedException:
        return False
    return True
