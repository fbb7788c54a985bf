"""Batch calls under throttling (a fault no emulator gives, so a client stands in for DynamoDB): what a
batch call leaves unprocessed is asked for again after a growing pause, a bounded number of times; a write
or a read still unfinished fails with an error the indexer expects (it is retried); a name state read left
unfinished is not kept, so the next one asks again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from file_index.store import entries, unprocessed
from file_index.store.name_index_flag import NameIndexFlag
from file_index.store.unprocessed import UnprocessedItemsError, UnprocessedKeysError
from file_index.write import name_sync
from file_index.write.names import NameIndex
from indexer.batch import is_expected

TABLE = "FileNameIndex"


class Throttled:
    """Leaves the first `refused` calls' requests unprocessed, then takes everything."""

    def __init__(self, refused: int) -> None:
        self.refused = refused
        self.calls = 0
        self.written: list[dict[str, Any]] = []

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.refused:
            return {"UnprocessedItems": RequestItems}
        self.written += RequestItems[TABLE]
        return {"UnprocessedItems": {}}

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.refused:
            return {"Responses": {TABLE: []}, "UnprocessedKeys": RequestItems}
        return {"Responses": {TABLE: []}, "UnprocessedKeys": {}}


ITEMS = [{"nameScope": f"b|:{n}", "nameSort": "t", "objectKey": f"k{n}"} for n in range(30)]


def test_unprocessed_items_are_asked_for_again_after_a_growing_pause() -> None:
    client = Throttled(refused=3)
    with (
        mock.patch.object(unprocessed.time, "sleep") as sleep,
        mock.patch.object(unprocessed.random, "uniform", max),
    ):
        NameIndex(client, TABLE, entry_table="FileMetaData").put_items(ITEMS)

    assert len(client.written) == len(ITEMS)
    pauses = [call.args[0] for call in sleep.call_args_list]
    assert pauses == sorted(pauses), "each pause at least as long as the one before"
    assert pauses[0] > 0
    assert all(pause <= unprocessed.BACKOFF_CAP_S for pause in pauses)


def test_items_left_unprocessed_every_time_fail_with_an_error_the_indexer_expects() -> None:
    client = Throttled(refused=1000)
    with mock.patch.object(unprocessed.time, "sleep"), pytest.raises(UnprocessedItemsError) as raised:
        NameIndex(client, TABLE, entry_table="FileMetaData").put_items(ITEMS[:5])

    assert client.calls == unprocessed.UNPROCESSED_ROUNDS
    assert f"5 items of {TABLE} unprocessed" in str(raised.value)
    assert is_expected(raised.value)


def test_a_state_read_left_unfinished_is_a_throttle_and_is_not_kept() -> None:
    """Unsure whether the name index is complete: the read's throttle is raised, never a False that would
    say the index is incomplete, and the next ask reads the table again."""
    client = Throttled(refused=unprocessed.UNPROCESSED_ROUNDS)  # the first read never finishes
    state = NameIndexFlag(client, TABLE)
    with mock.patch.object(unprocessed.time, "sleep"):
        with pytest.raises(UnprocessedKeysError, match="DynamoDB left keys unprocessed"):
            state.complete("bucket")
        assert not state.complete("bucket")

    assert client.calls == unprocessed.UNPROCESSED_ROUNDS + 1, "the second ask read the table again"


READERS = {
    "entries.get_items": lambda client: entries.get_items(client, TABLE, ["k1", "k2"]),
    "name_sync._batch_get": lambda client: name_sync._batch_get(
        client, TABLE, [{"objectKey": "k1"}], consistent=True
    ),
}


@pytest.mark.parametrize("read", READERS.values(), ids=READERS.keys())
def test_keys_left_unprocessed_are_asked_again_then_fail_with_an_error_the_indexer_expects(
    read: Callable[[Any], object],
) -> None:
    with mock.patch.object(unprocessed.time, "sleep") as sleep:
        client = Throttled(refused=2)
        read(client)
        assert client.calls == 3
        assert sleep.call_count == 2

        client = Throttled(refused=1000)
        with pytest.raises(UnprocessedKeysError) as raised:
            read(client)
    assert client.calls == unprocessed.UNPROCESSED_ROUNDS, "bounded: it gives up"
    assert TABLE in str(raised.value)
    assert is_expected(raised.value)
