"""`FileSearch`, the client's Python API, against a small HTTP server: pages followed to the end, throttled
pages retried with backoff, errors typed with the API's status and message."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from file_search_client import BadRequestError, FileSearch, NotFoundError, ThrottledError


class Api:
    """Answers /files in pages of one item (after `throttle` 503s), 404 for /files/<key>, 400 for q=__."""

    def __init__(self) -> None:
        self.throttle = 0
        self.requests: list[str] = []


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
            elif url.path == "/files":
                page = int(query.get("cursor", "0"))
                self._answer(
                    200,
                    {"items": [{"objectKey": f"k{page}"}], "nextCursor": str(page + 1) if page < 2 else None},
                )
            else:
                self._answer(404, {"message": "no indexed file with key 'x'"})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
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
