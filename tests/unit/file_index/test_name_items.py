"""The name index's items of an entry (`name_items`): a bounded number, whatever the name's length."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from file_index.rules import schema
from file_index.rules.name_items import MAX_NAME_TERMS, entry_items, indexed_terms, term_items
from file_index.rules.name_terms import name_terms

LONG_NAME = "_".join(f"section{n}" for n in range(40)) + ".pdf"


def entry(name: str) -> dict[str, object]:
    return {
        schema.OBJECT_KEY: f"alice/{name}",
        schema.FILE_ID: f"alice/{name}",
        schema.BUCKET_NAME: "bucket#3",
        schema.UPLOAD_USER: "alice",
        schema.SIZE: 10,
        schema.UPLOAD_DATE: "2024-05-01T10:00:00.000Z",
    }


def test_a_name_of_up_to_max_terms_has_an_item_per_term_and_no_overflow() -> None:
    name = "Quarterly Report 2024.pdf"
    assert indexed_terms(name) == (name_terms(name), False)
    scopes = [item[schema.NAME_SCOPE] for item in term_items(entry(name), "")]
    assert scopes == [f"bucket#3|:{term}" for term in name_terms(name)]


def test_a_long_name_has_its_first_terms_and_one_overflow_item() -> None:
    assert len(name_terms(LONG_NAME)) > MAX_NAME_TERMS
    assert indexed_terms(LONG_NAME) == (name_terms(LONG_NAME)[:MAX_NAME_TERMS], True)
    items = term_items(entry(LONG_NAME), "since")
    assert len(items) == MAX_NAME_TERMS + 1
    overflow = items[-1]
    assert overflow[schema.NAME_SCOPE] == "bucket#3|+"
    assert overflow[schema.NAME_USER] == "alice|+"
    assert overflow[schema.FILE_NAME] == LONG_NAME
    assert overflow[schema.NAME_SORT] == items[0][schema.NAME_SORT]


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(min_size=1, max_size=12), max_size=60))
def test_every_name_has_at_most_max_terms_plus_two_items(words: list[str]) -> None:
    name = "_".join(words)
    assert len(entry_items(entry(name), "")) <= MAX_NAME_TERMS + 2


@pytest.mark.parametrize("name", ["", "...", "___"])
def test_a_name_without_letters_or_digits_has_only_its_key_item(name: str) -> None:
    assert [item[schema.NAME_SCOPE] for item in entry_items(entry(name), "")] == ["bucket#3|/"]
