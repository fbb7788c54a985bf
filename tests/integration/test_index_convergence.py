"""The law of the whole index: listings, backfills, live events and repairs, in any interleaving, converge
to the bucket.

A random history runs for real on a moto bucket (never versioned; versioning enabled; enabled, then
suspended, perhaps enabled and suspended again): uploads and overwrites of a few keys, deletes (delete
markers when versioned), permanent deletes of any version (the current one, noncurrent ones, delete
markers, the "null" version of a suspended bucket). `tests.integration.history` builds the S3 event of
each operation as S3 sends it (sequencer, versionId, size, eTag) and takes listing snapshots between
operations, as a backfill listing the bucket at that moment sees it.

Then, once the whole history has run (an indexer that is behind: every lookup and every reconcile sees
the bucket's final state), these are interleaved in a random order:

- the events, each delivered one or more times, through the indexer Lambda's handler in SQS batches;
- the backfill writes of every snapshot (`listed_objects.backfill_object`, one per listed object), so a
  listing taken in the middle of the history (a backfill while uploads go on) may land before or after
  any event;
- reconcile runs (`file_search_admin.reconcile.run_reconcile`, as the command runs it), at any point.

Two properties, both on moto and on DynamoDB Local, under the unsharded placement, under a scaled one
(4 bucket shards, a hot user with 3 shards, the Z-order index on) that the indexer, the backfill writes
and the reconciles all use, and under a raise: the unsharded placement until a point drawn among the steps,
then 16 bucket shards and a hot user with 4 (a deployment raising `bucketIndexShards` and adding a hot user
while events, backfills and reconciles go on: a key created at 1 shard may be overwritten, deleted and
created again at 16):

- without any final step, once every event has been delivered the index equals the bucket: "after the
  backfill finishes and the queue drains, the index equals the bucket, whatever happened during the run";
- after one more reconcile it still does, and a second reconcile finds nothing to repair.

"Equals the bucket": every key whose current version (S3's HEAD) exists has a live entry with that
version's size, eTag and versionId, every other key has none; the bucket and user indexes (what searches
read) hold exactly the live keys, so neither a tombstone nor the index state record shows in a search.
Searches are read as a reader of the placement reads them (every shard value of the bucket or the user; a
hot user's shard `u#k` keeps only items whose `userShard` is k) and compared by the public bucket and
user; with the Z-order index on, every live entry carries its own `zAddress` and the Z-order index of the
bucket's shards holds exactly the live keys. The name index holds exactly what `index-names` would build
from the live entries (each entry's items under its stored bucket and user partitions, nothing else), and
every list by a word, by a folder (`prefix`) and by sub-folders (`delimiter`), of the bucket and of each
user, answers each live file once, page after page.

Examples: INDEX_CONVERGENCE_EXAMPLES (default 5) per engine and kind of bucket.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import boto3
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.read.name_query import NameQuery
from file_index.read.name_reader import NameReader
from file_index.read.reader import FileReader
from file_index.rules import schema
from file_index.rules.key_pattern import KeyPattern
from file_index.rules.name_items import entry_items, name_of
from file_index.rules.name_terms import folded_words, matches
from file_index.rules.objects import NULL_VERSION
from file_index.rules.placement import ShardPlacement
from file_index.store.sdk import DynamoDBClient, dynamodb_client
from file_index.write.differences import expected_z_address, is_live
from file_index.write.listed_objects import ListedObject, backfill_object
from file_index.write.name_sync import sync_names
from file_index.write.names import NameIndex
from file_search_admin.reconcile import ReconcileSummary, run_reconcile
from indexer import handler
from tests.conftest import FakeLambdaContext
from tests.integration.conftest import DynamoDBLocal
from tests.integration.history import MotoBucket, Snapshot, Versioning, operation_kinds, play
from tests.integration.indexer.notifications import SqsQueue, notification, read_items
from tests.integration.indexer.test_convergence import VersionedOperation, keys_for, versioned_operations

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)

EXAMPLES = int(os.environ.get("INDEX_CONVERGENCE_EXAMPLES", "5"))
PLACEMENT = KeyPattern.parse(None)
# DynamoDB Local keeps one database per access key: the handler must sign as the test's clients do.
FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
_example_ids = itertools.count()
convergence_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # Hypothesis's explain phase traces every line moto runs: minutes per failure, and nothing to add.
    phases=[phase for phase in Phase if phase is not Phase.explain],
)


# The writers' shard placements the property runs under; "scaled" makes the first user of every example hot,
# "raised" starts unsharded and raises (`raised_placement_for`) at a step the example draws.
INDEX_PLACEMENTS = ("unsharded", "scaled", "raised")
# Folder and sub-folder lists are read in pages this small, so that every list crosses pages.
FOLDER_PAGE = 2


def _hot_user(keys: list[str]) -> str:
    hot = PLACEMENT.split(keys[0]).upload_user
    assert hot is not None
    return hot


def index_placement_for(name: str, keys: list[str]) -> ShardPlacement:
    if name in ("unsharded", "raised"):
        return ShardPlacement()
    return ShardPlacement(bucket_shards=4, hot_users={_hot_user(keys): 3}, multi_attribute_index=True)


def raised_placement_for(name: str, keys: list[str]) -> ShardPlacement | None:
    """The placement a "raised" example switches to: 16 bucket shards and a newly hot user."""
    if name != "raised":
        return None
    return ShardPlacement(bucket_shards=16, hot_users={_hot_user(keys): 4})


@dataclass(frozen=True)
class Deliver:
    """One delivery of one S3 record (a duplicate is another `Deliver` of the same record)."""

    record: dict[str, Any]


@dataclass(frozen=True)
class Backfill:
    """The backfill write of one object of a listing snapshot."""

    snapshot: Snapshot
    obj: ListedObject


@dataclass(frozen=True)
class Reconcile:
    """A reconcile run of the whole bucket."""


@dataclass(frozen=True)
class RaiseShards:
    """A deployment of a larger placement: every later step writes and reads under `placement`."""

    placement: ShardPlacement


Step = Deliver | Backfill | Reconcile | RaiseShards


@dataclass
class World:
    """One example's bucket, table and indexer."""

    s3: Any
    dynamodb: DynamoDBClient
    table: str
    bucket: MotoBucket
    keys: list[str]
    context: FakeLambdaContext
    shard_placement: ShardPlacement
    name_table: str

    @property
    def names(self) -> NameIndex:
        return NameIndex(self.dynamodb, self.name_table, entry_table=self.table)

    def raise_placement(self, placement: ShardPlacement) -> None:
        """Deploy `placement`: the indexer starts cold with it; backfills, reconciles and reads use it."""
        self.shard_placement = placement
        os.environ.update(placement.to_env())
        _fresh_handler()

    def deliver(self, records: list[dict[str, Any]]) -> None:
        """One SQS batch, one record per message, through the indexer Lambda's handler."""
        queue = SqsQueue()
        queue.send(*(notification(record) for record in records))
        failed = queue.deliver(handler.lambda_handler, self.context, batches=[len(records)])
        assert failed == [], "no message may fail without faults"

    def backfill(self, obj: ListedObject) -> None:
        backfill_object(
            self.dynamodb, self.table, self.bucket.name, obj, PLACEMENT, self.shard_placement, self.names
        )

    def reconcile(self) -> ReconcileSummary:
        return run_reconcile(
            s3=self.s3,
            dynamodb=self.dynamodb,
            bucket=self.bucket.name,
            table=self.table,
            key_pattern=PLACEMENT,
            concurrency=2,
            shard_placement=self.shard_placement,
            names=self.names,
        )

    def name_items(self) -> set[tuple[str, str]]:
        """Every item of the name index, by its key."""
        paginator = self.dynamodb.get_paginator("scan")
        return {
            (raw[schema.NAME_SCOPE]["S"], raw[schema.NAME_SORT]["S"])
            for page in paginator.paginate(TableName=self.name_table, ConsistentRead=True)
            for raw in page["Items"]
        }

    def name_items_with_users(self) -> set[tuple[str, str, str | None]]:
        """Every item of the name index, by its key and its user partition (`nameUser`)."""
        paginator = self.dynamodb.get_paginator("scan")
        return {
            (raw[schema.NAME_SCOPE]["S"], raw[schema.NAME_SORT]["S"], raw.get(schema.NAME_USER, {}).get("S"))
            for page in paginator.paginate(TableName=self.name_table, ConsistentRead=True)
            for raw in page["Items"]
        }

    def name_mismatches(self, live: set[str], items: dict[str, Any]) -> list[str]:
        """How name searches differ from the bucket: the name items against what `index-names` would
        build, each word of each key's name, and the folder lists, of the bucket and of each user."""
        problems = []
        held = self.name_items()
        for key in live:
            item = items.get(key)
            if item is None or not is_live(item):
                continue  # told by the entry checks
            wanted = {(i[schema.NAME_SCOPE], i[schema.NAME_SORT]) for i in entry_items(item, "")}
            if not wanted <= held:
                problems.append(f"{key!r} lacks name items {sorted(wanted - held)}")
        built = {
            (i[schema.NAME_SCOPE], i[schema.NAME_SORT], i.get(schema.NAME_USER))
            for item in items.values()
            if item is not None and is_live(item)
            for i in entry_items(item, "")
        }
        extra = self.name_items_with_users() - built
        if extra:
            problems.append(f"the name index holds items index-names would not build: {sorted(extra)}")
        table = boto3.resource("dynamodb").Table(self.table)
        reader = NameReader(
            table.meta.client,
            self.table,
            self.name_table,
            placement=self.shard_placement,
            entries=FileReader(table, self.shard_placement),
        )
        every_word = {
            word for key in self.keys for word in folded_words(name_of(PLACEMENT.split(key).file_id))
        }
        for word in sorted(every_word):
            truth = {key for key in live if matches(name_of(PLACEMENT.split(key).file_id), [word])}
            scopes: list[Any] = [BucketQuery(bucket=self.bucket.name)]
            users = {PLACEMENT.split(key).upload_user for key in self.keys}
            scopes += [UserQuery(user=user) for user in users if user is not None]
            for scope in scopes:
                query = NameQuery(listing=scope, words=(word,))
                found = [item[schema.OBJECT_KEY] for item in reader.list_files(query, limit=1000).items]
                expected = (
                    truth
                    if isinstance(scope, BucketQuery)
                    else {key for key in truth if PLACEMENT.split(key).upload_user == scope.user}
                )
                if sorted(found) != sorted(expected):
                    problems.append(f"q={word!r} on {scope} answers {sorted(found)}, not {sorted(expected)}")
        for scope in scopes:
            problems += self.folder_mismatches(reader, scope, live)
        return problems

    def folder_mismatches(
        self, reader: NameReader, listing: BucketQuery | UserQuery, live: set[str]
    ) -> list[str]:
        """How the folder lists of `listing` differ from the bucket: the whole bucket or user by key
        (`prefix` ""), its top level (`delimiter` "/"), and each sub-folder, in pages of FOLDER_PAGE."""
        if isinstance(listing, UserQuery):
            live = {key for key in live if PLACEMENT.split(key).upload_user == listing.user}
        folders = {key[: key.index("/") + 1] for key in self.keys if "/" in key}
        problems = []
        for prefix, delimiter in [("", None), ("", "/"), *((folder, "/") for folder in sorted(folders))]:
            under = sorted(key for key in live if key.startswith(prefix))
            if delimiter is None:
                expected_keys, expected_folders = under, []
            else:
                expected_keys = [key for key in under if "/" not in key[len(prefix) :]]
                expected_folders = sorted(
                    {key[: key.index("/", len(prefix)) + 1] for key in under if key not in expected_keys}
                )
            query = NameQuery(listing=listing, prefix=prefix, delimiter=delimiter, ascending=True)
            found_keys: list[str] = []
            found_folders: list[str] = []
            position = None
            for _ in range(4 * len(self.keys) + 2):
                page = reader.list_files(query, limit=FOLDER_PAGE, position=position)
                found_keys += [item[schema.OBJECT_KEY] for item in page.items]
                found_folders += page.common_prefixes or []
                position = page.next_position
                if position is None:
                    break
            if (found_keys, found_folders) != (expected_keys, expected_folders):
                problems.append(
                    f"prefix={prefix!r} delimiter={delimiter!r} on {listing} answers {found_keys} and "
                    f"{found_folders}, not {expected_keys} and {expected_folders}"
                )
        return problems

    def search(self, index: schema.GlobalIndex, partitions: list[str], user: str | None = None) -> set[str]:
        """The keys a reader of the placement finds: every partition value, items read back to the public
        bucket or user (a hot user's shard keeps only its own items, as the reader does)."""
        found: set[str] = set()
        paginator = self.dynamodb.get_paginator("query")
        for partition in partitions:
            for page in paginator.paginate(
                TableName=self.table,
                IndexName=index.name,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": index.partition_key.name},
                ExpressionAttributeValues={":pk": {"S": partition}},
            ):
                for raw in page["Items"]:
                    shard = int(raw[schema.USER_SHARD]["N"]) if schema.USER_SHARD in raw else None
                    if user is not None:
                        if ShardPlacement.public_user(raw[schema.UPLOAD_USER]["S"], shard) != user:
                            continue
                    elif ShardPlacement.public_bucket(raw[schema.BUCKET_NAME]["S"]) != self.bucket.name:
                        continue
                    found.add(raw[schema.OBJECT_KEY]["S"])
        return found

    def mismatches(self) -> list[str]:
        """How the index differs from the bucket (empty: it equals it)."""
        problems = []
        items = read_items(self.dynamodb, self.table, self.keys)
        live: set[str] = set()
        for key, item in items.items():
            current = self.bucket.current(key)
            if current is None:
                if is_live(item):
                    problems.append(f"{key!r} has no current version; the index shows {item}")
                continue
            live.add(key)
            expected = (current.size, current.e_tag, current.version_id or NULL_VERSION)
            shown = None
            if item is not None and is_live(item):
                shown = (item[schema.SIZE], item.get(schema.E_TAG), item.get(schema.VERSION_ID, NULL_VERSION))
            if shown != expected:
                problems.append(f"{key!r} is (size, eTag, versionId) {expected}; the index holds {item}")
            elif item is not None and item.get(schema.Z_ADDRESS) != expected_z_address(
                item, self.shard_placement
            ):
                problems.append(f"{key!r} lacks its own zAddress: the index holds {item}")
        bucket_partitions = self.shard_placement.bucket_partitions(self.bucket.name)
        searched = self.search(schema.BUCKET_SIZE_INDEX, bucket_partitions)
        if searched != live:
            problems.append(
                f"a search of the bucket answers {sorted(searched)}, the bucket holds {sorted(live)}"
            )
        if self.shard_placement.multi_attribute_index:
            searched = self.search(schema.Z_ORDER_INDEX, bucket_partitions)
            if searched != live:
                problems.append(
                    f"the Z-order index answers {sorted(searched)}, the bucket holds {sorted(live)}"
                )
        for user in {PLACEMENT.split(key).upload_user for key in self.keys} - {None}:
            assert user is not None
            searched = self.search(schema.USER_DATE_INDEX, self.shard_placement.user_partitions(user), user)
            expected_keys = {key for key in live if PLACEMENT.split(key).upload_user == user}
            if searched != expected_keys:
                problems.append(
                    f"a search of {user!r} answers {sorted(searched)}, not {sorted(expected_keys)}"
                )
        problems += self.name_mismatches(live, items)
        return problems


@pytest.fixture(params=["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def dynamodb_endpoint(request: pytest.FixtureRequest) -> str | None:
    """None for moto's DynamoDB, else DynamoDB Local's endpoint (S3 is moto's in both cases)."""
    if request.param == "moto":
        return None
    local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
    return local.endpoint_url


@contextmanager
def world(
    endpoint: str | None,
    context: FakeLambdaContext,
    versioning: Versioning,
    placement_name: str = "unsharded",
) -> Iterator[World]:
    """A fresh bucket, table and indexer for one example (Hypothesis runs many in one test)."""
    example = next(_example_ids)
    table = f"FileMetaData-convergence-{example}"
    name_table = f"FileNameIndex-convergence-{example}"
    bucket_name = f"convergence-{versioning.value}-{example}"
    keys = keys_for(example)
    shard_placement = index_placement_for(placement_name, keys)
    env = {
        **FAKE_CREDENTIALS,
        **shard_placement.to_env(),
        "TABLE_NAME": table,
        "NAME_TABLE_NAME": name_table,
        "BUCKET_NAME": bucket_name,
        "POWERTOOLS_SERVICE_NAME": "file-indexer",
    }
    if endpoint is not None:
        # Only DynamoDB goes to DynamoDB Local; moto passes requests to other endpoints through.
        env["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    with mock_aws(), mock.patch.dict(os.environ, env):
        dynamodb = dynamodb_client()
        dynamodb.create_table(
            **schema.create_table_request(table, multi_attribute_index=shard_placement.multi_attribute_index)
        )
        dynamodb.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.1})
        dynamodb.create_table(**schema.create_name_table_request(name_table))
        dynamodb.get_waiter("table_exists").wait(TableName=name_table, WaiterConfig={"Delay": 0.1})
        s3 = boto3.client("s3")
        _fresh_handler()
        try:
            yield World(
                s3,
                dynamodb,
                table,
                MotoBucket(s3, bucket_name, versioning),
                keys,
                context,
                shard_placement,
                name_table,
            )
        finally:
            _fresh_handler()
            dynamodb.delete_table(TableName=table)
            dynamodb.delete_table(TableName=name_table)


def _fresh_handler() -> None:
    """The handler reads its configuration (table, bucket) at a cold start: start it afresh."""
    if handler.cold_start.cache_info().currsize:
        handler.cold_start().executor.shutdown()
    handler.cold_start.cache_clear()


def draw_history(versioning: Versioning, data: st.DataObject) -> list[VersionedOperation]:
    history = data.draw(versioned_operations(operation_kinds(versioning)), label="history")
    if versioning is Versioning.SUSPENDED:
        # Versioning is suspended at some point, whatever else the history does.
        at = data.draw(st.integers(0, len(history)), label="suspended after")
        history.insert(at, VersionedOperation(key_index=0, kind="suspend", size=0, pick=0))
    return history


def run_steps(world: World, steps: list[Step], batch_size: int) -> None:
    """Apply `steps` in order; consecutive deliveries go to the handler in batches of up to `batch_size`."""
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            world.deliver(pending)
            pending.clear()

    for step in steps:
        match step:
            case Deliver(record):
                pending.append(record)
                if len(pending) >= batch_size:
                    flush()
            case Backfill(_, obj):
                flush()
                world.backfill(obj)
            case Reconcile():
                flush()
                world.reconcile()
            case RaiseShards(placement):
                flush()
                world.raise_placement(placement)
    flush()


@pytest.mark.parametrize("shard_placement", INDEX_PLACEMENTS)
@pytest.mark.parametrize("versioning", list(Versioning))
@given(data=st.data())
@convergence_settings
def test_listings_backfills_events_and_repairs_converge_to_the_bucket(
    dynamodb_endpoint: str | None,
    lambda_context: FakeLambdaContext,
    versioning: Versioning,
    shard_placement: str,
    data: st.DataObject,
) -> None:
    with world(dynamodb_endpoint, lambda_context, versioning, shard_placement) as w:
        history = draw_history(versioning, data)
        snapshot_points = data.draw(st.sets(st.integers(0, len(history)), max_size=2), label="snapshots")
        played = play(w.bucket, w.keys, history, snapshot_points, data, tag=w.bucket.name)

        steps: list[Step] = [Deliver(record) for record in played.records]
        steps += [Backfill(snapshot, obj) for snapshot in played.snapshots for obj in snapshot.objects]
        steps += [Reconcile() for _ in range(data.draw(st.integers(0, 2), label="reconciles"))]
        order = data.draw(st.permutations(steps), label="order")
        raised = raised_placement_for(shard_placement, w.keys)
        if raised is not None:
            order.insert(data.draw(st.integers(0, len(order)), label="raised after"), RaiseShards(raised))
        run_steps(w, order, batch_size=data.draw(st.integers(1, 10), label="batch size"))

        drained = w.mismatches()
        final = w.reconcile()
        assert w.mismatches() == [], "a final reconcile must leave the index equal to the bucket"
        again = w.reconcile()
        assert sum(again.found().values()) == 0, f"a second reconcile found {again.to_json()}"
        # What the command runs after a reconcile: the name index holds exactly the live entries' items.
        sync_names(w.dynamodb, w.table, w.name_table, w.bucket.name)
        live_items = read_items(w.dynamodb, w.table, w.keys)
        expected_names = {
            (i[schema.NAME_SCOPE], i[schema.NAME_SORT])
            for item in live_items.values()
            if item is not None and is_live(item)
            for i in entry_items(item, "")
        }
        assert w.name_items() == expected_names
        assert drained == [], (
            f"once every event was delivered, the index must equal the bucket (the final reconcile "
            f"found {final.to_json()['found']})"
        )


def test_the_oracle_catches_a_wrong_index(lambda_context: FakeLambdaContext) -> None:
    """The comparison is not vacuous: a lost delete, a stale size, a lost upload and an entry found in a
    search without being in the bucket are each reported."""
    with world(None, lambda_context, Versioning.ENABLED) as w:
        gone, changed, lost = w.keys[0], w.keys[1], w.keys[2]
        w.bucket.create()
        for key in (gone, changed, lost):
            w.s3.put_object(Bucket=w.bucket.name, Key=key, Body=b"first")
        for obj in w.bucket.snapshot(0).objects:
            w.backfill(obj)
        assert w.mismatches() == []
        w.s3.delete_object(Bucket=w.bucket.name, Key=gone)
        w.s3.put_object(Bucket=w.bucket.name, Key=changed, Body=b"second version")
        w.dynamodb.delete_item(TableName=w.table, Key={schema.OBJECT_KEY: {"S": lost}})
        everything = w.mismatches()
        name_problems = ("q=", "prefix=", "the name index holds")
        problems = [problem for problem in everything if not problem.startswith(name_problems)]
        for problem, key in zip(problems, (gone, changed, lost), strict=False):
            assert problem.startswith(repr(key)), problems
        # The bucket's search shows the deleted key and lacks the lost one, and so does a user's...
        assert [problem.split(" answers")[0] for problem in problems[3:]] == [
            "a search of the bucket",
            f"a search of {PLACEMENT.split(gone).upload_user!r}",
        ]
        # ...and so do the name searches of their words and the folder lists.
        assert any(problem.startswith("q=") and repr(gone) in problem for problem in everything), everything
        assert any(problem.startswith("prefix=") and repr(gone) in problem for problem in everything)
        # The lost entry's name items are items no entry has.
        assert any(
            problem.startswith("the name index holds") and repr(lost) in problem for problem in everything
        )
        summary = w.reconcile()
        assert {kind.value: count for kind, count in summary.fixed().items()} == {
            "orphaned": 1,
            "stale": 1,
            "missing": 1,
        }
        assert w.mismatches() == []


def test_the_oracle_catches_an_entry_without_its_name_items(lambda_context: FakeLambdaContext) -> None:
    with world(None, lambda_context, Versioning.NEVER) as w:
        w.bucket.create()
        key = w.keys[0]
        w.s3.put_object(Bucket=w.bucket.name, Key=key, Body=b"first")
        for obj in w.bucket.snapshot(0).objects:
            w.backfill(obj)
        assert w.mismatches() == []
        scope, term = sorted(w.name_items())[-1]
        w.dynamodb.delete_item(
            TableName=w.name_table, Key={schema.NAME_SCOPE: {"S": scope}, schema.NAME_SORT: {"S": term}}
        )
        problems = w.mismatches()
        assert problems[0].startswith(f"{key!r} lacks name items"), problems
        sync_names(w.dynamodb, w.table, w.name_table, w.bucket.name)
        assert w.mismatches() == []


def test_the_oracle_catches_name_items_in_a_shard_the_entry_left(lambda_context: FakeLambdaContext) -> None:
    """After a raise, name items of a key under a shard its entry is not in (as an overwrite that moved
    the entry left them before the name index followed shard moves) are reported; `index-names` removes
    them."""
    with world(None, lambda_context, Versioning.NEVER, "raised") as w:
        raised = raised_placement_for("raised", w.keys)
        assert raised is not None
        w.raise_placement(raised)
        w.bucket.create()
        key = next(key for key in w.keys if raised.bucket_partition(w.bucket.name, key) != w.bucket.name)
        w.s3.put_object(Bucket=w.bucket.name, Key=key, Body=b"first")
        for obj in w.bucket.snapshot(0).objects:
            w.backfill(obj)
        assert w.mismatches() == []
        entry = read_items(w.dynamodb, w.table, [key])[key]
        assert entry is not None
        w.names.put_entry({**entry, schema.BUCKET_NAME: w.bucket.name}, "")
        problems = w.mismatches()
        assert len(problems) == 1, problems
        assert problems[0].startswith("the name index holds items index-names would not build"), problems
        sync_names(w.dynamodb, w.table, w.name_table, w.bucket.name)
        assert w.mismatches() == []


def test_the_oracle_catches_an_entry_without_its_z_address(lambda_context: FakeLambdaContext) -> None:
    """Under the scaled placement, an entry the Z-order index cannot find is reported, and a reconcile gives
    it its address without rewriting anything else."""
    with world(None, lambda_context, Versioning.NEVER, "scaled") as w:
        w.bucket.create()
        for key in w.keys:
            w.s3.put_object(Bucket=w.bucket.name, Key=key, Body=b"body of " + key.encode())
        for obj in w.bucket.snapshot(0).objects:
            w.backfill(obj)
        assert w.mismatches() == []
        hot_key = w.keys[0]
        before = read_items(w.dynamodb, w.table, [hot_key])[hot_key]
        assert before is not None
        assert (
            schema.USER_SHARD in before or before[schema.UPLOAD_USER] == PLACEMENT.split(hot_key).upload_user
        )
        w.dynamodb.update_item(
            TableName=w.table,
            Key={schema.OBJECT_KEY: {"S": hot_key}},
            UpdateExpression="REMOVE #z",
            ExpressionAttributeNames={"#z": schema.Z_ADDRESS},
        )
        problems = w.mismatches()
        assert problems[0].startswith(f"{hot_key!r} lacks its own zAddress"), problems
        assert problems[1].startswith("the Z-order index answers"), problems
        summary = w.reconcile()
        assert {kind.value: count for kind, count in summary.fixed().items()} == {"unplaced": 1}
        assert w.mismatches() == []
        assert read_items(w.dynamodb, w.table, [hot_key])[hot_key] == before
