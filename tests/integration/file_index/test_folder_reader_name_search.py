"""The local stack's name search folder lists (`test_name_search`: `prefix`, `delimiter`) again, answered
by `FolderReader` through the HTTP API: the same corpus, placements and engines, the same brute force."""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from file_index.read.folder_reader import FolderReader
from file_index.read.name_query import NamePage, NameQuery
from file_index.read.name_reader import NameReader
from tests.integration.local_stack.conftest import module_aws_environment  # noqa: F401 (a fixture)
from tests.integration.local_stack.test_name_search import (  # noqa: F401 (collected here again)
    HOT_USER,
    USERS,
    Corpus,
    check,
    corpus,
    module_credentials,
    test_a_prefix_of_1020_bytes_is_listed,
)

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)

FUNCTION_PACKAGES = ("search", "file_index")
FOLDER_PAGES: list[int] = []  # the limit of each folder page FolderReader answered


def stack_name_reader(handler: Any) -> Any:
    """The `NameReader` class the stack's search function imported (its own modules, loaded cold)."""
    seen: set[int] = set()
    todo = [handler]
    while todo:
        thing = todo.pop()
        if id(thing) in seen:
            continue
        seen.add(id(thing))
        if isinstance(thing, type) and thing.__name__ == "NameReader":
            return thing
        values: list[Any] = list((getattr(thing, "__wrapped__", None) and [thing.__wrapped__]) or [])
        if isinstance(thing, types.FunctionType):
            values += [cell.cell_contents for cell in thing.__closure__ or ()]
            values += list(thing.__globals__.values())
        elif isinstance(thing, types.ModuleType | type):
            values += list(vars(thing).values())
        todo += [
            value
            for value in values
            if (
                isinstance(value, types.FunctionType | types.ModuleType | type)
                and str(getattr(value, "__module__", None) or getattr(value, "__name__", "")).partition(".")[
                    0
                ]
                in FUNCTION_PACKAGES
            )
            or (value is not None and getattr(value, "__name__", "") == "<lambda>")
        ]
    raise AssertionError("the stack's search function has no NameReader")


@pytest.fixture(autouse=True)
def _folder_reader(corpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The stack's NameReader answers folder lists with FolderReader (which checks its entries)."""
    reader_class = stack_name_reader(corpus.stack._api.lambda_handler)
    keys_plan = reader_class.list_files

    def list_files(
        self: NameReader, query: NameQuery, *, limit: int, position: Mapping[str, Any] | None = None
    ) -> NamePage:
        if query.uses_keys:
            FOLDER_PAGES.append(limit)
            return FolderReader(self).list_files(query, limit=limit, position=position)
        return keys_plan(self, query, limit=limit, position=position)

    monkeypatch.setattr(reader_class, "list_files", list_files)


@pytest.fixture(scope="module", autouse=True)
def _folder_lists_read() -> Iterator[None]:
    yield
    assert FOLDER_PAGES, "no folder list was read by FolderReader"


FOLDER_LISTS = [
    {"prefix": "USER001/"},
    {"prefix": "USER001/", "delimiter": "/", "limit": 1},
    {"prefix": "USER001/", "delimiter": "/", "limit": 2, "order": "desc"},
    {"delimiter": "/", "limit": 3},
    {"delimiter": "/", "limit": 2, "order": "desc"},
    {"user": HOT_USER, "prefix": f"{HOT_USER}/", "delimiter": "/", "limit": 2},
    {"user": HOT_USER, "prefix": f"{HOT_USER}/", "delimiter": "/", "order": "desc", "limit": 3},
    {"prefix": "anna/", "ext": "txt", "delimiter": "/", "limit": 1},
    {"prefix": "USER002/", "minSize": 1000, "order": "desc", "limit": 3, "delimiter": "/"},
    {"prefix": "USER001/", "from": "2024-03-05T00:00:00.000Z", "delimiter": "/", "limit": 7},
    *({"prefix": f"{user}/", "delimiter": "/", "limit": 100} for user in USERS),
    *({"prefix": f"{user}_", "order": "desc", "limit": 5} for user in USERS),
]


@pytest.mark.parametrize(
    "params", FOLDER_LISTS, ids=lambda params: "&".join(f"{k}={v}" for k, v in params.items())
)
def test_folder_lists(corpus: Corpus, params: dict[str, Any]) -> None:  # noqa: F811
    check(corpus, dict(params))
