"""Each list query reads only what it returns: DynamoDB's ScannedCount equals Count on every Query call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from boto3.dynamodb.conditions import Attr, Key

from search import composition
from tests.integration.search.conftest import BUCKET, SearchApi, both_engines

pytestmark = both_engines


@pytest.fixture
def query_calls(api: SearchApi) -> Iterator[list[dict[str, Any]]]:
    """The parsed response of every DynamoDB Query the handler makes (a botocore hook on its clients)."""
    calls: list[dict[str, Any]] = []

    def record(parsed: dict[str, Any], **_: Any) -> None:
        calls.append(parsed)

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    session = boto3.DEFAULT_SESSION
    assert session is not None
    composition.file_search.cache_clear()  # the handler's clients are created after the hook is in place
    session.events.register("after-call.dynamodb.Query", record)
    yield calls
    session.events.unregister("after-call.dynamodb.Query", record)
    composition.file_search.cache_clear()


def _fill(api: SearchApi) -> None:
    with api.table.batch_writer() as batch:
        for n in range(40):
            batch.put_item(
                Item={
                    "objectKey": f"USER00{n % 2}/f{n:02d}",
                    "bucketName": BUCKET if n % 4 else "fileupload.b",
                    "size": n * 10,
                    "uploadUser": f"USER00{n % 2}",
                    "uploadDate": f"2017-08-{20 + n % 3}T09:15:{n:02d}.000Z",
                }
            )
        for n in range(10):  # tombstones: no GSI keys, so the indexes never hold them
            batch.put_item(Item={"objectKey": f"USER000/gone{n}", "deleted": True, "sequencer": "01"})


@pytest.mark.parametrize(
    "path",
    [
        "/files?user=USER000",
        "/files?user=USER000&order=desc",
        "/files?user=USER000&date=2017-08-21",
        "/files?user=USER000&from=2017-08-20T09:15:10Z&to=2017-08-22",
        "/files?user=USER000&from=2017-08-21",
        "/files?user=USER000&to=2017-08-21",
        f"/files?bucket={BUCKET}",
        f"/files?bucket={BUCKET}&order=asc",
        f"/files?bucket={BUCKET}&minSize=50&maxSize=250",
        f"/files?bucket={BUCKET}&minSize=100",
        f"/files?bucket={BUCKET}&maxSize=100",
        "/files?user=USER000&limit=3",
        f"/files?bucket={BUCKET}&limit=4&minSize=10",
    ],
)
def test_every_query_reads_only_the_items_it_returns(
    api: SearchApi, query_calls: list[dict[str, Any]], path: str
) -> None:
    _fill(api)
    returned = 0
    cursor = None
    while True:
        response = api.get(path + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert response.status == 200, response.body
        returned += len(response.json["items"])
        cursor = response.json["nextCursor"]
        if cursor is None:
            break

    assert returned > 0
    assert query_calls, "no DynamoDB Query was made"
    assert all(call["ScannedCount"] == call["Count"] for call in query_calls)
    assert sum(call["Count"] for call in query_calls) == returned


def test_the_measure_detects_a_filter_expression(api: SearchApi) -> None:
    """Control: both engines report ScannedCount > Count when a filter drops items, so the test can fail."""
    _fill(api)
    response = api.table.query(
        IndexName="uploadUser-uploadDate-index",
        KeyConditionExpression=Key("uploadUser").eq("USER000"),
        FilterExpression=Attr("size").gt(100),
    )
    assert response["ScannedCount"] > response["Count"]
