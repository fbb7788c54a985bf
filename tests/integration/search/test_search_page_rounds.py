"""Every list page is at most 4 round trips deep, on every plan, counted on the handler's own SDK calls.

The handler runs over `indexed_api`'s tables (3 bucket shards, the hot user `bot` in 4, the Z-order index,
the name index) on moto and on DynamoDB Local. botocore's `before-call` and `after-call` hooks see each
DynamoDB call; the shard reads a page makes in parallel go through the function's executor, which the
test wraps to note what had finished when a read was handed to it. A call's depth is one more than the
deepest call finished when it was decided on (submitted, or made by the thread that waited for the
others): the round trips of a page are the depth of its deepest call, however the threads were
scheduled. Each request is made once first, so that the index state and the name index's state (kept
for seconds by each server) are read before the counted pages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from random import Random
from typing import Any
from urllib.parse import quote

import boto3
import pytest

from file_index.read.reader import PAGE_ROUNDS
from file_index.rules.objects import ObjectEvent
from search import composition
from tests.integration.search.conftest import BUCKET, SearchApi, both_engines, write_entries

pytestmark = [both_engines, pytest.mark.slow]

START = datetime(2024, 1, 1, tzinfo=UTC)
_rng = Random(20240101)


class RoundCounter:
    """The depth of the handler's DynamoDB calls (module docstring), from botocore's hooks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread = threading.local()
        self.finished = 0  # the deepest call finished so far
        self.calls = 0

    def reset(self) -> None:
        with self._lock:
            self.finished = self.calls = 0

    def decided_at(self) -> int:
        """The depth a call decided on now, by this thread, comes after."""
        task = getattr(self._thread, "task", None)
        if task is not None:  # a shard read: after its submission and its own earlier calls
            return max(task, getattr(self._thread, "last", 0))
        with self._lock:
            return self.finished

    def run_task(self, submitted_at: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._thread.task, self._thread.last = submitted_at, 0
        try:
            return fn(*args, **kwargs)
        finally:
            self._thread.task = None

    def before_call(self, **_: Any) -> None:
        self._thread.depth = self.decided_at() + 1
        with self._lock:
            self.calls += 1

    def after_call(self, **_: Any) -> None:
        depth = self._thread.depth
        self._thread.last = depth
        with self._lock:
            self.finished = max(self.finished, depth)


@pytest.fixture
def rounds(indexed_api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundCounter]:
    counter = RoundCounter()

    class TracedExecutor(ThreadPoolExecutor):
        def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
            return super().submit(counter.run_task, counter.decided_at(), fn, *args, **kwargs)

    monkeypatch.setattr(composition, "ThreadPoolExecutor", TracedExecutor)
    session = boto3.DEFAULT_SESSION
    if session is None:
        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
    assert session is not None
    composition.file_search.cache_clear()  # the handler's clients are made after the hooks are in place
    session.events.register("before-call.dynamodb", counter.before_call)
    session.events.register("after-call.dynamodb", counter.after_call)
    yield counter
    session.events.unregister("before-call.dynamodb", counter.before_call)
    session.events.unregister("after-call.dynamodb", counter.after_call)
    composition.file_search.cache_clear()


def _fill(api: SearchApi) -> None:
    """600 files of alice and the hot user bot over a year, sizes over six decades, a few folders."""
    events = []
    for n in range(600):
        user = "bot" if n % 3 else "alice"
        folder = f"d{n % 4}/" if n % 5 else ""
        key = f"{user}/{folder}{'report' if n % 2 else 'photo'}-{n}.{'pdf' if n % 7 else 'txt'}"
        events.append(
            ObjectEvent(
                event_name="ObjectCreated:Put",
                bucket=BUCKET,
                key=key,
                event_time=START + timedelta(minutes=_rng.randrange(365 * 24 * 60)),
                sequencer=f"{n + 1:016X}",
                size=int(10 ** _rng.uniform(0, 6)),
                e_tag=None,
                version_id=None,
                upload_user=user,
                file_id=key.split("/", 1)[1],
            )
        )
    write_entries(api, events)


B = f"/files?bucket={BUCKET}"
MARCH = "from=2024-03-01&to=2024-03-20"
# Each plan, plain and filtered (a filtered page reads until it fills or reaches its bound), and the
# `orderedBy` its answers name.
PLANS = {
    "size": (f"{B}&limit=25", "size"),
    "size, time filtered": (f"{B}&sort=size&{MARCH}&limit=25", "size"),
    "uploadDate, hot user": ("/files?user=bot&limit=25", "uploadDate"),
    "uploadDate, size filtered": ("/files?user=bot&minSize=1000&maxSize=1500&limit=25", "uploadDate"),
    "bucket time index": (f"{B}&{MARCH}&limit=25", "uploadDate"),
    "bucket time index, size filtered": (
        f"{B}&sort=uploadDate&minSize=1000&maxSize=1500&limit=25",
        "uploadDate",
    ),
    "zAddress": (f"{B}&{MARCH}&minSize=1000&maxSize=100000&limit=25", "zAddress"),
    "name words": (f"{B}&q=report&limit=25", "uploadDate"),
    "name words, size filtered": ("/files?user=bot&q=rep&minSize=1000&maxSize=1500&limit=25", "uploadDate"),
    "name words, extension": ("/files?user=bot&ext=txt&limit=25", "uploadDate"),
    "extension, a bucket": (f"{B}&ext=txt&limit=25", "uploadDate"),
    "folder": (f"{B}&prefix=bot/&delimiter=/&limit=25", "objectKey"),
    "folder, descending": (f"{B}&prefix=bot/&delimiter=/&order=desc&limit=25", "objectKey"),
    "prefix": (f"{B}&prefix=bot/d1/&limit=25", "objectKey"),
}


def _page_rounds(api: SearchApi, rounds: RoundCounter, path: str, ordered_by: str) -> list[tuple[int, int]]:
    """The depth and the calls of each page of `path`, following its cursors; each file comes once."""
    api.get(path)  # reads the index state and the name index's state, which servers keep
    measured: list[tuple[int, int]] = []
    keys: list[str] = []
    cursor = None
    while True:
        rounds.reset()
        response = api.get(path + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert response.status == 200, response.body
        page = response.json
        assert page["orderedBy"] == ordered_by
        measured.append((rounds.finished, rounds.calls))
        keys.extend(item["objectKey"] for item in page["items"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert len(keys) == len(set(keys)) > 0  # each file once
    return measured


@pytest.mark.parametrize(
    ("path", "ordered_by"),
    list(PLANS.values()),
    ids=PLANS.keys(),
)
def test_every_page_of_every_plan_is_at_most_4_round_trips_deep(
    indexed_api: SearchApi, rounds: RoundCounter, path: str, ordered_by: str
) -> None:
    _fill(indexed_api)
    depths = [depth for depth, _ in _page_rounds(indexed_api, rounds, path, ordered_by)]
    assert max(depths) <= PAGE_ROUNDS, depths


def test_shards_read_in_parallel_count_as_one_round(indexed_api: SearchApi, rounds: RoundCounter) -> None:
    _fill(indexed_api)
    measured = _page_rounds(indexed_api, rounds, *PLANS["size"])
    # The bucket's 3 shards are read together: a page makes more calls than it is deep.
    assert any(calls > depth for depth, calls in measured), measured
