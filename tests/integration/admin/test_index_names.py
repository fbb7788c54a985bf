"""`index-names` builds the name index of a bucket whose entries have none (a table of 0.3.0, which had no
name index; `file_index.write.name_sync`): every live entry gets its key and term items, the bucket's flag is
set, items of no entry go, and a second run (or the run after an interrupted one) finishes the job and
then changes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from file_index.rules import schema
from file_index.rules.name_items import entry_items, term_items
from file_index.store import unprocessed
from file_index.store.entries import plain_item
from file_index.store.name_index_flag import NameIndexFlag, mark_table_complete
from file_index.write.name_sync import sync_names
from file_index.write.names import NameIndex
from tests.integration.admin.conftest import BUCKET, TABLE, Account

NAME_TABLE = schema.NAME_TABLE_NAME
START = datetime(2024, 5, 1, 10, tzinfo=UTC)


@pytest.fixture
def old_table(account: Account) -> Account:
    """A bucket indexed by 0.3.0: entries and an empty name table beside them, but for one stray term item
    of no entry; and another bucket whose entries have their items, left alone."""
    dynamodb = account.dynamodb
    dynamodb.create_table(**schema.create_name_table_request(NAME_TABLE))
    writer = NameIndex(dynamodb, NAME_TABLE, entry_table=TABLE)
    for n in range(40):
        bucket = BUCKET if n % 4 else "other-bucket"
        entry: dict[str, Any] = {
            schema.OBJECT_KEY: f"USER{n % 3:03d}_Report {n} final.pdf",
            schema.BUCKET_NAME: bucket,
            schema.FILE_ID: f"Report {n} final.pdf",
            schema.SIZE: 1000 + n,
            schema.UPLOAD_DATE: (START + timedelta(minutes=n)).isoformat().replace("+00:00", ".000Z"),
            schema.UPLOAD_USER: f"USER{n % 3:03d}",
            schema.ORDER_KEY: f"{n:016X}",
        }
        dynamodb.put_item(TableName=TABLE, Item={k: _attr(v) for k, v in entry.items()})
        if bucket != BUCKET:
            writer.put_items(entry_items(entry, entry[schema.ORDER_KEY]))
    gone = {
        schema.OBJECT_KEY: "USER009_gone.pdf",
        schema.BUCKET_NAME: BUCKET,
        schema.FILE_ID: "gone.pdf",
        schema.SIZE: 1,
        schema.UPLOAD_DATE: START.isoformat(),
    }
    writer.put_items(term_items(gone, "")[:1])
    return account


def _attr(value: Any) -> dict[str, Any]:
    return {"N": str(value)} if isinstance(value, int) else {"S": str(value)}


def held(dynamodb: Any) -> set[tuple[str, str]]:
    paginator = dynamodb.get_paginator("scan")
    return {
        (item[schema.NAME_SCOPE], item[schema.NAME_SORT])
        for page in paginator.paginate(TableName=NAME_TABLE, ConsistentRead=True)
        for item in map(plain_item, page["Items"])
    }


def live_entries(dynamodb: Any, bucket: str) -> list[dict[str, Any]]:
    paginator = dynamodb.get_paginator("scan")
    return [
        entry
        for page in paginator.paginate(TableName=TABLE, ConsistentRead=True)
        for entry in map(plain_item, page["Items"])
        if entry.get(schema.BUCKET_NAME) == bucket
    ]


def keys_of(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(item[schema.NAME_SCOPE], item[schema.NAME_SORT]) for item in items}


def built(dynamodb: Any) -> set[tuple[str, str]]:
    """What the name table holds once built: the key and term items of each live entry of either bucket."""
    return keys_of(
        [i for b in (BUCKET, "other-bucket") for e in live_entries(dynamodb, b) for i in entry_items(e, "")]
    )


def state_item(dynamodb: Any) -> dict[str, Any]:
    key = {schema.NAME_SCOPE: {"S": f"{BUCKET}|!"}, schema.NAME_SORT: {"S": "termItems"}}
    return plain_item(dynamodb.get_item(TableName=NAME_TABLE, Key=key, ConsistentRead=True)["Item"])


def run(account: Account, **options: Any) -> dict[str, Any]:
    counts = sync_names(
        account.dynamodb, TABLE, NAME_TABLE, BUCKET, complete=True, now=lambda: START, **options
    )
    return counts.to_json()


def test_index_names_gives_every_entry_its_items_and_marks_the_bucket_complete(old_table: Account) -> None:
    dynamodb = old_table.dynamodb
    assert not NameIndexFlag(dynamodb, NAME_TABLE).complete(BUCKET)
    entries = live_entries(dynamodb, BUCKET)
    items = keys_of([i for e in entries for i in entry_items(e, "")])

    summary = run(old_table)

    assert held(dynamodb) - {(f"{BUCKET}|!", "termItems")} == built(dynamodb)
    assert summary["entries"] == len(entries) == 30
    assert summary["put"] == len(items)
    assert summary["removed"] == 1  # the stray's term item
    assert summary["termItemsComplete"] is True
    state = state_item(dynamodb)
    assert state["complete"] is True
    assert state["completedAt"] == "2024-05-01T10:00:00.000Z"
    assert NameIndexFlag(dynamodb, NAME_TABLE).complete(BUCKET)
    # The other bucket is untouched, and its flag unset.
    assert not NameIndexFlag(dynamodb, NAME_TABLE).complete("other-bucket")


def test_running_index_names_again_changes_nothing(old_table: Account) -> None:
    run(old_table)
    before = held(old_table.dynamodb)
    again = run(old_table)
    assert (again["put"], again["removed"]) == (0, 0)
    assert held(old_table.dynamodb) == before


def test_an_interrupted_run_is_finished_by_running_it_again(
    old_table: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails part-way through its puts (here: the fourth BatchWriteItem) leaves some entries
    without items and the flag unset; running it again finishes the job."""
    calls = {"n": 0}
    original = NameIndex._batch_write

    def failing(self: NameIndex, requests: list[dict[str, Any]]) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("interrupted")
        original(self, requests)

    monkeypatch.setattr(NameIndex, "_batch_write", failing)
    with pytest.raises(RuntimeError, match="interrupted"):
        run(old_table, segments=1)
    assert not NameIndexFlag(old_table.dynamodb, NAME_TABLE).complete(BUCKET)
    monkeypatch.setattr(NameIndex, "_batch_write", original)
    run(old_table)
    assert held(old_table.dynamodb) - {(f"{BUCKET}|!", "termItems")} == built(old_table.dynamodb)
    assert run(old_table)["put"] == 0


def test_index_names_runs_and_reports_it(old_table: Account) -> None:
    result = old_table.admin("index-names", "--bucket", BUCKET, "--json", "--segments", "2")
    assert result.status == 0, result.stderr
    summary = result.json()
    assert summary["command"] == "index-names"
    assert summary["termItemsComplete"] is True
    assert summary["put"] > 0
    assert summary["totalSeconds"] >= 0
    assert NameIndexFlag(old_table.dynamodb, NAME_TABLE).complete(BUCKET)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index-names"], "index-names needs --bucket"),
        (["index-names", "--bucket", BUCKET, "--segments", "0"], "'0' must be at least 1"),
        (["index-names", "--bucket", BUCKET, "--segments", "many"], "'many' is not a whole number"),
    ],
)
def test_bad_input_is_refused_with_exit_2(
    old_table: Account, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        old_table.admin(*argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not NameIndexFlag(old_table.dynamodb, NAME_TABLE).complete(BUCKET)


def test_a_table_marked_complete_when_created_stays_complete(account: Account) -> None:
    account.dynamodb.create_table(**schema.create_name_table_request(NAME_TABLE))
    assert mark_table_complete(account.dynamodb, NAME_TABLE, START)
    summary = run(account)
    assert summary["termItemsComplete"] is True
    assert summary["put"] == 0


@pytest.mark.parametrize(
    ("operation", "left"), [("BatchGetItem", "UnprocessedKeys"), ("BatchWriteItem", "UnprocessedItems")]
)
def test_batch_calls_dynamodb_keeps_throttling_are_one_line_and_exit_1(
    old_table: Account, monkeypatch: pytest.MonkeyPatch, operation: str, left: str
) -> None:
    monkeypatch.setattr(unprocessed.time, "sleep", lambda _seconds: None)
    original = boto3.session.Session.client

    def throttling_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)

        def leave_unprocessed(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
            # DynamoDB's answer to a throttled batch: 200, and all it was asked left for another call.
            asked = json.loads(params["body"])["RequestItems"]
            return SimpleNamespace(status_code=200, headers={}), {"Responses": {}, left: asked}

        made.meta.events.register(f"before-call.dynamodb.{operation}", leave_unprocessed)
        return made

    monkeypatch.setattr(boto3.session.Session, "client", throttling_client)
    result = old_table.admin("index-names", "--bucket", BUCKET)

    assert result.status == 1
    assert result.stderr.startswith("file_search_admin: error: DynamoDB left ")
    assert "unprocessed (throttled)" in result.stderr
    assert "Traceback" not in result.stderr
