"""Condition expressions built per request, so a page's shard threads can share one table client.

A DynamoDB resource's client (`table.meta.client`) turns `Key(...)` and `Attr(...)` conditions into
expression strings, but with one builder per client whose placeholder counters every call first resets.
Two threads querying at once through that client can therefore number their placeholders over each other:
a key condition's `#n0` comes to name the filter's attribute, and DynamoDB refuses the request or, worse,
reads something else. `built(request)` numbers a request's conditions with a builder of its own and hands
the client strings only (values stay Python values: the client still serializes them). `SharedClient`
does it for every call of a client the readers share between threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from boto3.dynamodb.conditions import ConditionBase, ConditionExpressionBuilder
from botocore.client import BaseClient

# The operations that take conditions.
OPERATIONS = frozenset({"query", "scan", "put_item", "update_item", "delete_item"})
# A request's condition parameters, and whether each is a key condition.
CONDITIONS = (("KeyConditionExpression", True), ("FilterExpression", False), ("ConditionExpression", False))


def built(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` with its `Key`/`Attr` conditions as expression strings, their placeholders merged into
    `ExpressionAttributeNames` and `ExpressionAttributeValues`."""
    done = dict(request)
    if not any(isinstance(done.get(name), ConditionBase) for name, _ in CONDITIONS):
        return done
    builder = ConditionExpressionBuilder()
    names = dict(done.get("ExpressionAttributeNames") or {})
    values = dict(done.get("ExpressionAttributeValues") or {})
    for name, is_key_condition in CONDITIONS:
        condition = done.get(name)
        if isinstance(condition, ConditionBase):
            expression = builder.build_expression(condition, is_key_condition=is_key_condition)
            done[name] = expression.condition_expression
            names.update(expression.attribute_name_placeholders)
            values.update(expression.attribute_value_placeholders)
    if names:
        done["ExpressionAttributeNames"] = names
    if values:
        done["ExpressionAttributeValues"] = values
    return done


class SharedClient:
    """A table resource's client, safe to call from several threads at once: every call's conditions are
    `built` before the client sees them (its own builder then never numbers anything)."""

    def __init__(self, client: Any) -> None:
        self._client = client.client if isinstance(client, SharedClient) else client

    @property
    def client(self) -> Any:
        return self._client

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        # A stand-in of a client (the bench's tables in memory) reads condition objects itself.
        if name not in OPERATIONS or not isinstance(self._client, BaseClient):
            return attribute  # no condition to build: `batch_get_item`, `meta`, `exceptions`...
        return lambda **request: attribute(**built(request))
