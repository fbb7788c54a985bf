"""The search Lambda: HTTP routes over `FileSearch`, errors mapped to HTTP here and only here.

API Gateway sends every request through one `/{proxy+}` resource; Powertools' REST resolver routes it.
Routes (the README's "Searching"): `GET /files`, `GET /files/{objectKey}`, `GET /download/{objectKey}`,
`GET /status`, `GET /openapi.json` and `GET /docs`.

Configuration and clients are built on the first invocation, not at import, so the module imports
without any environment (tests set it per test; benchmarks time the bare import).
"""

from __future__ import annotations

import functools
import json
import re
from http import HTTPStatus
from typing import Annotated, Any, Literal

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import APIKey, OpenAPI, Server
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.utilities import parameters
from botocore.config import Config
from botocore.exceptions import ClientError

from file_index.reader import FileReader
from file_index.state import IndexStateStore
from search.config import load_config, queue_name
from search.cursor import MAX_CURSOR_LENGTH
from search.errors import BadRequest, ConfigError, FileNotFound, SearchError
from search.models import ErrorMessage, FileItem, FileListPage, IndexStatus
from search.queries import MAX_KEY_BYTES, ListParameters, build_query
from search.service import FileSearch, decode_object_key
from search.status import BacklogReader, IndexStateView

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Sizes are int64 to clients; a larger bound would not survive DynamoDB's 38-digit numbers anyway.
MAX_SIZE = 2**63 - 1
API_TITLE = "S3 File Search"
API_VERSION = "1.0.0"
# Bucket names are at most 63 characters; user names are parts of keys (at most 1024 bytes).
MAX_NAME_LENGTH = MAX_KEY_BYTES

logger = Logger(service="file-search")


class _ObjectKeyResolver(APIGatewayRestResolver):
    """The REST resolver with path parameters that may span several segments.

    Powertools' parameters stop at "/", and S3 keys contain it: a client may send it raw
    (`/files/a/b.txt`) or as `%2F`; both must reach the route. Static routes match exactly, so
    `/files/` (an empty key) reaches the key route and is refused with a message, not listed.
    """

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "^{}$") -> re.Pattern[str]:
        return re.compile(base_regex.format(re.sub(r"<(\w+)>", r"(?P<\1>.*)", rule)))

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPI:
        """Powertools' document, minus what this API never answers.

        Powertools documents a 422 with its own error shape on every route, but invalid input is
        answered 400 with `{"message"}` here, and a redirect has no JSON body. `/docs` and
        `/openapi.json` both come through this method, so they show the same document.
        """
        document = super().get_openapi_schema(**kwargs).model_dump(by_alias=True, exclude_none=True)
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.get("responses", {})
                responses.pop(422, None)
                for status, response in responses.items():
                    if 300 <= int(status) < 400:
                        response.pop("content", None)
        schemas = document.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        return OpenAPI.model_validate(document)


app = _ObjectKeyResolver(enable_validation=True)

_SIGV4 = {
    "sigv4": APIKey.model_validate(
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": "AWS Signature Version 4 (IAM authorization of API Gateway)",
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    )
}
_OPENAPI_INFO: dict[str, Any] = {
    "title": API_TITLE,
    "version": API_VERSION,
    "description": (
        "Find files uploaded to S3 by key, by uploader and time, or by bucket and size. "
        "Errors are JSON objects with a `message` and a 4xx status."
    ),
    "security_schemes": _SIGV4,
    "security": [{"sigv4": []}],
}
app.enable_swagger(path="/docs", **_OPENAPI_INFO)

_ERRORS: dict[int | HTTPStatus, Any] = {
    400: {"description": "Invalid request", "content": {"application/json": {"model": ErrorMessage}}},
}
_NOT_FOUND: dict[int | HTTPStatus, Any] = {
    404: {"description": "No such file", "content": {"application/json": {"model": ErrorMessage}}},
}
_STATUS_OF_ERROR: dict[type[SearchError], HTTPStatus] = {
    BadRequest: HTTPStatus.BAD_REQUEST,
    FileNotFound: HTTPStatus.NOT_FOUND,
}
# The backlog's figures are optional parts of GET /status: fail fast rather than hold the answer up.
_BACKLOG_CLIENT_CONFIG = Config(
    connect_timeout=2, read_timeout=3, retries={"mode": "standard", "total_max_attempts": 2}
)
# DynamoDB and S3 answer these when a caller is too fast; the client may retry later.
_THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)


@functools.cache
def file_search() -> FileSearch:
    """The service with its configuration and clients, built once per execution environment."""
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
    table = boto3.resource("dynamodb").Table(config.table_name)
    s3_client = boto3.client("s3", config=Config(signature_version="s3v4"))
    backlog = BacklogReader(
        sqs=boto3.client("sqs", config=_BACKLOG_CLIENT_CONFIG),
        cloudwatch=boto3.client("cloudwatch", config=_BACKLOG_CLIENT_CONFIG),
        queue_url=config.queue_url,
        queue_name=queue_name(config.queue_url),
        dead_letter_queue_url=config.dead_letter_queue_url,
    )
    return FileSearch(
        reader=FileReader(table),
        index_state=IndexStateView(
            # A client of its own: the table resource's client rewrites typed attribute values.
            IndexStateStore(boto3.client("dynamodb"), config.table_name),
            config.bucket_name,
            config.initial_state,
        ),
        backlog=backlog,
        s3_client=s3_client,
        bucket_name=config.bucket_name,
        cursor_secret=cursor_secret,
        download_url_expiry_seconds=config.download_url_expiry_seconds,
    )


def _message(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"message": message},
        headers=headers,
    )


@app.exception_handler(RequestValidationError)
def _invalid_parameters(error: RequestValidationError) -> Response:
    # Powertools answers 422 with pydantic's raw error list; the API promises 400 and one readable line.
    parts = []
    for detail in error.errors():
        location = [str(part) for part in detail.get("loc", ())]
        where = f"{location[0]} parameter {location[-1]}" if len(location) >= 2 else "request"
        parts.append(f"{where}: {detail.get('msg', 'invalid')}")
    return _message(HTTPStatus.BAD_REQUEST, "; ".join(parts) or "invalid request")


@app.exception_handler(SearchError)
def _search_error(error: SearchError) -> Response:
    return _message(_STATUS_OF_ERROR.get(type(error), HTTPStatus.BAD_REQUEST), str(error))


@app.exception_handler(NotFoundError)
def _no_route(error: NotFoundError) -> Response:
    return _message(HTTPStatus.NOT_FOUND, "no such resource; see /docs")


@app.exception_handler(ClientError)
def _aws_error(error: ClientError) -> Response:
    code = error.response.get("Error", {}).get("Code", "")
    if code in _THROTTLING_CODES:
        logger.warning("throttled", extra={"code": code})
        return _message(HTTPStatus.SERVICE_UNAVAILABLE, "busy, retry later", {"Retry-After": "1"})
    logger.exception("AWS call failed")
    return _message(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")


@app.exception_handler(Exception)
def _unexpected(error: Exception) -> Response:
    # Logged with the cause (a ConfigError names the missing variable); the client learns nothing inside.
    logger.exception("request failed")
    return _message(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")


@app.get(
    "/files",
    summary="List files of a user (by upload time) or of a bucket (by size)",
    description=(
        "Give exactly one of `user` or `bucket`. A user's files come in upload order (ascending; "
        "`order=desc` flips), optionally within one UTC `date` or a `from`/`to` range (inclusive; a day or "
        "an ISO-8601 timestamp, UTC if no offset). A bucket's files come by size (descending; `order=asc` "
        "flips), optionally within `minSize`/`maxSize` bytes (inclusive). Page with `limit` and the "
        "`nextCursor` of the previous page; a page may be empty when the previous one ended the list. "
        "`indexState` BUILDING says the index is being built, so the answer may miss files."
    ),
    responses={
        200: {"description": "One page", "content": {"application/json": {"model": FileListPage}}},
        **_ERRORS,
    },
    tags=["files"],
)
def list_files(
    user: Annotated[
        str | None, Query(description="Uploader whose files to list", max_length=MAX_NAME_LENGTH)
    ] = None,
    bucket: Annotated[
        str | None, Query(description="Bucket whose files to list", max_length=MAX_NAME_LENGTH)
    ] = None,
    date: Annotated[str | None, Query(description="One UTC day, YYYY-MM-DD (user lists)")] = None,
    from_: Annotated[
        str | None, Query(alias="from", description="Earliest upload time, inclusive (user lists)")
    ] = None,
    to: Annotated[str | None, Query(description="Latest upload time, inclusive (user lists)")] = None,
    min_size: Annotated[
        int | None,
        Query(alias="minSize", ge=0, le=MAX_SIZE, description="Smallest size in bytes (bucket lists)"),
    ] = None,
    max_size: Annotated[
        int | None,
        Query(alias="maxSize", ge=0, le=MAX_SIZE, description="Largest size in bytes (bucket lists)"),
    ] = None,
    order: Annotated[Literal["asc", "desc"] | None, Query(description="Sort direction")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Items per page")] = DEFAULT_LIMIT,
    cursor: Annotated[
        str | None, Query(max_length=MAX_CURSOR_LENGTH, description="nextCursor of the previous page")
    ] = None,
) -> Response[dict[str, Any]]:
    query = build_query(
        ListParameters(
            user=user,
            bucket=bucket,
            date=date,
            from_=from_,
            to=to,
            min_size=min_size,
            max_size=max_size,
            order=order,
        )
    )
    result = file_search().list_files(query, limit=limit, cursor=cursor)
    logger.info(
        "listed",
        extra={
            "index": query.index.name,
            "count": len(result.items),
            "scanned": result.scanned_count,
            "indexState": result.index_state.value,
        },
    )
    return Response(
        status_code=HTTPStatus.OK,
        content_type=content_types.APPLICATION_JSON,
        body={
            "items": result.items,
            "nextCursor": result.next_cursor,
            "indexState": result.index_state.value,
        },
    )


_KEY_PARAMETER = Path(
    description="The S3 object key, percent-encoded; `/` may be sent raw or as %2F",
)


@app.get(
    "/files/<objectKey>",
    summary="One file by its exact key",
    responses={
        200: {"description": "The file", "content": {"application/json": {"model": FileItem}}},
        **_ERRORS,
        **_NOT_FOUND,
    },
    tags=["files"],
)
def get_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[dict[str, Any]]:
    item = file_search().get_file(decode_object_key(objectKey))
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=item)


@app.get(
    "/download/<objectKey>",
    summary="Redirect to a short-lived presigned S3 URL of the file",
    responses={
        302: {"description": "Redirect; `Location` is the presigned URL"},
        **_ERRORS,
        **_NOT_FOUND,
    },
    tags=["files"],
)
def download_file(objectKey: Annotated[str, _KEY_PARAMETER]) -> Response[None]:
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
    responses={200: {"description": "The status", "content": {"application/json": {"model": IndexStatus}}}},
    tags=["status"],
)
def get_status() -> Response[dict[str, Any]]:
    report = file_search().status()
    # Through the documented model, so the answer cannot drift from the OpenAPI document.
    body = IndexStatus.model_validate(report.to_json()).model_dump(mode="json")
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)


def openapi_json(base_path: str = "") -> str:
    """The API's OpenAPI document; docs/openapi.json holds it for base path "".

    Regenerate the file with `python -m search.handler > docs/openapi.json`.
    """
    return app.get_openapi_json_schema(servers=[Server(url=base_path or "/")], **_OPENAPI_INFO)


@app.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    # Served with the stage as base path, so "Try it out" in /docs and generated clients hit this stage.
    return Response(
        status_code=HTTPStatus.OK,
        content_type=content_types.APPLICATION_JSON,
        body=openapi_json(app._get_base_path()),
    )


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request_id = (event.get("requestContext") or {}).get("requestId")
    logger.set_correlation_id(request_id)
    return app.resolve(event, context)


if __name__ == "__main__":
    print(json.dumps(json.loads(openapi_json()), indent=2))
