"""A stand-in for API Gateway (REST API, Lambda proxy integration, one `/{proxy+}` resource).

`to_rest_event` builds the event API Gateway hands the search Lambda; `ApiGatewayServer` serves HTTP on
127.0.0.1 and answers with what the handler returns. As in API Gateway's REST APIs, `path` keeps the
percent-encoding the client sent, while `pathParameters` and the query string arrive decoded.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

STAGE = "local"
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def to_rest_event(
    method: str,
    raw_path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The Lambda proxy event for one request; `raw_path` may carry a query string."""
    parts = urlsplit(raw_path)
    path = parts.path or "/"
    multi_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        multi_query.setdefault(name, []).append(value)
    header_map = dict(headers or {})
    multi_headers = {name: [value] for name, value in header_map.items()}
    encoded_body: str | None = None
    is_base64 = False
    if body:
        try:
            encoded_body = body.decode("utf-8")
        except UnicodeDecodeError:
            encoded_body, is_base64 = base64.b64encode(body).decode("ascii"), True
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method.upper(),
        "headers": header_map or None,
        "multiValueHeaders": multi_headers or None,
        # API Gateway keeps the last value of a repeated parameter here, all of them in the multi form.
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": {"proxy": unquote(path.lstrip("/"))} if path != "/" else None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "requestId": str(uuid.uuid4()),
            "accountId": "123456789012",
            "apiId": "local",
            "protocol": "HTTP/1.1",
            "identity": {"sourceIp": source_ip, "userAgent": header_map.get("User-Agent", "")},
        },
        "body": encoded_body,
        "isBase64Encoded": is_base64,
    }


class ApiGatewayServer(ThreadingHTTPServer):
    """Serves `handler` over HTTP on a background thread; `close()` stops it."""

    daemon_threads = True

    def __init__(self, handler: LambdaHandler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.lambda_handler = handler
        super().__init__((host, port), _RequestHandler)
        self._thread = threading.Thread(target=self.serve_forever, name="api-gateway", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ApiGatewayServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _RequestHandler(BaseHTTPRequestHandler):
    server: ApiGatewayServer

    def _invoke(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        event = to_rest_event(
            self.command,
            self.path,
            headers=dict(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
        )
        try:
            response = self.server.lambda_handler(event, None)
        except Exception:  # API Gateway answers a failed invocation with a 502
            self._reply(
                502,
                {"Content-Type": "application/json"},
                json.dumps({"message": "Internal server error"}).encode(),
            )
            raise
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode("utf-8")
        headers = dict(response.get("headers") or {})
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(values)
        self._reply(int(response.get("statusCode", 200)), headers, data)

    def _reply(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _invoke

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the handler logs each request
        pass
