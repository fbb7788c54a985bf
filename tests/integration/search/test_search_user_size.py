"""`GET /files?user=U&sort=size`: a person's files by size through the API, largest first unless
`order=asc`, merged across a hot user's shards, paged by cursor, time bounds filtering."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from file_index.rules.objects import ObjectEvent
from tests.integration.search.conftest import BUCKET, SearchApi, write_entries

START = datetime(2024, 1, 1, tzinfo=UTC)


def _fill(api: SearchApi) -> list[ObjectEvent]:
    rng = random.Random(11)
    events = []
    for n in range(120):
        user = "bot" if n % 3 else "alice"  # bot is a hot user on 4 shards (INDEXED_PLACEMENT)
        key = f"{user}/file-{n}.bin"
        events.append(
            ObjectEvent(
                event_name="ObjectCreated:Put",
                bucket=BUCKET,
                key=key,
                event_time=START + timedelta(hours=n),
                sequencer=f"{n + 1:016X}",
                size=rng.randrange(1, 10**6),
                e_tag=None,
                version_id=None,
                upload_user=user,
                file_id=key.split("/", 1)[1],
            )
        )
    write_entries(api, events)
    return events


def _all(api: SearchApi, query: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        response = api.get(query + (f"&cursor={cursor}" if cursor else ""))
        assert response.status == 200, response.body
        assert response.json["orderedBy"] == "size"
        items.extend(response.json["items"])
        cursor = response.json["nextCursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize("user", ["bot", "alice"])
def test_a_users_files_by_size_both_directions(indexed_api: SearchApi, user: str) -> None:
    events = _fill(indexed_api)
    mine = sorted(event.size or 0 for event in events if event.upload_user == user)
    largest_first = _all(indexed_api, f"/files?user={user}&sort=size&limit=7")
    assert [item["size"] for item in largest_first] == mine[::-1]
    assert {item["uploadUser"] for item in largest_first} == {user}
    smallest_first = _all(indexed_api, f"/files?user={user}&sort=size&order=asc&limit=7")
    assert [item["size"] for item in smallest_first] == mine


def test_a_users_size_order_with_bounds(indexed_api: SearchApi) -> None:
    events = _fill(indexed_api)
    day = START + timedelta(days=2)
    expected = sorted(
        (event.size or 0 for event in events if event.upload_user == "bot" and event.event_time >= day),
        reverse=True,
    )
    expected = [size for size in expected if size >= 1000]
    found = _all(
        indexed_api, f"/files?user=bot&sort=size&from={day.date().isoformat()}&minSize=1000&limit=10"
    )
    assert [item["size"] for item in found] == expected
