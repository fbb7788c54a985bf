"""`q` through the API as the name index matches it: its words are counted by the rule that matches them
(`name_terms.query_words`: cut at white space), and a bucket whose name index is not complete (a table of
0.3.0 before `file_search_admin index-names`) answers its name and folder lists with a 503, not a partial
list."""

from __future__ import annotations

import logging
from string import ascii_lowercase
from urllib.parse import quote

import pytest

from file_index.store import name_index_flag
from tests.integration.search.conftest import BUCKET, SearchApi, upload, write_entries

HYPHENATED = "-".join(ascii_lowercase[:17])  # a-b-c-...-q: one word, 17 pieces
KEY = f"bot/{HYPHENATED}.txt"


@pytest.fixture
def named(indexed_api: SearchApi) -> SearchApi:
    write_entries(indexed_api, [upload(KEY, user="bot", file_id=f"{HYPHENATED}.txt")])
    return indexed_api


def test_a_word_of_many_pieces_is_one_word(named: SearchApi) -> None:
    response = named.get(f"/files?bucket={BUCKET}&q={HYPHENATED}")

    assert response.status == 200, response.body
    assert [item["objectKey"] for item in response.json["items"]] == [KEY]


def test_a_q_of_more_than_16_words_is_a_400_naming_q(named: SearchApi) -> None:
    many = quote(" ".join(ascii_lowercase[:17]))

    response = named.get(f"/files?bucket={BUCKET}&q={many}")

    assert response.status == 400, response.body
    assert response.json["message"] == "q has more than 16 words"


@pytest.mark.parametrize(
    "query", [f"q={HYPHENATED}", "ext=txt", "prefix=bot/", "delimiter=/", "q=a&prefix=bot/"]
)
def test_a_bucket_whose_name_index_is_not_complete_answers_503(
    named: SearchApi, caplog: pytest.LogCaptureFixture, query: str
) -> None:
    """As after an upgrade from 0.3.0: the name table holds no flag until `index-names` has run."""
    assert named.name_table is not None
    named.table.meta.client.delete_item(
        TableName=named.name_table, Key=name_index_flag.flag_key(name_index_flag.ALL_BUCKETS)
    )

    with caplog.at_level(logging.INFO):
        response = named.get(f"/files?bucket={BUCKET}&{query}")

    assert response.status == 503, response.body
    # Minutes, not a moment: the name index answers once an operator has run index-names.
    assert int(response.headers["Retry-After"]) >= 60
    assert "name index" in response.json["message"]
    assert f"index-names --bucket {BUCKET}" in response.json["message"]
    assert any(f"index-names --bucket {BUCKET}" in str(record.__dict__) for record in caplog.records)
