"""`FileSearch`, the client's Python API, against a small HTTP server: pages followed to the end (whole, with
their sub-folders, cursors and index state, or item by item), throttled pages retried with backoff, errors
typed with the API's status and message."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from file_search_client import (
    BadRequestError,
    FileSearch,
    FileSearchError,
    NotFoundError,
    Page,
    ThrottledError,
)


class Api:
    """Answers /files in pages of one item (after `throttle` 503s), 404 for /files/<key>, 400 for q=__.

    With `delimiter=/` each page also names one sub-folder; `answer`, when set, is the /files answer."""

    def __init__(self) -> None:
        self.throttle = 0
        self.requests: list[str] = []
        self.answer: Any = None


@pytest.fixture
def api() -> Iterator[tuple[Api, str]]:
    state = Api()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            url = urlsplit(self.path)
            query = {name: values[0] for name, values in parse_qs(url.query).items()}
            if state.throttle:
                state.throttle -= 1
                self._answer(503, {"message": "busy, retry later"})
            elif url.path == "/files" and query.get("q") == "__":
                self._answer(400, {"message": "q has no word in it"})
            elif url.path == "/files" and state.answer is not None:
                self._answer(200, state.answer)
            elif url.path == "/files" and query.get("delimiter") == "/":
                page = int(query.get("cursor", "0"))
                self._answer(
                    200,
                    {
                        "items": [{"objectKey": f"{query['prefix']}k{page}", "size": page}],
                        "commonPrefixes": [f"{query['prefix']}d{page}/"],
                        "nextCursor": str(page + 1) if page < 2 else None,
                        "orderedBy": "objectKey",
                        "indexState": "BUILDING" if page == 1 else "READY",
                    },
                )
            elif url.path == "/files":
                page = int(query.get("cursor", "0"))
                self._answer(
                    200,
                    {"items": [{"objectKey": f"k{page}"}], "nextCursor": str(page + 1) if page < 2 else None},
                )
            else:
                self._answer(404, {"message": "no indexed file with key 'x'"})

        def _answer(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_search_follows_every_page(api: tuple[Api, str]) -> None:
    state, url = api
    assert [item["objectKey"] for item in FileSearch(url).search(bucket="b", limit=1)] == ["k0", "k1", "k2"]
    assert len(state.requests) == 3


def test_a_throttled_page_is_retried_with_backoff(api: tuple[Api, str]) -> None:
    state, url = api
    state.throttle = 2
    files = FileSearch(url, backoff_seconds=0.001)
    assert [item["objectKey"] for item in files.search(bucket="b")] == ["k0", "k1", "k2"]
    assert len(state.requests) == 5  # two 503s, then the three pages


def test_errors_are_typed_with_status_and_message(api: tuple[Api, str]) -> None:
    state, url = api
    files = FileSearch(url, max_attempts=2, backoff_seconds=0.001)
    with pytest.raises(NotFoundError) as missing:
        files.get("x")
    assert missing.value.status == 404
    assert missing.value.message.startswith("no indexed file")  # the API's words, without the status
    with pytest.raises(BadRequestError) as refused:
        list(files.search(bucket="b", q="__"))
    assert refused.value.status == 400
    state.throttle = 5
    with pytest.raises(ThrottledError) as busy:
        files.status()
    assert busy.value.status == 503


def test_pages_give_the_sub_folders_the_cursors_and_the_index_state(api: tuple[Api, str]) -> None:
    state, url = api
    pages = list(FileSearch(url).pages(bucket="b", prefix="USER001/", delimiter="/"))
    assert [page.common_prefixes for page in pages] == [["USER001/d0/"], ["USER001/d1/"], ["USER001/d2/"]]
    assert [[item["objectKey"] for item in page.items] for page in pages] == [
        ["USER001/k0"],
        ["USER001/k1"],
        ["USER001/k2"],
    ]
    assert [page.next_cursor for page in pages] == ["1", "2", None]
    assert [page.index_state for page in pages] == ["READY", "BUILDING", "READY"]
    assert {page.ordered_by for page in pages} == {"objectKey"}
    assert "prefix=USER001%2F" in state.requests[0]
    assert "delimiter=%2F" in state.requests[0]


def test_one_page_and_the_page_after_it_by_its_cursor(api: tuple[Api, str]) -> None:
    state, url = api
    files = FileSearch(url)
    first = files.page(bucket="b", prefix="p/", delimiter="/", limit=1, sort=None)
    assert first == Page(
        items=[{"objectKey": "p/k0", "size": 0}],
        common_prefixes=["p/d0/"],
        next_cursor="1",
        index_state="READY",
        ordered_by="objectKey",
    )
    assert "sort" not in state.requests[0]  # None values are left out
    second = files.page(bucket="b", prefix="p/", delimiter="/", cursor=first.next_cursor)
    assert second.items == [{"objectKey": "p/k1", "size": 1}]
    assert second.index_state == "BUILDING"
    assert len(state.requests) == 2


def test_a_page_without_a_delimiter_has_no_sub_folders(api: tuple[Api, str]) -> None:
    _, url = api
    page = FileSearch(url).page(bucket="b")
    assert page.common_prefixes == []
    assert page.next_cursor == "1"
    assert page.index_state is None  # this server leaves out what older deployments did not answer
    assert page.ordered_by is None


@pytest.mark.parametrize(
    "answer",
    [
        ["not", "a", "page"],
        {"nextCursor": None},
        {"items": ["k0"], "nextCursor": None},
        {"items": [], "commonPrefixes": "d/", "nextCursor": None},
        {"items": [], "nextCursor": 7},
        {"items": [], "nextCursor": None, "indexState": "MAYBE"},
    ],
)
def test_an_answer_that_is_not_a_page_is_a_clear_error(api: tuple[Api, str], answer: Any) -> None:
    state, url = api
    state.answer = answer
    with pytest.raises(FileSearchError) as error:
        FileSearch(url).page(bucket="b")
    assert error.value.message.startswith("the API's answer is not a page of files")
    with pytest.raises(FileSearchError):
        list(FileSearch(url).search(bucket="b"))


def test_a_parameter_the_api_refuses_is_a_bad_request_from_page(api: tuple[Api, str]) -> None:
    _, url = api
    with pytest.raises(BadRequestError) as refused:
        FileSearch(url).page(bucket="b", q="__")
    assert refused.value.message == "q has no word in it"
