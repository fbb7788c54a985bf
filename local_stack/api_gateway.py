"""A stand-in for API Gateway (REST API, Lambda proxy integration, one `/{proxy+}` resource).

`to_rest_event` builds the event API Gateway hands the search Lambda; `ApiGatewayServer` serves HTTP on
127.0.0.1 and answers with what the handler returns. As in API Gateway's REST APIs, `path` keeps the
percent-encoding the client sent, while `pathParameters` and the query string arrive decoded.

Every answer is JSON, errors as `{"message": ...}`, including those the HTTP server gives before the
function runs: any method other than GET on one of the API's paths (TRACE, CONNECT and names HTTP does not
define included) is a 405 with `Allow: GET`, and a request line over 64 KiB a 414. With a user pool, the
`/me/...` routes of signed-in people declare their own methods, answer the page's CORS preflight, and pass
the user pool's authorizer (`local_stack.cognito`) before the function runs. The claims of the token the
authorizer accepted reach the function as API Gateway REST's Cognito authorizer passes them (`rest_claims`):
every value a string, an array's items joined by commas, `exp` and `iat` as dates. AWS does not document
this format; it is what events captured from deployed REST APIs show (`"cognito:groups":
"admin,staging-manager"`, `"iat": "Thu Dec 06 16:08:23 UTC 2018"`, `"auth_time": "1544112503"`,
`"email_verified": "true"`). A header sent several times reaches the function as API Gateway's proxy
event has it: every value in `multiValueHeaders`, the last in `headers`. The deployed API differs in
one respect: API Gateway refuses a method the resource does not define with its own 403
`{"message": "Missing Authentication Token"}`, before the function or IAM authorization run.

Requests are read at once, on a thread each, but the function runs one invocation at a time, as one
Lambda execution environment does: the search function relies on it (Powertools keeps the event being
answered on its router class), and two invocations at once in one process would answer each other's
requests.

Like Lambda, the stand-in refuses a function response whose payload exceeds 6 MB, and answers a 502 as
API Gateway does. The payload is the handler's return value as the Python runtime serializes it: JSON,
with non-ASCII text escaped by the runtimes before Python 3.12.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

logger = logging.getLogger(__name__)

STAGE = "local"
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
# The deployed API defines GET only on its IAM routes (infra/search_api.py), and on the routes of
# signed-in people the methods below: the function never sees another method.
ALLOWED_METHODS = ("GET",)
# The API's own paths; any other path goes to the function, which answers 404 whatever the method.
API_PATHS = re.compile(r"/(files|status|openapi\.json|docs)/?|/(files|download)/.+")
# The routes of signed-in people (`/me/...`), each with the methods it declares; the user pool's authorizer
# runs before the function, and an OPTIONS preflight from the page's origin is answered without either.
ME_ROUTES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"/me/files/?"), ("GET",)),
    (re.compile(r"/me/files/.+"), ("GET", "DELETE")),
    (re.compile(r"/me/download/.+"), ("GET",)),
    (re.compile(r"/me/links/.+"), ("GET",)),
    (re.compile(r"/me/previews/.+"), ("GET",)),
    (re.compile(r"/me/people/?"), ("GET",)),
    (re.compile(r"/me/uploads/?"), ("POST",)),
    (re.compile(r"/me/uploads/parts/?"), ("GET", "POST")),
    (re.compile(r"/me/uploads/(complete|abort)/?"), ("POST",)),
)
CORS_ALLOWED_HEADERS = "Authorization,Content-Type"
CORS_MAX_AGE_SECONDS = 600
# A request line longer than this (http.server's own limit) is refused with a 414.
MAX_REQUEST_LINE_BYTES = 65536
# What is read and dropped of a refused request, so that closing the connection does not reset it before
# the client has read the answer.
_DRAIN_LIMIT_BYTES = 1 << 20
# How long a request's declared body may take to arrive before the request is refused (400).
BODY_TIMEOUT_S = 5.0
# Lambda's limit on a synchronous invocation's response payload.
LAMBDA_RESPONSE_LIMIT_BYTES = 6 * 1024 * 1024
RUNTIME_ESCAPES_NON_ASCII = sys.version_info < (3, 12)


class Authorizer(Protocol):
    """API Gateway's Cognito authorizer: the claims of a valid token in the Authorization header, or None."""

    def claims(self, authorization: str | None) -> dict[str, str] | None: ...


# The claims API Gateway's Cognito authorizer passes as dates (Java's Date.toString, in UTC).
DATE_CLAIMS = frozenset({"exp", "iat"})
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def authorizer_date(seconds: float) -> str:
    """An epoch time as the authorizer passes `exp` and `iat`: `Thu Dec 06 16:08:23 UTC 2018`."""
    moment = datetime.fromtimestamp(int(seconds), tz=UTC)
    return (
        f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
        f"{moment:%H:%M:%S} UTC {moment.year}"
    )


def rest_claim(name: str, value: Any) -> str:
    """One claim as API Gateway REST's Cognito authorizer hands it to the function: a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if name in DATE_CLAIMS and isinstance(value, int | float):
        return authorizer_date(value)
    if isinstance(value, list | tuple):
        return ",".join(rest_claim("", item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def rest_claims(payload: Mapping[str, Any]) -> dict[str, str]:
    """A token's claims as the authorizer passes them (`requestContext.authorizer.claims`)."""
    return {name: rest_claim(name, value) for name, value in payload.items()}


def jwt_payload(authorization: str) -> dict[str, Any]:
    """The payload of the JWT in an Authorization header the authorizer accepted (raw or after `Bearer `)."""
    token = authorization.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    part = token.split(".")[1]
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return payload


def me_route_methods(path: str) -> tuple[str, ...] | None:
    """The methods a `/me/...` route declares, None if `path` is none of them."""
    for pattern, methods in ME_ROUTES:
        if pattern.fullmatch(path):
            return methods
    return None


def response_payload_bytes(response: Mapping[str, Any]) -> int:
    """Bytes of the handler's return value as the Lambda runtime of this Python sends it."""
    return len(json.dumps(response, ensure_ascii=RUNTIME_ESCAPES_NON_ASCII).encode("utf-8"))


def to_rest_event(
    method: str,
    raw_path: str,
    *,
    headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    body: bytes | None = None,
    source_ip: str = "127.0.0.1",
    claims: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The Lambda proxy event for one request; `raw_path` may carry a query string, `headers` may name a
    header several times (as (name, value) pairs)."""
    parts = urlsplit(raw_path)
    path = parts.path or "/"
    multi_query: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        multi_query.setdefault(name, []).append(value)
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or [])
    header_map = dict(pairs)  # the last value of a repeated header, as API Gateway's `headers`
    multi_headers: dict[str, list[str]] = {}
    for name, value in pairs:
        multi_headers.setdefault(name, []).append(value)
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
            # What the user pool's authorizer found in the token, as API Gateway passes it.
            **({"authorizer": {"claims": dict(claims)}} if claims is not None else {}),
        },
        "body": encoded_body,
        "isBase64Encoded": is_base64,
    }


class ApiGatewayServer(ThreadingHTTPServer):
    """Serves `handler` over HTTP on a background thread; `close()` stops it."""

    daemon_threads = True

    def __init__(self, handler: LambdaHandler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.lambda_handler = handler
        # One execution environment: one invocation at a time (the module docstring says why).
        self.invocation_lock = threading.Lock()
        # The `/me/...` routes exist once the stack has a user pool (`userAccess`); the page's origin is
        # the one their CORS answers name.
        self.authorizer: Authorizer | None = None
        self.web_origin: str | None = None
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


def _phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "error"


class _RequestHandler(BaseHTTPRequestHandler):
    server: ApiGatewayServer

    def _dispatch(self) -> None:
        path = urlsplit(self.path).path
        if self.server.authorizer is not None and (methods := me_route_methods(path)) is not None:
            self._dispatch_signed_in(path, methods, self.server.authorizer)
            return
        if self.command not in ALLOWED_METHODS and self._refuse_method():
            return
        self._invoke()

    def _cors_headers(self) -> dict[str, str]:
        origin = self.server.web_origin
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin else {}

    def _dispatch_signed_in(self, path: str, methods: tuple[str, ...], authorizer: Authorizer) -> None:
        """A `/me/...` request: the preflight, the method check, the authorizer, then the function."""
        if self.command == "OPTIONS":
            allowed = ", ".join((*methods, "OPTIONS"))
            headers = {
                **self._cors_headers(),
                "Access-Control-Allow-Methods": allowed,
                "Access-Control-Allow-Headers": CORS_ALLOWED_HEADERS,
                "Access-Control-Max-Age": str(CORS_MAX_AGE_SECONDS),
                "Allow": allowed,
            }
            self._reply(HTTPStatus.NO_CONTENT, headers, b"")
            return
        if self.command not in methods:
            self._reply_not_allowed(path, methods, self._cors_headers())
            return
        authorization = self.headers.get("Authorization")
        if authorization is None or authorizer.claims(authorization) is None:
            # API Gateway's own answer (its UNAUTHORIZED gateway response), CORS headers added as the
            # deployed API's gateway responses add them, so that the page can read it.
            self._reply_json(HTTPStatus.UNAUTHORIZED, "Unauthorized", self._cors_headers())
            return
        self._invoke(rest_claims(jwt_payload(authorization)))

    def _refuse_unknown_method(self) -> bool:
        path = urlsplit(self.path).path
        methods = me_route_methods(path) if self.server.authorizer is not None else None
        if methods is None:
            return self._refuse_method()
        self._reply_not_allowed(path, methods)
        return True

    def _refuse_method(self) -> bool:
        """A 405 with `Allow` for a method an API path does not declare; False on any other path."""
        path = urlsplit(self.path).path
        if not API_PATHS.fullmatch(path):
            return False
        self._reply_not_allowed(path, ALLOWED_METHODS)
        return True

    def _reply_not_allowed(
        self, path: str, methods: tuple[str, ...], headers: Mapping[str, str] | None = None
    ) -> None:
        allowed = ", ".join(methods)
        self._reply_json(
            HTTPStatus.METHOD_NOT_ALLOWED,
            f"method {self.command} is not allowed on {path}; allowed: {allowed}",
            {"Allow": allowed, **(headers or {})},
        )

    def _body(self) -> bytes | None:
        """The request's body, b"" for none; None (and a 400 answered) when its Content-Length is not a
        count of bytes or the bytes do not all arrive within BODY_TIMEOUT_S: such a request never reaches
        the deployed API's function either, and a client is answered rather than left waiting."""
        declared = (self.headers.get("Content-Length") or "0").strip()
        if declared.isascii() and declared.isdigit():
            length = int(declared)
            self.connection.settimeout(BODY_TIMEOUT_S)
            with contextlib.suppress(TimeoutError):
                body = self.rfile.read(length) if length else b""
                if len(body) == length:
                    return body
        self.close_connection = True
        self._reply_json(HTTPStatus.BAD_REQUEST, "Bad Request")
        return None

    def _invoke(self, claims: Mapping[str, str] | None = None) -> None:
        body = self._body()
        if body is None:
            return
        event = to_rest_event(
            self.command,
            self.path,
            headers=list(self.headers.items()),
            body=body or None,
            source_ip=self.client_address[0],
            claims=claims,
        )
        try:
            with self.server.invocation_lock:
                response = self.server.lambda_handler(event, None)
        except Exception:  # API Gateway answers a failed invocation with a 502
            self._reply_json(HTTPStatus.BAD_GATEWAY, "Internal server error")
            raise
        payload_bytes = response_payload_bytes(response)
        if payload_bytes > LAMBDA_RESPONSE_LIMIT_BYTES:
            logger.error(
                "%s %s: the function's response payload of %d bytes exceeds Lambda's limit of %d; "
                "API Gateway answers 502",
                self.command,
                self.path[:200],
                payload_bytes,
                LAMBDA_RESPONSE_LIMIT_BYTES,
            )
            self._reply_json(HTTPStatus.BAD_GATEWAY, "Internal server error")
            return
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode("utf-8")
        headers = dict(response.get("headers") or {})
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(values)
        self._reply(int(response.get("statusCode", 200)), headers, data)

    def _reply_json(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps({"message": message}).encode()
        self._reply(status, {"Content-Type": "application/json", **(headers or {})}, data)

    def _reply(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # Every method HTTP defines; http.server answers any other name with send_error(501), made a 405 below.
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = do_CONNECT = (
        _dispatch
    )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (unknown method, request line too long, bad headers), as JSON.

        The base class writes an HTML page here; API Gateway and the function answer JSON, so does this.
        """
        self.close_connection = True
        if code == HTTPStatus.NOT_IMPLEMENTED and self.command and self._refuse_unknown_method():
            return  # a method name HTTP does not define, on an API path: 405 as for any other
        if code in (HTTPStatus.REQUEST_URI_TOO_LONG, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE):
            self._drain_request()
        if code == HTTPStatus.REQUEST_URI_TOO_LONG:
            text = f"the request line is longer than {MAX_REQUEST_LINE_BYTES} bytes"
        elif code == HTTPStatus.NOT_IMPLEMENTED and self.command:
            text = f"method {self.command} is not supported"
        else:
            text = message or _phrase(code)
            if explain:
                text = f"{text}: {explain}"
        self._reply_json(code, text, {"Connection": "close"})

    def _drain_request(self) -> None:
        """Read the rest of a request head refused half-read (within limits), up to its blank line.

        Closing a connection with unread input resets it, and the client may lose the answer.
        """
        self.connection.settimeout(1.0)
        with contextlib.suppress(OSError):
            remaining = _DRAIN_LIMIT_BYTES
            line = self.rfile.readline(remaining)  # the rest of the line that was too long
            while line not in (b"", b"\r\n", b"\n") and remaining > 0:
                remaining -= len(line)
                line = self.rfile.readline(remaining)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the handler logs each request
        pass
