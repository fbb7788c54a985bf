"""The search Lambda: HTTP routes over `FileSearch`, errors mapped to HTTP here and only here.

API Gateway sends every request through one `/{proxy+}` resource; Powertools' REST resolver routes it.
Routes (the README's "Searching"): `GET /files`, `GET /files/{objectKey}`, `GET /download/{objectKey}`,
`GET /status`, `GET /openapi.json` and `GET /docs`, behind IAM; and with a user pool (the README's "The
page") the routes of signed-in people, behind its Cognito authorizer: `GET /me/files`,
`GET`/`DELETE /me/files/{objectKey}`, `GET /me/download/{objectKey}` and `POST /me/uploads`.

Errors are answered in one place (`status_of_error`): a SearchError as its 4xx, DynamoDB or S3 throttling
and SDK timeouts that outlast the SDK's retries as a 503 with `Retry-After`, anything else as a 500.

Configuration and clients are built on the first invocation, not at import, so the module imports
without any environment (tests set it per test; benchmarks time the bare import). What only the OpenAPI
document needs (its pydantic models, the Swagger UI, the response models) is imported when the document
is first asked for: it is most of what importing this module would otherwise cost.

Metrics (EMF, namespace POWERTOOLS_METRICS_NAMESPACE, default S3FileSearch; dimensions `service` and
`QueryShape`), one set per request that reached a search route, whatever its answer: `Requests`,
`Latency` (ms), and for lists `ItemsRead` (DynamoDB's ScannedCount), `ItemsReturned` and `Queries`
(DynamoDB Query calls). The shapes are `key`, `download`, `status` and the lists' `user`, `user+date`,
`user+range`, `bucket`, `bucket+size`, and with bounds on both attributes (box queries) `user+size`,
`user+date+size`, `user+range+size`, `bucket+time` and `bucket+size+time`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import replace
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Literal

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.shared.json_encoder import Encoder
from botocore.exceptions import ClientError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError

from file_index.config import SdkSettings
from file_index.layout import IndexLayout
from file_index.name_reader import NameReader
from file_index.reader import MAX_QUERY_ITEMS, PAGE_ROUNDS, FileReader
from file_index.state import IndexStateStore
from search.config import load_config, queue_name
from search.cursor import MAX_CURSOR_LENGTH
from search.dal import BacklogReader, ObjectStore
from search.errors import BadRequest, ConfigError, FileNotFound, Forbidden, SearchError, Unauthorized
from search.people import (
    Person,
    UserAccess,
    authorization_values,
    folder_prefix,
    own_folder,
    person_from_claims,
)
from search.queries import MAX_KEY_BYTES, MAX_PREFIX_BYTES, ListParameters, build_query
from search.service import FileSearch, decode_object_key
from search.status import IndexStateView

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.models import OpenAPI
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Sizes are int64 to clients; a larger bound would not survive DynamoDB's 38-digit numbers anyway.
MAX_SIZE = 2**63 - 1
API_TITLE = "S3 File Search"
API_VERSION = "1.0.0"
# Bucket names are at most 63 characters; user names are parts of keys (at most 1024 bytes).
MAX_NAME_LENGTH = MAX_KEY_BYTES
DOCS_PATH = "/docs"
# Threads that query the shards of one list at once (each waits on the network, not the CPU).
MAX_READ_THREADS = 32
DEFAULT_METRICS_NAMESPACE = "S3FileSearch"
DEFAULT_SERVICE_NAME = "search"
# The query parameters of each route; any other is refused, so that a misspelling is not ignored.
LIST_PARAMETERS = (
    "user",
    "bucket",
    "date",
    "from",
    "to",
    "minSize",
    "maxSize",
    "q",
    "prefix",
    "delimiter",
    "ext",
    "contentType",
    "order",
    "sort",
    "limit",
    "cursor",
)
# Filters on enriched user metadata and tags: `meta.NAME=VALUE`, `tag.NAME=VALUE` (any NAME).
FILTER_PREFIXES = ("meta.", "tag.")
INTEGER_PARAMETERS = ("minSize", "maxSize", "limit")

logger = Logger(service="file-search")
metrics = Metrics(namespace=DEFAULT_METRICS_NAMESPACE)

# The base URL the request being answered came in on, for the OpenAPI document's `servers`.
_request_base_url: ContextVar[str | None] = ContextVar("request_base_url", default=None)
# The query shape of the request being answered, once a route knows it (for the metrics).
_request_shape: ContextVar[str | None] = ContextVar("request_shape", default=None)
_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
_INTEGER = re.compile(r"-?[0-9]+")


class _ObjectKeyResolver(APIGatewayRestResolver):
    """The REST resolver with path parameters that may span several segments.

    Powertools' parameters stop at "/", and S3 keys contain it: a client may send it raw
    (`/files/a/b.txt`) or as `%2F`; both must reach the route. Static routes match exactly, so
    `/files/` (an empty key) reaches the key route and is refused with a message, not listed.

    Powertools has no public hook for this: `_compile_regex(rule, base_regex)` is the static method its
    `route()` calls once per rule; tests/unit/test_search_powertools_contract.py pins that contract.
    """

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "^{}$") -> re.Pattern[str]:
        return re.compile(base_regex.format(re.sub(r"<(\w+)>", r"(?P<\1>.*)", rule)))

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPI:
        """Powertools' document, minus what this API never answers, naming the server it is served from.

        Powertools documents a 422 with its own error shape on every route, but invalid input is
        answered 400 with `{"message"}` here, and a redirect has no JSON body. `/docs` and
        `/openapi.json` both come through this method, so they show the same document; while a request
        is answered, its server is the base URL the request came in on.
        """
        from aws_lambda_powertools.event_handler.openapi.models import OpenAPI, Server

        base_url = _request_base_url.get()
        if base_url is not None:
            kwargs["servers"] = [Server(url=base_url)]
        document = super().get_openapi_schema(**kwargs).model_dump(by_alias=True, exclude_none=True)
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.get("responses", {})
                responses.pop(422, None)
                for status, response in responses.items():
                    if 300 <= int(status) < 400:
                        response.pop("content", None)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        schemas.update(_response_schemas())
        return OpenAPI.model_validate(document)


# Non-ASCII text as UTF-8: as \uXXXX escapes, a page of non-ASCII keys would pass Lambda's 6 MB limit.
app = _ObjectKeyResolver(
    enable_validation=True,
    serializer=functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=False, cls=Encoder),
)


def _openapi_info() -> dict[str, Any]:
    """The document's metadata, built when the document is (its models cost most of an import)."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey

    sigv4 = APIKey.model_validate(
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": "AWS Signature Version 4 (IAM authorization of API Gateway)",
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    )
    cognito = APIKey.model_validate(
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": (
                "The ID token of a person signed in at the stack's Cognito user pool (raw, or after "
                "`Bearer `); access tokens are refused"
            ),
            "x-amazon-apigateway-authtype": "cognito_user_pools",
        }
    )
    return {
        "title": API_TITLE,
        "version": API_VERSION,
        "description": (
            "Find files uploaded to S3 by key, by uploader and time, or by bucket and size. "
            "Errors are JSON objects with a `message` and a 4xx status."
        ),
        "security_schemes": {"sigv4": sigv4, "cognito": cognito},
        "security": [{"sigv4": []}],
    }


LIST_DESCRIPTION = f"""\
Give exactly one of `user` or `bucket`, and any of `minSize`/`maxSize` (bytes) and `from`/`to` or
`date` (upload time): a box, every bound inclusive. `from`/`to` take a day or an ISO-8601 timestamp (UTC
if no offset); `date` is one UTC day.

**Order.** `orderedBy` in the answer names it; `order=desc`/`asc` flips it:

| request | read from | `orderedBy` | default |
|---|---|---|---|
| `user`, any bounds | upload-time index; size bounds filter | `uploadDate` | ascending |
| `bucket`, size bounds or none | size index | `size` | descending |
| `bucket`, time bounds and no size bounds | the bucket's time index | `uploadDate` | descending |
| `bucket`, time and size bounds | the cheapest plan (below) | `uploadDate`, `size`, `zAddress` | descending |
| `bucket`, `sort=uploadDate` | the bucket's time index; size bounds filter | `uploadDate` | descending |
| `bucket`, `sort=size` | size index; time bounds filter | `size` | descending |

The bucket's time index exists unless the deployment switched it off (`bucketTimeIndex: false`; then
time bounds without size bounds read as time and size bounds do, and `sort=uploadDate` is a 400). The
Z-order index answers once it is switched on (`multiAttributeIndex`) and every entry has its address.
With time and size bounds the plans (the bucket's time index filtering size, the size index filtering
time, the Z-order index of (time, size) when on) are weighed with the statistics of the last backfill or
reconcile (`statistics` in `GET /status`); without them the Z-order index is taken when it can answer,
else the size index.

Ties come in a fixed order. A `zAddress` answer is neither by size nor by time: Z-order interleaves both,
so a box reads little outside itself. A cursor keeps the order its list started with.

**Cost.** Without a filter a page reads the items it returns (one query per shard of the bucket, or
of a hot user). A filtered page reads what its key range holds and keeps what matches; the Z-order
index's walk jumps over the stretches of its range outside the box. A page
makes at most {PAGE_ROUNDS} rounds of DynamoDB queries, one after the other (a round queries the shards
that need it in parallel, one query each, reading at most {MAX_QUERY_ITEMS} items), so it waits for at
most {PAGE_ROUNDS} query latencies; then it ends with what it found and a `nextCursor`: **a page may hold
fewer than `limit` items, even none, and still have a `nextCursor`**. Keep following `nextCursor` until
it is null; a page may also be empty when the previous one ended the list.

`indexState` BUILDING says the index is being built, so the answer may miss files.
"""

_docs_lock = threading.Lock()
_docs_enabled = False


def enable_docs() -> None:
    """Serve `GET /docs` (the Swagger UI), registering it on first use; safe from several threads."""
    global _docs_enabled
    with _docs_lock:
        if not _docs_enabled:
            app.enable_swagger(path=DOCS_PATH, **_openapi_info())
            _docs_enabled = True


# The documented answers' models (search.models), by name: the routes refer to them by `$ref`, and the
# document gets their schemas when it is built, so that importing the handler builds no response model.
RESPONSE_MODELS = ("FileListPage", "FileItem", "IndexStatus", "ErrorMessage")


def _json_answer(description: str, model: str) -> OpenAPIResponse:
    schema = {"$ref": f"#/components/schemas/{model}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _response_schemas() -> dict[str, Any]:
    """The JSON schemas of RESPONSE_MODELS and of the models they use, by name."""
    from search import models

    schemas: dict[str, Any] = {}
    for name in RESPONSE_MODELS:
        schema = getattr(models, name).model_json_schema(
            ref_template="#/components/schemas/{model}", mode="serialization"
        )
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    return schemas


_ERRORS: dict[int, OpenAPIResponse] = {400: _json_answer("Invalid request", "ErrorMessage")}
_NOT_FOUND: dict[int, OpenAPIResponse] = {404: _json_answer("No such file", "ErrorMessage")}
# The one error map: each error the routes may raise, and the status it is answered with. A SearchError
# not named is a 400; any other error is a 500 "internal error", logged with its cause.
_STATUS_OF_ERROR: dict[type[Exception], HTTPStatus] = {
    BadRequest: HTTPStatus.BAD_REQUEST,
    FileNotFound: HTTPStatus.NOT_FOUND,
    Unauthorized: HTTPStatus.UNAUTHORIZED,
    Forbidden: HTTPStatus.FORBIDDEN,
    # DynamoDB or S3 did not answer in time, after the SDK's own retries (SdkSettings): the caller may
    # retry later, as after a throttle.
    ReadTimeoutError: HTTPStatus.SERVICE_UNAVAILABLE,
    ConnectTimeoutError: HTTPStatus.SERVICE_UNAVAILABLE,
    ConnectionClosedError: HTTPStatus.SERVICE_UNAVAILABLE,
}
# The error codes of AWS's answers that mean "too many requests now", after the SDK's own retries:
# DynamoDB's (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded) and S3's (SlowDown).
_THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "SlowDown"}
)
# Seconds a 503 tells the caller to wait (`Retry-After`) before it tries again.
RETRY_AFTER_SECONDS = 1
RETRY_LATER_MESSAGE = "the index is busy or slow to answer right now; retry in a moment"
# The backlog's figures are optional parts of GET /status: fail fast rather than hold the answer up.
_BACKLOG_SDK = SdkSettings(max_attempts=2, max_connections=2, connect_timeout=2, read_timeout=3)


def status_of_error(error: BaseException) -> HTTPStatus:
    """The status `error` is answered with (the error map above); a throttling answer of AWS is a 503."""
    if isinstance(error, ClientError):
        throttled = error.response.get("Error", {}).get("Code", "") in _THROTTLING_CODES
        return HTTPStatus.SERVICE_UNAVAILABLE if throttled else HTTPStatus.INTERNAL_SERVER_ERROR
    for kind in type(error).__mro__:
        if kind in _STATUS_OF_ERROR:
            return _STATUS_OF_ERROR[kind]
    return HTTPStatus.BAD_REQUEST if isinstance(error, SearchError) else HTTPStatus.INTERNAL_SERVER_ERROR


def read_threads(layout: IndexLayout) -> int:
    """Threads one list reads with: a list reads all shards of a bucket (or of a hot user) at once."""
    return min(max(layout.bucket_shards, *layout.hot_users.values(), 1), MAX_READ_THREADS)


def search_sdk(threads: int) -> SdkSettings:
    """The search's clients: a connection for every thread of a list's fan-out (botocore's pool of 10 is
    below it), standard retries, and a stalled connection given up in seconds and retried on another
    (botocore waits 60 s), within the function's own timeout."""
    return SdkSettings(max_connections=max(10, threads))


@functools.cache
def file_search() -> FileSearch:
    """The service with its configuration and clients, built once per execution environment."""
    # Imported here: Powertools' parameters utility is needed once per execution environment.
    from aws_lambda_powertools.utilities import parameters

    config = load_config()
    # Read once: the key signs every cursor, and a rotation simply invalidates cursors in flight. A
    # provider of its own (not the module-wide default) so its client follows the current endpoint.
    secret = parameters.SecretsProvider().get(config.cursor_secret_arn, force_fetch=True)
    if isinstance(secret, str):
        cursor_secret = secret.encode("utf-8")
    elif isinstance(secret, bytes):
        cursor_secret = secret
    else:
        raise ConfigError("the secret named by CURSOR_SECRET_ARN holds no string")
    if not cursor_secret:
        raise ConfigError("the secret named by CURSOR_SECRET_ARN is empty")
    layout = config.layout
    threads = read_threads(layout)
    # One connection per thread that reads at once (botocore's default pool is 10, below a page's fan-out).
    sdk = search_sdk(threads)
    table = sdk.resource("dynamodb").Table(config.table_name)
    s3_client = replace(sdk, signature_version="s3v4").client("s3")
    backlog = BacklogReader(
        sqs=_BACKLOG_SDK.client("sqs"),
        cloudwatch=_BACKLOG_SDK.client("cloudwatch"),
        queue_url=config.queue_url,
        queue_name=queue_name(config.queue_url),
        dead_letter_queue_url=config.dead_letter_queue_url,
    )
    executor = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    reader = FileReader(table, layout=layout, executor=executor, bucket_time_index=config.bucket_time_index)
    names = None
    if config.name_table_name is not None:
        names = NameReader(
            table.meta.client,
            config.table_name,
            config.name_table_name,
            layout=layout,
            executor=executor,
            entries=reader,
        )
    return FileSearch(
        names=names,
        reader=reader,
        index_state=IndexStateView(
            # A client of its own: the table resource's client rewrites typed attribute values.
            IndexStateStore(sdk.client("dynamodb"), config.table_name),
            config.bucket_name,
            config.initial_state,
        ),
        backlog=backlog,
        objects=ObjectStore(s3_client, config.bucket_name),
        cursor_secret=cursor_secret,
        download_url_expiry_seconds=config.download_url_expiry_seconds,
        enrich=config.enrich,
        user_access=config.user_access,
        key_layout=config.key_layout,
    )


def check_whole_numbers(names: tuple[str, ...]) -> None:
    """BadRequest unless each of the query parameters `names` is written in digits (with a minus sign).

    Request validation has already read them as integers, but pydantic reads `7.0`, `+7`, ` 7` and `7_0`
    as 7 (its strict mode refuses every string, and query values are all strings).
    """
    given = app.current_event.query_string_parameters or {}
    for name in names:
        value = given.get(name)
        if value is not None and not _INTEGER.fullmatch(value):
            raise BadRequest(f"query parameter {name}: Input should be an integer written in digits only")


def _suggestion(name: str, known: tuple[str, ...]) -> str | None:
    """The known parameter `name` was probably meant to be: same letters in another case, or close."""
    import difflib  # only a refused request needs it

    by_lower = {candidate.lower(): candidate for candidate in known}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def reject_unknown_parameters(
    route: str, known: tuple[str, ...] = (), prefixes: tuple[str, ...] = ()
) -> None:
    """BadRequest naming each query parameter of the request that `route` does not take (`prefixes`:
    names it takes with any suffix)."""
    given = app.current_event.multi_value_query_string_parameters or {}
    unknown = sorted(name for name in given if name not in known and not name.startswith(prefixes))
    if not unknown:
        return
    parts = []
    for name in unknown:
        suggestion = _suggestion(name, known)
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        parts.append(f"unknown query parameter {name!r}{hint}")
    takes = ", ".join([*known, *(f"{prefix}NAME" for prefix in prefixes)]) if known else "none"
    raise BadRequest(f"{'; '.join(parts)}; {route} takes {takes}")


def named_filters(prefix: str) -> tuple[tuple[str, str], ...]:
    """The (NAME, VALUE) pairs of the request's `{prefix}NAME=VALUE` parameters; each NAME once."""
    given = app.current_event.multi_value_query_string_parameters or {}
    pairs = []
    for parameter, values in sorted(given.items()):
        if not parameter.startswith(prefix):
            continue
        name = parameter.removeprefix(prefix)
        if not name:
            raise BadRequest(
                f"query parameter {parameter}: give a name after {prefix!r}, e.g. {prefix}project"
            )
        if len(values) != 1:
            raise BadRequest(f"query parameter {parameter} is given {len(values)} times: give it once")
        pairs.append((name, values[0]))
    return tuple(pairs)


def request_base_url(event: Mapping[str, Any]) -> str:
    """The URL the API was called at, before the route: scheme, host and API Gateway's stage or base path.

    API Gateway names the domain the client called (`requestContext.domainName`) and the full path of the
    request (`requestContext.path`: the stage on an execute-api domain, the base path mapping on a custom
    domain, then the route). An event without a domain name reached the function some other way (the
    local stack's stand-in, whose stage is in no URL): its base is the bare host. The scheme is
    X-Forwarded-Proto's (API Gateway's is https), http without one; without a usable Host header the
    base is the path alone.
    """
    headers = {str(name).lower(): str(value) for name, value in (event.get("headers") or {}).items()}
    context = event.get("requestContext") or {}
    prefix = ""
    route_path = str(event.get("path") or "")
    full_path = str(context.get("path") or "")
    if context.get("domainName") and route_path and full_path.endswith(route_path):
        prefix = full_path[: len(full_path) - len(route_path)].rstrip("/")
    host = headers.get("host", "").strip()
    if not _HOST.fullmatch(host):
        return prefix or "/"
    scheme = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    if scheme not in ("http", "https"):
        scheme = "http"
    return f"{scheme}://{host}{prefix}"


def query_shape(params: ListParameters) -> str:
    """The shape of a list request for the metrics: what it selects by and which bounds it has.

    `user`, `user+date`, `user+range`, `bucket`, `bucket+size`, and the box queries `user+size`,
    `user+date+size`, `user+range+size`, `bucket+time` (a date or a range) and `bucket+size+time`.
    """
    sized = params.min_size is not None or params.max_size is not None
    ranged = params.from_ is not None or params.to is not None
    if params.narrows_by_name:
        scope = "user" if params.user is not None else "bucket" if params.bucket is not None else "invalid"
        by = "+q" if params.q is not None else ""
        by += "+prefix" if params.prefix is not None or params.delimiter is not None else ""
        by += "+ext" if params.ext is not None else ""
        enriched = params.content_type is not None or params.meta or params.tags
        by += "+enriched" if enriched else ""
        return f"{scope}{by}"
    if params.user is not None:
        shape = "user+date" if params.date is not None else "user+range" if ranged else "user"
        return f"{shape}+size" if sized else shape
    if params.bucket is not None:
        shape = "bucket+size" if sized else "bucket"
        return f"{shape}+time" if params.date is not None or ranged else shape
    return "invalid"


def _message(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"message": message},
        headers=headers,
    )


def repeated_parameters() -> list[str]:
    """The query parameters given more than once, each as "NAME is given N times"."""
    given = app.current_event.multi_value_query_string_parameters or {}
    return [
        f"{name} is given {len(values)} times" for name, values in sorted(given.items()) if len(values) > 1
    ]


@app.exception_handler(RequestValidationError)
def _invalid_parameters(error: RequestValidationError) -> Response:
    # A parameter given twice reads to pydantic as a list where a string is expected: say what it is.
    repeated = repeated_parameters()
    if repeated:
        return _message(HTTPStatus.BAD_REQUEST, f"query parameter {'; '.join(repeated)}: give each once")
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
    if status == HTTPStatus.SERVICE_UNAVAILABLE:
        if isinstance(error, ClientError):
            logger.warning("throttled", extra={"code": error.response.get("Error", {}).get("Code")})
        else:
            logger.warning("timed out", extra={"error": type(error).__name__, "detail": str(error)})
        return _message(status, RETRY_LATER_MESSAGE, {"Retry-After": str(RETRY_AFTER_SECONDS)})
    if status < HTTPStatus.INTERNAL_SERVER_ERROR:
        return _message(status, str(error))
    logger.exception("AWS call failed" if isinstance(error, ClientError) else "request failed")
    return _message(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")


# The list parameters, shared by `GET /files` and `GET /me/files`.
_UserParameter = Annotated[
    str | None, Query(description="Uploader whose files to list", max_length=MAX_NAME_LENGTH)
]
_BucketParameter = Annotated[
    str | None, Query(description="Bucket whose files to list", max_length=MAX_NAME_LENGTH)
]
_DateParameter = Annotated[str | None, Query(description="One UTC day, YYYY-MM-DD; not with from or to")]
_FromParameter = Annotated[
    str | None, Query(alias="from", description="Earliest upload time, inclusive (a day or a timestamp)")
]
_ToParameter = Annotated[
    str | None, Query(description="Latest upload time, inclusive (a day: up to its end)")
]
_MinSizeParameter = Annotated[
    int | None,
    Query(alias="minSize", ge=0, le=MAX_SIZE, description="Smallest size in bytes, inclusive"),
]
_MaxSizeParameter = Annotated[
    int | None,
    Query(alias="maxSize", ge=0, le=MAX_SIZE, description="Largest size in bytes, inclusive"),
]
_OrderParameter = Annotated[
    Literal["asc", "desc"] | None,
    Query(description="Direction of the order the answer's `orderedBy` names"),
]
_SortParameter = Annotated[
    Literal["uploadDate", "size"] | None,
    Query(
        description=(
            "The order of a bucket's list: `uploadDate` (newest first unless `order=asc`; needs the "
            "bucket's time index, `bucketTimeIndex`) or `size` (largest first); without it the plan's "
            "(see the table above). A user's list is always by `uploadDate`"
        ),
    ),
]
_LimitParameter = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_LIMIT,
        description=(
            "Most items per page; a page may hold fewer and still have a nextCursor (its keys are very "
            "long and it stays under Lambda's 6 MB response limit, or a filtered page reached its "
            "read bound)"
        ),
    ),
]
_QParameter = Annotated[
    str | None,
    Query(
        description=(
            "Words of the file's name: each must start a word of the name (case and accents ignored); "
            "newest first unless `order=asc`"
        ),
    ),
]
_PrefixParameter = Annotated[
    str | None,
    Query(
        description=(
            f"Only keys that start with this (a folder, e.g. `USER001/reports/`); at most {MAX_PREFIX_BYTES} "
            "bytes of UTF-8, the longest the name index's key condition takes (its 1,024-byte key less 4)"
        )
    ),
]
_DelimiterParameter = Annotated[
    str | None, Query(description="`/`: answer the sub-folders of `prefix` in `commonPrefixes`")
]
_ExtParameter = Annotated[
    str | None, Query(description="The name's extension, case-insensitive (`pdf`, `.PDF`, `tar.gz`)")
]
_ContentTypeParameter = Annotated[
    str | None,
    Query(
        alias="contentType",
        description=(
            "The object's content type, exact (`image/png`) or any of a major type (`image/*`); with "
            "`enrich` naming contentType. Also `meta.NAME=VALUE` (user metadata) and `tag.NAME=VALUE` "
            "(tags), with `enrich` naming metadata or tags: every one given must match"
        ),
    ),
]
_CursorParameter = Annotated[
    str | None, Query(max_length=MAX_CURSOR_LENGTH, description="nextCursor of the previous page")
]


@app.get(
    "/files",
    summary="List files of a user or of a bucket, within bounds of size and upload time",
    description=LIST_DESCRIPTION,
    responses={
        200: _json_answer("One page", "FileListPage"),
        **_ERRORS,
    },
    tags=["files"],
)
def list_files(
    user: _UserParameter = None,
    bucket: _BucketParameter = None,
    date: _DateParameter = None,
    from_: _FromParameter = None,
    to: _ToParameter = None,
    min_size: _MinSizeParameter = None,
    max_size: _MaxSizeParameter = None,
    order: _OrderParameter = None,
    sort: _SortParameter = None,
    limit: _LimitParameter = DEFAULT_LIMIT,
    q: _QParameter = None,
    prefix: _PrefixParameter = None,
    delimiter: _DelimiterParameter = None,
    ext: _ExtParameter = None,
    content_type: _ContentTypeParameter = None,
    cursor: _CursorParameter = None,
) -> Response[dict[str, Any]]:
    return _list_page(
        "GET /files",
        user=user,
        bucket=bucket,
        date=date,
        from_=from_,
        to=to,
        min_size=min_size,
        max_size=max_size,
        order=order,
        sort=sort,
        limit=limit,
        q=q,
        prefix=prefix,
        delimiter=delimiter,
        ext=ext,
        content_type=content_type,
        cursor=cursor,
    )


def _list_page(
    route: str, *, limit: int, cursor: str | None, folder: str = "", **chosen: Any
) -> Response[dict[str, Any]]:
    """One page of a list route: `chosen` are its parameters as ListParameters names them; `commonPrefixes`
    are answered relative to `folder` (whose prefix `chosen`'s prefix starts with)."""
    reject_unknown_parameters(route, LIST_PARAMETERS, FILTER_PREFIXES)
    check_whole_numbers(INTEGER_PARAMETERS)
    params = ListParameters(**chosen, meta=named_filters("meta."), tags=named_filters("tag."))
    _request_shape.set(query_shape(params))
    query = build_query(params)
    result = file_search().list_files(query, limit=limit, cursor=cursor)
    metrics.add_metric(name="ItemsRead", unit=MetricUnit.Count, value=result.scanned_count)
    metrics.add_metric(name="ItemsReturned", unit=MetricUnit.Count, value=len(result.items))
    metrics.add_metric(name="Queries", unit=MetricUnit.Count, value=result.request_count)
    logger.info(
        "listed",
        extra={
            "orderedBy": str(result.ordered_by),
            "count": len(result.items),
            "scanned": result.scanned_count,
            "queries": result.request_count,
            "indexState": result.index_state.value,
        },
    )
    body: dict[str, Any] = {
        "items": result.items,
        "nextCursor": result.next_cursor,
        "orderedBy": str(result.ordered_by),
        "indexState": result.index_state.value,
    }
    if result.common_prefixes is not None:
        body["commonPrefixes"] = [common.removeprefix(folder) for common in result.common_prefixes]
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)


DOWNLOAD_DESCRIPTION = (
    "The presigned URL makes S3 answer the file as an attachment saved under its own name "
    "(`Content-Disposition: attachment; filename*=UTF-8''...`) and as `application/octet-stream`, "
    "whatever type it was stored with, so that a browser saves it and never renders it."
)
_KEY_PARAMETER = Path(
    description="The S3 object key, percent-encoded; `/` may be sent raw or as %2F",
)


@app.get(
    "/files/<objectKey>",
    summary="One file by its exact key",
    responses={
        200: _json_answer("The file", "FileItem"),
        **_ERRORS,
        **_NOT_FOUND,
    },
    tags=["files"],
)
def get_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[dict[str, Any]]:
    _request_shape.set("key")
    reject_unknown_parameters("GET /files/{objectKey}")
    item = file_search().get_file(decode_object_key(objectKey))
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=item)


@app.get(
    "/download/<objectKey>",
    summary="Redirect to a short-lived presigned S3 URL of the file",
    description=DOWNLOAD_DESCRIPTION,
    responses={
        302: {"description": "Redirect; `Location` is the presigned URL"},
        **_ERRORS,
        **_NOT_FOUND,
    },
    tags=["files"],
)
def download_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[None]:
    _request_shape.set("download")
    reject_unknown_parameters("GET /download/{objectKey}")
    url = file_search().download_url(decode_object_key(objectKey))
    return Response(
        status_code=HTTPStatus.FOUND,
        content_type=None,
        body=None,
        headers={"Location": url, "Cache-Control": "no-store"},
    )


@app.get(
    "/status",
    summary="The state of the index and of the indexer's backlog",
    description=(
        "Whether the index is READY or BUILDING (with the running backfill's or reconcile's progress), the "
        "events waiting in the indexer's queue and the age of the oldest, and the dead-lettered events. "
        "A figure SQS or CloudWatch could not give this time is null and named in `unavailable`; the "
        "answer is still 200."
    ),
    responses={200: _json_answer("The status", "IndexStatus")},
    tags=["status"],
)
def get_status() -> Response[dict[str, Any]]:
    from search.models import IndexStatus

    _request_shape.set("status")
    reject_unknown_parameters("GET /status")
    report = file_search().status()
    # Through the documented model, so the answer cannot drift from the OpenAPI document.
    body = IndexStatus.model_validate(report.to_json()).model_dump(mode="json")
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)


ME_PREFIX = "/me/"
_ME_TAG = "signed-in people"
_SIGNED_IN: list[dict[str, list[str]]] = [{"cognito": []}]
_SIGNED_IN_ERRORS: dict[int, OpenAPIResponse] = {
    **_ERRORS,
    401: _json_answer("No valid ID token of this application", "ErrorMessage"),
}


def _user_access() -> UserAccess:
    access = file_search().user_access
    if access is None:  # the deployed API has no /me routes then; the function says so all the same
        raise FileNotFound("this deployment has no user sign-in (userAccess is off)")
    return access


def signed_in_person() -> Person:
    """The person whose ID token the user pool's authorizer accepted for this request (else 401)."""
    access = _user_access()
    event = app.current_event.raw_event
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    return person_from_claims(authorizer.get("claims"), access, authorization_values(event))


@app.get(
    "/me/files",
    summary="List the signed-in person's files (admins: any user's, or the bucket's)",
    description=(
        "The parameters and answer of `GET /files`, for the person the ID token names: `user` and "
        "`bucket` are for members of the admin group only (403 for anybody else); without them the list "
        "is the person's own files.\n\n"
        "**Folders are the person's own.** With `prefix` or `delimiter`, the list is of the person's "
        "folder `{user}/` (where `POST /me/uploads` puts files): `prefix=reports/` lists the keys under "
        "`{user}/reports/`, and `commonPrefixes` are relative to `{user}/` (`reports/2026/`). Items keep "
        "their full `objectKey`, the key `/me/files/{objectKey}` and `/me/download/{objectKey}` take. "
        "With `user`, an admin's `prefix` is relative to that user's folder in the same way; with "
        "`bucket`, `prefix` and `commonPrefixes` are whole keys, as on `GET /files`. A leading `/` of "
        f"`prefix` is dropped; the folder and `prefix` together take at most {MAX_PREFIX_BYTES} bytes."
    ),
    responses={200: _json_answer("One page", "FileListPage"), **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def list_my_files(
    user: _UserParameter = None,
    bucket: _BucketParameter = None,
    date: _DateParameter = None,
    from_: _FromParameter = None,
    to: _ToParameter = None,
    min_size: _MinSizeParameter = None,
    max_size: _MaxSizeParameter = None,
    order: _OrderParameter = None,
    sort: _SortParameter = None,
    limit: _LimitParameter = DEFAULT_LIMIT,
    q: _QParameter = None,
    prefix: _PrefixParameter = None,
    delimiter: _DelimiterParameter = None,
    ext: _ExtParameter = None,
    content_type: _ContentTypeParameter = None,
    cursor: _CursorParameter = None,
) -> Response[dict[str, Any]]:
    person = signed_in_person()
    if (user is not None or bucket is not None) and not person.is_admin:
        raise Forbidden("user and bucket are for admins; without them the list is your own files")
    if user is None and bucket is None:
        user = person.user
    folder = ""
    if user is not None and bucket is None and (prefix is not None or delimiter is not None):
        # Folders are the user's own: `prefix` and `commonPrefixes` are relative to `{user}/`.
        folder = own_folder(user)
        prefix = folder_prefix(user, prefix)
    return _list_page(
        "GET /me/files",
        folder=folder,
        user=user,
        bucket=bucket,
        date=date,
        from_=from_,
        to=to,
        min_size=min_size,
        max_size=max_size,
        order=order,
        sort=sort,
        limit=limit,
        q=q,
        prefix=prefix,
        delimiter=delimiter,
        ext=ext,
        content_type=content_type,
        cursor=cursor,
    )


@app.get(
    "/me/files/<objectKey>",
    summary="One of the signed-in person's files by its exact key",
    responses={200: _json_answer("The file", "FileItem"), **_SIGNED_IN_ERRORS, **_NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def get_my_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[dict[str, Any]]:
    _request_shape.set("key")
    person = signed_in_person()
    reject_unknown_parameters("GET /me/files/{objectKey}")
    item = file_search().persons_file(person, decode_object_key(objectKey))
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=item)


@app.delete(
    "/me/files/<objectKey>",
    summary="Delete one of the signed-in person's own files",
    description="Deletes the object; the index follows through the bucket's events, as for any delete.",
    responses={204: {"description": "Deleted"}, **_SIGNED_IN_ERRORS, **_NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def delete_my_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[None]:
    _request_shape.set("delete")
    person = signed_in_person()
    reject_unknown_parameters("DELETE /me/files/{objectKey}")
    key = decode_object_key(objectKey)
    file_search().delete_persons_file(person, key)
    logger.info("deleted", extra={"uploadUser": person.user})
    return Response(status_code=HTTPStatus.NO_CONTENT, content_type=None, body=None)


@app.get(
    "/me/download/<objectKey>",
    summary="Redirect to a short-lived presigned S3 URL of one of the signed-in person's files",
    description=(
        f"As `GET /download/{{objectKey}}`. {DOWNLOAD_DESCRIPTION} With "
        '`Accept: application/json` the answer is `{"url": ...}` instead of a redirect (for pages, '
        "which cannot read a redirect's target)."
    ),
    responses={
        302: {"description": "Redirect; `Location` is the presigned URL"},
        **_SIGNED_IN_ERRORS,
        **_NOT_FOUND,
    },
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def download_my_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[Any]:
    _request_shape.set("download")
    person = signed_in_person()
    reject_unknown_parameters("GET /me/download/{objectKey}")
    key = decode_object_key(objectKey)
    search = file_search()
    url = search.download_url(key, item=search.persons_file(person, key))
    if "application/json" in (app.current_event.headers.get("accept") or ""):
        body = {"url": url}
        headers = {"Cache-Control": "no-store"}
        return Response(HTTPStatus.OK, content_types.APPLICATION_JSON, body, headers=headers)
    headers = {"Location": url, "Cache-Control": "no-store"}
    return Response(status_code=HTTPStatus.FOUND, content_type=None, body=None, headers=headers)


@app.post(
    "/me/uploads",
    summary="A presigned POST form for the signed-in person to upload one file",
    description=(
        'Body: `{"name": ..., "contentType": ..., "size": ..., "folder": optional}`. The answer '
        '`{"key", "url", "fields"}` is an HTML form POST to S3: send every field, then the file as the '
        "field `file`. The signed policy pins the key (under the person's own prefix), the content type "
        "and the size: S3 takes a file of exactly `size` bytes (at most the deployment's upload limit); "
        "the file reaches the index through the bucket's events."
    ),
    responses={200: {"description": "The form"}, **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def create_my_upload() -> Response[dict[str, Any]]:
    _request_shape.set("upload")
    person = signed_in_person()
    access = _user_access()
    reject_unknown_parameters("POST /me/uploads")
    try:
        request = json.loads(app.current_event.decoded_body or "")
    except ValueError:
        raise BadRequest(
            'the body must be JSON: {"name": ..., "contentType": ..., "size": ..., "folder": ...}'
        ) from None
    form = file_search().upload_form(person, request, access)
    logger.info("upload signed", extra={"uploadUser": person.user, "size": request.get("size")})
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=form)


def openapi_json() -> str:
    """The API's OpenAPI document, naming the server of the request being answered (else "/").

    docs/openapi.json holds it as generated outside a request: `python -m search.handler > docs/openapi.json`.
    """
    from aws_lambda_powertools.event_handler.openapi.models import Server

    return app.get_openapi_json_schema(servers=[Server(url="/")], **_openapi_info())


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    # The server is the URL this request came in on, so "Try it out" in /docs and generated clients
    # reach this API (its stage when deployed, the bare host on the local stack).
    body = openapi_json()
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)


def _is_docs_request(event: Mapping[str, Any]) -> bool:
    return str(event.get("path") or "").rstrip("/") == DOCS_PATH


def _observability_from_env() -> None:
    # Read per invocation, not at import: the environment may be set after the import (tests, the local
    # stack). Without a namespace, Powertools would fail the flush; the product's is the default.
    metrics.namespace = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_METRICS_NAMESPACE
    metrics.service = os.getenv("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE_NAME


def _allow_web_origin(response: dict[str, Any]) -> None:
    """Let the page (and only the page's origin) read a `/me/...` answer, errors included."""
    try:
        access = file_search().user_access
    except Exception:  # a configuration fault is answered (500) and logged by the route already
        return
    if access is None or access.web_origin is None:
        return
    # The page waits as a 503's Retry-After says: it may read that header only when it is exposed.
    cors = {
        "Access-Control-Allow-Origin": access.web_origin,
        "Access-Control-Expose-Headers": "Retry-After",
        "Vary": "Origin",
    }
    if "multiValueHeaders" in response:
        response["multiValueHeaders"].update({name: [value] for name, value in cors.items()})
    else:
        response.setdefault("headers", {}).update(cors)


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    started = time.perf_counter()
    request_id = (event.get("requestContext") or {}).get("requestId")
    logger.set_correlation_id(request_id)
    if _is_docs_request(event):
        enable_docs()
    _observability_from_env()
    base_token = _request_base_url.set(request_base_url(event))
    shape_token = _request_shape.set(None)
    try:
        response = app.resolve(event, context)
        if str(event.get("path") or "").startswith(ME_PREFIX):
            _allow_web_origin(response)
        return response
    finally:
        shape = _request_shape.get()
        if shape is not None:
            metrics.add_dimension(name="QueryShape", value=shape)
            metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
            latency_ms = (time.perf_counter() - started) * 1000
            metrics.add_metric(name="Latency", unit=MetricUnit.Milliseconds, value=latency_ms)
            # Each request's metrics go out with it. (Powertools keeps one set per process, which is
            # right for Lambda, one request at a time; the local stack disables metrics.)
            metrics.flush_metrics()
            # A disabled flush keeps the set: clear it, or the next request's dimension would collide.
            metrics.clear_metrics()
        _request_shape.reset(shape_token)
        _request_base_url.reset(base_token)


if __name__ == "__main__":
    print(json.dumps(json.loads(openapi_json()), indent=2))
