"""The page on the local stack: `web/` served over HTTP as CloudFront serves it, with its `config.json`.

Every answer carries the security headers of the deployed distribution (`infra.web_page`), its CSP naming
the local API and the local AWS endpoint (Cognito and S3) as the places the page may connect to, and the
bucket's keys there as where previews load images, audio, video and PDFs from.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infra.web_page import CONFIG_FILE, CONTENT_TYPES, WEB_ROOT, security_headers


class WebServer(ThreadingHTTPServer):
    """Serves the page's files and `config.json` on a background thread; `close()` stops it."""

    daemon_threads = True

    def __init__(self, *, host: str, port: int, root: Path = WEB_ROOT) -> None:
        self.root = root
        self.config: Mapping[str, Any] = {}
        self.headers: dict[str, str] = security_headers([])
        super().__init__((host, port), _PageHandler)
        self._thread = threading.Thread(target=self.serve_forever, name="web", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def configure(
        self, config: Mapping[str, Any], connect_sources: list[str], preview_sources: list[str] | None = None
    ) -> None:
        """`preview_sources`: where previews load the bucket's files; by default the bucket's keys at the
        local AWS endpoint (`cognitoEndpoint`, moto's, which presigns them path-style)."""
        self.config = dict(config)
        if preview_sources is None:
            endpoint, bucket = config.get("cognitoEndpoint"), config.get("bucket")
            preview_sources = [f"{str(endpoint).rstrip('/')}/{bucket}/"] if endpoint and bucket else []
        self.headers = security_headers(connect_sources, preview_sources)

    def start(self) -> WebServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _PageHandler(BaseHTTPRequestHandler):
    server: WebServer

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        path = urlsplit(self.path).path
        if path in ("/", ""):
            path = "/index.html"
        name = path.lstrip("/")
        if name == CONFIG_FILE:
            body = json.dumps(self.server.config).encode()
            self._send(HTTPStatus.OK, "application/json", body, send_body, cache="no-store")
            return
        root = self.server.root.resolve()
        file = (root / name).resolve()
        content_type = CONTENT_TYPES.get(file.suffix)
        if not file.is_relative_to(root) or not file.is_file() or content_type is None:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n", send_body)
            return
        self._send(HTTPStatus.OK, content_type, file.read_bytes(), send_body, cache="no-cache")

    def _send(self, status: int, content_type: str, body: bytes, send_body: bool, cache: str = "") -> None:
        self.send_response(status)
        for name, value in self.server.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        if cache:
            self.send_header("Cache-Control", cache)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet, as the API stand-in
        pass


def post_form(url: str, fields: Mapping[str, str], content: bytes, filename: str = "file") -> int:
    """An upload as the page sends it: a form POST of the presigned `fields`, then the file; the status."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(  # noqa: S310 (the presigned URL the API answered)
        url, data=b"".join(parts), headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
