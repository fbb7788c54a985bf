"""The readers' shard threads share one table client, and every request reaches it with its conditions
built already (`file_index.store.expressions`): the client's own condition builder, one per client and reset
by every call, would number two threads' placeholders over each other.

The check is where the client takes a call (`provide-client-params`, before it builds anything): no
request of a name list, a folder list or a filtered bucket list read in parallel carries a `Key`/`Attr`
condition object, and the answers are the brute-force ones.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from boto3.dynamodb.conditions import Attr, ConditionBase, Key

from file_index.read.file_queries import BucketQuery
from file_index.read.folder_reader import FolderReader
from file_index.read.name_query import NameQuery
from file_index.read.reader import FileReader
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from file_index.store.expressions import SharedClient, built
from tests.integration.file_index import terms_world
from tests.integration.file_index.terms_world import Engine, World, pages

pytestmark = pytest.mark.xdist_group("shared-client")

engine = terms_world.engine  # moto's and DynamoDB Local's tables

NAMES = ("report q3.pdf", "holiday photo.jpg", "report draft.docx", "budget.xlsx", "reports/old report.txt")


class ConditionObjects:
    """Records the parameters that reach `client` as condition objects, from every thread."""

    def __init__(self, client: Any) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()
        client.meta.events.register("provide-client-params.dynamodb", self._record)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.seen += [name for name, value in params.items() if isinstance(value, ConditionBase)]


@pytest.fixture
def world(engine: Engine) -> World:
    # A folder list reads the key items, which `World` writes beside the term items.
    world = World(engine, "bucket-shared", ShardPlacement(bucket_shards=8), users=("anna",))
    for index in range(60):
        world.put(f"anna/{index}/{NAMES[index % len(NAMES)]}", user="anna", size=100 * index)
    return world


def test_lists_read_in_parallel_hand_the_client_built_conditions_only(world: World) -> None:
    with ThreadPoolExecutor(max_workers=8) as executor:
        reader = world.reader(executor=executor)
        recorded = ConditionObjects(reader.client.client)
        name_query = NameQuery(
            listing=BucketQuery(bucket=world.bucket, min_size=1000, max_size=4000), words=("rep",)
        )
        answered = [
            item[schema.OBJECT_KEY] for page in pages(reader, name_query, limit=3) for item in page.items
        ]
        folder = FolderReader(reader).list_files(
            NameQuery(
                listing=BucketQuery(bucket=world.bucket), prefix="anna/", delimiter="/", ascending=True
            ),
            limit=100,
        )
        table = world.engine.resource.Table(world.engine.table)
        entries = FileReader(table, world.placement, executor=executor)
        recorded_entries = ConditionObjects(table.meta.client)
        bucket_page = entries.list_files(
            BucketQuery(bucket=world.bucket, min_size=1000, max_size=4000), limit=100
        )

    assert answered == world.truth(name_query)
    assert folder.common_prefixes == sorted(f"anna/{index}/" for index in range(60))
    assert sorted(item[schema.OBJECT_KEY] for item in bucket_page.items) == sorted(
        key for key, entry in world.entries.items() if 1000 <= entry[schema.SIZE] <= 4000
    )
    assert recorded.seen == []
    assert recorded_entries.seen == []


def test_built_numbers_a_requests_conditions_once_and_keeps_its_own_names() -> None:
    request = {
        "TableName": "t",
        "KeyConditionExpression": Key("bucketName").eq("b") & Key("uploadDate").between("a", "z"),
        "FilterExpression": Attr("size").between(1, 9),
        "ProjectionExpression": "#k",
        "ExpressionAttributeNames": {"#k": "objectKey"},
    }

    done = built(request)

    assert isinstance(done["KeyConditionExpression"], str)
    assert isinstance(done["FilterExpression"], str)
    names = done["ExpressionAttributeNames"]
    assert names["#k"] == "objectKey"
    assert sorted(names.values()) == sorted(["objectKey", "bucketName", "uploadDate", "size"])
    assert sorted(done["ExpressionAttributeValues"].values(), key=str) == sorted(
        ["b", "a", "z", 1, 9], key=str
    )
    assert request["FilterExpression"] is not done["FilterExpression"], "the request given is left as it was"


def test_built_leaves_a_request_without_condition_objects_as_it_is() -> None:
    request = {
        "TableName": "t",
        "KeyConditionExpression": "#p = :p",
        "ExpressionAttributeValues": {":p": "b"},
    }

    assert built(request) == request


def test_a_shared_client_passes_what_is_not_an_operation_through(engine: Engine) -> None:
    client = engine.resource.Table(engine.table).meta.client
    shared = SharedClient(SharedClient(client))

    assert shared.client is client
    assert shared.meta is client.meta
    assert shared.exceptions is client.exceptions
    assert (
        shared.query(
            TableName=engine.table,
            IndexName="bucketName-size-index",
            KeyConditionExpression=Key("bucketName").eq("nothing here"),
        )["Items"]
        == []
    )
