"""The routes return their response models: Powertools checks every answer against its route's model,
and the JSON is the route's own, byte for byte (its order, absent fields left out, no nulls added);
an answer that fails its model is a 500 like any other fault."""

from __future__ import annotations

import json
from typing import Any, get_type_hints

import pytest
from aws_lambda_powertools.event_handler import Response
from pydantic import ValidationError

from file_index.store.state import State
from local_stack.api_gateway import to_rest_event
from search import handler, models
from search.payload import dumps
from search.routes import files, me
from search.service import FileList

# An item as the reader gives it: its own order, no eTag or versionId, an attribute no model names.
ITEM = {
    "size": 12,
    "objectKey": "USER001/日本.txt",
    "uploadUser": "USER001",
    "bucketName": "fileupload.a",
    "meta": {"colour": "red"},
    "uploadDate": "2017-08-20T09:15:02.113Z",
}


class StubSearch:
    """The use cases the routes call, answering fixed values."""

    def __init__(self, item: dict[str, Any], page: FileList | None = None) -> None:
        self.item = item
        self.page = page

    def get_file(self, object_key: str) -> dict[str, Any]:
        return self.item

    def list_files(self, query: Any, *, limit: int, cursor: str | None, owner_names: Any = None) -> FileList:
        assert self.page is not None
        return self.page


@pytest.fixture
def search(monkeypatch: pytest.MonkeyPatch) -> StubSearch:
    stub = StubSearch(dict(ITEM))
    monkeypatch.setattr(files, "file_search", lambda: stub)
    monkeypatch.setattr("search.routes.lists.file_search", lambda: stub)
    return stub


def _get(path: str, context: Any) -> dict[str, Any]:
    return handler.lambda_handler(to_rest_event("GET", path), context)


def test_the_json_routes_return_their_response_models() -> None:
    assert get_type_hints(files.list_files)["return"] == Response[models.FileListPage]
    assert get_type_hints(files.get_file)["return"] == Response[models.FileItem]
    assert get_type_hints(files.get_status)["return"] == Response[models.IndexStatus]
    assert get_type_hints(me.list_my_files)["return"] == Response[models.FileListPage]
    assert get_type_hints(me.get_my_file)["return"] == Response[models.FileItem]


def test_a_file_is_answered_as_the_reader_gave_it(search: StubSearch, lambda_context: Any) -> None:
    result = _get("/files/USER001%2Fx", lambda_context)
    assert result["statusCode"] == 200, result["body"]
    assert result["body"] == dumps(ITEM)  # its order, nothing added, the unnamed attribute kept


def test_a_page_is_answered_as_the_route_built_it(search: StubSearch, lambda_context: Any) -> None:
    search.page = FileList(
        items=[ITEM, {"objectKey": "b"}],
        next_cursor=None,
        scanned_count=2,
        request_count=1,
        ordered_by="size",
        index_state=State.READY,
    )
    result = _get("/files?bucket=fileupload.a", lambda_context)
    assert result["statusCode"] == 200, result["body"]
    expected = {
        "items": [ITEM, {"objectKey": "b"}],
        "nextCursor": None,
        "orderedBy": "size",
        "indexState": "READY",
    }
    assert result["body"] == dumps(expected)  # no commonPrefixes: null is not added


@pytest.mark.parametrize(
    "item",
    [
        {"size": 12},  # no objectKey
        {**ITEM, "size": "12"},  # a number as text: strict, no conversion
        {**ITEM, "meta": {"colour": 1}},
    ],
)
def test_an_answer_that_fails_its_model_is_a_500_not_the_answer(
    search: StubSearch, item: dict[str, Any], lambda_context: Any
) -> None:
    search.item = item
    result = _get("/files/x", lambda_context)
    assert result["statusCode"] == 500
    assert json.loads(result["body"]) == {"message": "internal error"}


def test_a_model_checks_what_it_is_given_and_writes_it_unchanged() -> None:
    given = {"uploadDate": "2017-08-20T09:15:02.113Z", "objectKey": "k", "extra": [1]}
    item = models.FileItem.model_validate(given)
    assert item.objectKey == "k"
    assert item.model_dump() == given
    assert models.FileItem(objectKey="k").model_dump(exclude_none=True) == {"objectKey": "k"}
    with pytest.raises(ValidationError):
        models.FileItem.model_validate({"objectKey": "k", "size": 1.5})
