"""moto's DynamoDB as the local stack serves it (`local_stack.moto_server.moto_changes`): a conditional write
is atomic, as DynamoDB's are, while many requests arrive at once.

moto's server answers each request on a thread of its own, and its DynamoDB reads an item, checks the
condition and writes with no lock between: two compare-and-set updates of one item could both pass. The
test widens that gap (a pause once the condition has judged the item, before the write) so two updates
meet in it whenever the server lets them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import boto3
import pytest
from moto.dynamodb import models

from tests.integration.local_stack.conftest import moto_server_with

THREADS = 4
UPDATES = 10  # each thread's successful compare-and-set updates
PAUSE_S = 0.02


class SlowCondition:
    """A parsed condition that pauses once it has judged the item, before moto writes."""

    def __init__(self, condition: Any) -> None:
        self._condition = condition

    def expr(self, item: Any) -> bool:
        passed = bool(self._condition.expr(item))
        time.sleep(PAUSE_S)
        return passed


@pytest.fixture
def endpoint() -> Iterator[str]:
    parse = models.create_condition_expression_parser

    def slow_parse(*args: Any, **kwargs: Any) -> Any:
        parser = parse(*args, **kwargs)
        condition = parser.parse
        parser.parse = lambda: SlowCondition(condition())  # type: ignore[method-assign,assignment,return-value]
        return parser

    with moto_server_with(
        mock.patch.object(models, "create_condition_expression_parser", slow_parse)
    ) as endpoint:
        yield endpoint


def test_compare_and_set_updates_from_many_threads_are_never_lost(endpoint: str) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    dynamodb.create_table(
        TableName="counter",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    key = {"k": {"S": "count"}}
    dynamodb.put_item(TableName="counter", Item={**key, "v": {"N": "0"}})

    def count_up(_: int) -> None:
        client = boto3.session.Session().client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        done = 0
        while done < UPDATES:
            seen = int(client.get_item(TableName="counter", Key=key, ConsistentRead=True)["Item"]["v"]["N"])
            try:
                client.update_item(
                    TableName="counter",
                    Key=key,
                    UpdateExpression="SET v = :new",
                    ConditionExpression="v = :seen",
                    ExpressionAttributeValues={":new": {"N": str(seen + 1)}, ":seen": {"N": str(seen)}},
                )
                done += 1
            except client.exceptions.ConditionalCheckFailedException:
                continue  # another thread counted first: read again

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        list(pool.map(count_up, range(THREADS)))

    final = int(dynamodb.get_item(TableName="counter", Key=key)["Item"]["v"]["N"])
    assert final == THREADS * UPDATES, "an update that passed its condition was overwritten"
