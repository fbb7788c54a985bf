"""A name search whose entries DynamoDB keeps leaving unprocessed (throttled BatchGetItem): the keys are asked
for again after growing pauses, and when they are still left after every round the API answers 503 with
Retry-After, never a 500 and never a loop that lasts as long as the throttle.

DynamoDB answers such a call with 200 and the keys it did not read (`UnprocessedKeys`), which no emulator
does on demand: a botocore `before-send` hook on the handler's clients answers BatchGetItem that way.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from file_index.read.name_reader import ENTRY_READ_ROUNDS
from file_index.store import unprocessed
from tests.integration.search.conftest import BUCKET, RawBody, SearchApi, sdk_hook, upload, write_entries

KEY = "bot/quarterly budget.xlsx"


class LeavesKeysUnprocessed:
    """Answers the first `times` BatchGetItem calls for entries (None: all) with every key left unprocessed.

    Only the entries' reads: the name table's state item is read with BatchGetItem too (`LeavesStateUnread`).
    """

    def __init__(self, times: int | None) -> None:
        self.times = times
        self.calls = 0

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        asked = json.loads(request.body or b"{}").get("RequestItems", {})
        entries = all(name.startswith("FileMetaData") for name in asked)
        if not event_name.endswith(".BatchGetItem") or not entries:
            return None
        self.calls += 1
        if self.times is not None and self.calls > self.times:
            return None
        body = json.dumps({"Responses": {name: [] for name in asked}, "UnprocessedKeys": asked}).encode()
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, RawBody(body))


@pytest.fixture
def named(indexed_api: SearchApi) -> SearchApi:
    write_entries(indexed_api, [upload(KEY, user="bot", file_id="quarterly budget.xlsx")])
    return indexed_api


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(unprocessed.time, "sleep", slept.append)
    return slept


@pytest.fixture
def throttle() -> Iterator[LeavesKeysUnprocessed]:
    """Every entry read left unprocessed until the test says otherwise (`times`)."""
    injector = LeavesKeysUnprocessed(times=None)
    with sdk_hook("before-send.dynamodb", injector):
        yield injector


@pytest.mark.parametrize("path", [f"/files?bucket={BUCKET}&q=budget", "/files?user=bot&q=quarterly"])
def test_keys_left_unprocessed_every_round_are_a_503_with_retry_after(
    named: SearchApi,
    throttle: LeavesKeysUnprocessed,
    pauses: list[float],
    caplog: pytest.LogCaptureFixture,
    path: str,
) -> None:
    with caplog.at_level(logging.INFO):
        response = named.get(path)

    assert response.status == 503, response.body
    assert int(response.headers["Retry-After"]) >= 1
    assert "retry" in response.json["message"]
    assert throttle.calls == ENTRY_READ_ROUNDS  # bounded: it gives up, and says so
    assert len(pauses) == ENTRY_READ_ROUNDS - 1
    assert sum(pauses) <= 0.35 + 1e-9  # a page may read entries several times within the search's 10 s
    assert all(0 <= pause <= unprocessed.BACKOFF_CAP_S for pause in pauses)
    assert [record.levelno for record in caplog.records if record.getMessage() == "throttled"] == [
        logging.WARNING
    ]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_keys_left_unprocessed_a_few_times_are_read_after_pauses(
    named: SearchApi, throttle: LeavesKeysUnprocessed, pauses: list[float]
) -> None:
    throttle.times = ENTRY_READ_ROUNDS - 1

    response = named.get(f"/files?bucket={BUCKET}&q=budget")

    assert response.status == 200, response.body
    assert [item["objectKey"] for item in response.json["items"]] == [KEY]
    assert throttle.calls == ENTRY_READ_ROUNDS
    assert len(pauses) == ENTRY_READ_ROUNDS - 1


class LeavesStateUnread:
    """Answers every BatchGetItem of the name table's state items with every key left unprocessed."""

    def __init__(self, name_table: str) -> None:
        self.name_table = name_table
        self.calls = 0

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        asked = json.loads(request.body or b"{}").get("RequestItems", {})
        if not event_name.endswith(".BatchGetItem") or list(asked) != [self.name_table]:
            return None
        self.calls += 1
        body = json.dumps({"Responses": {self.name_table: []}, "UnprocessedKeys": asked}).encode()
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, RawBody(body))


def test_a_name_index_state_left_unread_is_a_throttle_not_an_incomplete_index(
    named: SearchApi, pauses: list[float]
) -> None:
    """Unsure whether the name index is complete (its state read kept throttled): the busy 503, never the
    answer that tells an operator to build the name index."""
    assert named.name_table is not None
    injector = LeavesStateUnread(named.name_table)
    with sdk_hook("before-send.dynamodb", injector):
        response = named.get(f"/files?bucket={BUCKET}&q=budget")

    assert injector.calls >= 1
    assert response.status == 503, response.body
    assert response.json["message"] == "the index is busy or slow to answer right now; retry in a moment"
    assert response.headers["Retry-After"] == "1"
