"""The search Lambda: the resolver and its routers, the one error map, and `lambda_handler`.

API Gateway sends every request through one `/{proxy+}` resource; the resolver routes it (the README's
"Searching" and "The page"). Its routers, one per audience: `search.routes.files`, behind IAM
(`GET /files`, `/files/{objectKey}`, `/download/{objectKey}`, `/status`); `search.routes.me`, the signed-in
people's routes behind the user pool's Cognito authorizer (`GET /me/files`, `GET`/`DELETE
/me/files/{objectKey}`, `GET /me/download/{objectKey}`, `GET /me/links/{objectKey}`, `POST /me/uploads`
and its multipart routes under `/me/uploads/`); and `search.routes.docs`
(`GET /openapi.json`, `GET /docs`).

Errors are answered here and only here (`status_of_error`): a SearchError as its 4xx, DynamoDB or S3
throttling and SDK timeouts that outlast the SDK's retries (and batch reads DynamoDB kept leaving
unprocessed) as a 503 with `Retry-After`, anything else as a 500.

Configuration and clients are built on the first request (`search.composition`), not at import, so the
module imports without any environment (tests set it per test; benchmarks time the bare import).

Metrics (EMF, namespace POWERTOOLS_METRICS_NAMESPACE, default S3FileSearch; dimensions `service` and
`QueryShape`), one set per request that reached a search route, whatever its answer: `Requests`,
`Latency` (ms), and for lists `ItemsRead` (DynamoDB's ScannedCount), `ItemsReturned` and `Queries`
(DynamoDB Query calls). The shapes (`search.observability.query_shape`) are `key`, `download`, `status`,
`delete`, `upload` (every upload route), `link`, `preview`, `people` and the lists' `user`, `user+date`,
`user+range`, `bucket`, `bucket+size`, and with
bounds on both attributes (box queries) `user+size`, `user+date+size`, `user+range+size`, `bucket+time`
and `bucket+size+time`.
"""

from __future__ import annotations

import functools
import json
import os
import time
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.shared.json_encoder import Encoder
from botocore.exceptions import ClientError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError

from file_index.store.name_index_flag import NameIndexIncomplete
from file_index.store.unprocessed import UnprocessedError
from search.errors import (
    BadRequest,
    Conflict,
    FileNotFound,
    Forbidden,
    NoPreview,
    SearchError,
    TooLargeToPreview,
    Unauthorized,
)
from search.observability import (
    DEFAULT_METRICS_NAMESPACE,
    DEFAULT_SERVICE_NAME,
    RequestFigures,
    end_request,
    logger,
    metrics,
    start_request,
)
from search.openapi import RESPONSE_VALIDATION_STATUS, serve_from, stop_serving
from search.queries import ListQuery
from search.resolver import SearchResolver
from search.routes import docs, files, me
from search.routes.query_string import repeated_message

# Non-ASCII text as UTF-8: as \uXXXX escapes, a page of non-ASCII keys would pass Lambda's 6 MB limit.
app = SearchResolver(
    query_models=(ListQuery,),
    enable_validation=True,
    # An answer that fails its route's response model is a fault: ResponseValidationError, a 500 below.
    response_validation_error_http_code=RESPONSE_VALIDATION_STATUS,
    serializer=functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=False, cls=Encoder),
)
app.include_router(files.router)
app.include_router(me.router)
app.include_router(docs.router)

# The one error map: each error the routes may raise, and the status it is answered with. A SearchError
# not named is a 400; any other error is a 500 "internal error", logged with its cause.
_STATUS_OF_ERROR: dict[type[Exception], HTTPStatus] = {
    BadRequest: HTTPStatus.BAD_REQUEST,
    FileNotFound: HTTPStatus.NOT_FOUND,
    Unauthorized: HTTPStatus.UNAUTHORIZED,
    Forbidden: HTTPStatus.FORBIDDEN,
    Conflict: HTTPStatus.CONFLICT,
    NoPreview: HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
    TooLargeToPreview: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    # DynamoDB or S3 did not answer in time, after the SDK's own retries (SdkSettings): the caller may
    # retry later, as after a throttle.
    ReadTimeoutError: HTTPStatus.SERVICE_UNAVAILABLE,
    ConnectTimeoutError: HTTPStatus.SERVICE_UNAVAILABLE,
    ConnectionClosedError: HTTPStatus.SERVICE_UNAVAILABLE,
    # DynamoDB kept leaving a batch read's keys unprocessed (throttled), round after round.
    UnprocessedError: HTTPStatus.SERVICE_UNAVAILABLE,
    # A name list of a bucket whose name index `file_search_admin index-names` has not built yet.
    NameIndexIncomplete: HTTPStatus.SERVICE_UNAVAILABLE,
}
# The error codes of AWS's answers that mean "too many requests now", after the SDK's own retries:
# DynamoDB's (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded), S3's (SlowDown) and
# the user pool's (TooManyRequestsException).
_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "SlowDown",
        "TooManyRequestsException",
    }
)
# Seconds a 503 tells the caller to wait (`Retry-After`) before it tries again.
RETRY_AFTER_SECONDS = 1
RETRY_LATER_MESSAGE = "the index is busy or slow to answer right now; retry in a moment"
# A name index being built answers after `index-names` has run: minutes, not a moment.
NAME_INDEX_RETRY_AFTER_SECONDS = 300


def status_of_error(error: BaseException) -> HTTPStatus:
    """The status `error` is answered with (the error map above); a throttling answer of AWS is a 503."""
    if isinstance(error, ClientError):
        throttled = error.response.get("Error", {}).get("Code", "") in _THROTTLING_CODES
        return HTTPStatus.SERVICE_UNAVAILABLE if throttled else HTTPStatus.INTERNAL_SERVER_ERROR
    for kind in type(error).__mro__:
        if kind in _STATUS_OF_ERROR:
            return _STATUS_OF_ERROR[kind]
    return HTTPStatus.BAD_REQUEST if isinstance(error, SearchError) else HTTPStatus.INTERNAL_SERVER_ERROR


def _message(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"message": message},
        headers=headers,
    )


@app.exception_handler(RequestValidationError)
def _invalid_parameters(error: RequestValidationError) -> Response:
    # A parameter given twice reads to pydantic as a list where a string is expected: say what it is.
    repeated = repeated_message(app.current_event.multi_value_query_string_parameters or {})
    if repeated is not None:
        return _message(HTTPStatus.BAD_REQUEST, repeated)
    # Powertools answers 422 with pydantic's raw error list; the API promises 400 and one readable line.
    parts = []
    for detail in error.errors():
        location = [str(part) for part in detail.get("loc", ())]
        where = f"{location[0]} parameter {location[-1]}" if len(location) >= 2 else "request"
        parts.append(f"{where}: {detail.get('msg', 'invalid')}")
    return _message(HTTPStatus.BAD_REQUEST, "; ".join(parts) or "invalid request")


@app.exception_handler(NotFoundError)
def _no_route(error: NotFoundError) -> Response:
    return _message(HTTPStatus.NOT_FOUND, "no such resource; see /docs")


@app.exception_handler(Exception)
def _error(error: Exception) -> Response:
    """Every other error, answered as the error map says.

    A 4xx carries the error's own message. A 503 says when to retry (`Retry-After`) and is logged as a
    warning: the caller is told to come back, nothing failed. A 500 is logged with its cause (a ConfigError
    names the missing variable); the client learns nothing inside.
    """
    status = status_of_error(error)
    if isinstance(error, NameIndexIncomplete):
        logger.warning("name index incomplete", extra={"bucket": error.bucket, "detail": str(error)})
        return _message(status, str(error), {"Retry-After": str(NAME_INDEX_RETRY_AFTER_SECONDS)})
    if status == HTTPStatus.SERVICE_UNAVAILABLE:
        if isinstance(error, ClientError):
            logger.warning("throttled", extra={"code": error.response.get("Error", {}).get("Code")})
        elif isinstance(error, UnprocessedError):
            logger.warning("throttled", extra={"detail": str(error)})
        else:
            logger.warning("timed out", extra={"error": type(error).__name__, "detail": str(error)})
        return _message(status, RETRY_LATER_MESSAGE, {"Retry-After": str(RETRY_AFTER_SECONDS)})
    if isinstance(error, Conflict):  # the page asks the person about the file that is there
        body = {"message": str(error), "existing": error.existing}
        return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)
    if status < HTTPStatus.INTERNAL_SERVER_ERROR:
        return _message(status, str(error))
    logger.exception("AWS call failed" if isinstance(error, ClientError) else "request failed")
    return _message(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")


def openapi_json() -> str:
    """The API's OpenAPI document, naming the server of the request being answered (else "/").

    docs/openapi.json holds it as generated outside a request: `python -m search.handler > docs/openapi.json`.
    """
    return docs.openapi_json(app)


def _observability_from_env() -> None:
    # Read per invocation, not at import: the environment may be set after the import (tests, the local
    # stack). Without a namespace, Powertools would fail the flush; the product's is the default.
    metrics.namespace = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE
    metrics.service = os.getenv("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME


def _emit_metrics(figures: RequestFigures, latency_ms: float) -> None:
    """The request's metrics, if a route named its query shape, sent with it."""
    if figures.shape is None:
        return
    if figures.list_figures is not None:
        listed = figures.list_figures
        metrics.add_metric(name="ItemsRead", unit=MetricUnit.Count, value=listed.items_read)
        metrics.add_metric(name="ItemsReturned", unit=MetricUnit.Count, value=listed.items_returned)
        metrics.add_metric(name="Queries", unit=MetricUnit.Count, value=listed.queries)
    metrics.add_dimension(name="QueryShape", value=figures.shape)
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="Latency", unit=MetricUnit.Milliseconds, value=latency_ms)
    # Each request's metrics go out with it. (Powertools keeps one set per process, which is right for
    # Lambda, one request at a time; the local stack disables metrics.)
    metrics.flush_metrics()
    # A disabled flush keeps the set: clear it, or the next request's dimension would collide.
    metrics.clear_metrics()


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    started = time.perf_counter()
    request_id = (event.get("requestContext") or {}).get("requestId")
    logger.set_correlation_id(request_id)
    if docs.is_docs_request(event):
        docs.enable_docs(app)
    _observability_from_env()
    serving = serve_from(event)
    recording = start_request()
    try:
        response = app.resolve(event, context)
        if me.is_signed_in_route(event):
            me.allow_web_origin(response)
        return response
    finally:
        _emit_metrics(end_request(recording), (time.perf_counter() - started) * 1000)
        stop_serving(serving)


if __name__ == "__main__":
    print(json.dumps(json.loads(openapi_json()), indent=2))
