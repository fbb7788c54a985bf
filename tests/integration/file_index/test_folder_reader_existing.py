"""The name index's folder tests (`test_name_index_shard_raise`) again, their folder lists read by
`FolderReader`: every test of that module runs here with a `NameReader` whose folder lists it answers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import tests.integration.file_index.test_name_index_shard_raise as folder_tests
from file_index.read.folder_reader import FolderReader
from file_index.read.name_query import NamePage, NameQuery
from file_index.read.name_reader import NameReader
from tests.integration.file_index.test_name_index_shard_raise import (  # noqa: F401 (collected here again)
    tables,
    test_a_delete_removes_the_items_in_the_shard_the_entry_was_in,
    test_a_key_recreated_after_a_raise_is_listed_once,
    test_a_repair_that_moves_the_entry_moves_its_name_items,
    test_a_version_restored_in_another_shard_takes_the_name_items_along,
    test_an_overwrite_after_a_user_turns_hot_moves_the_items_to_the_users_shard,
    test_any_delivery_order_around_a_raise_leaves_the_items_index_names_would_build,
    test_lists_hold_each_key_once_when_its_items_are_in_two_shards,
    test_placing_an_entry_in_another_shard_moves_its_name_items,
)

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)


class FolderNameReader(NameReader):
    """A `NameReader` whose folder lists `FolderReader` answers (and counts)."""

    folder_pages = 0

    def list_files(
        self, query: NameQuery, *, limit: int, position: Mapping[str, Any] | None = None
    ) -> NamePage:
        if query.uses_keys:
            FolderNameReader.folder_pages += 1
            return FolderReader(self).list_files(query, limit=limit, position=position)
        return super().list_files(query, limit=limit, position=position)


@pytest.fixture(autouse=True)
def _folder_reader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(folder_tests, "NameReader", FolderNameReader)
    FolderNameReader.folder_pages = 0
    yield
    assert FolderNameReader.folder_pages > 0, "the test read no folder list"
