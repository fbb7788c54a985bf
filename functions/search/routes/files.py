"""The IAM router, for operators and their tools: lists, files, downloads and the index's status.

Routes: `GET /files`, `GET /files/{objectKey}`, `GET /download/{objectKey}` and `GET /status`.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from search.composition import file_search
from search.observability import record_shape
from search.openapi import ERRORS, NOT_FOUND, json_answer
from search.queries import ListQuery
from search.routes.lists import LIST_DESCRIPTION, check_list_query, list_page
from search.routes.query_string import refuse_unknown
from search.service import decode_object_key

if TYPE_CHECKING:
    from search import models
else:
    from search.routes import models

router = Router()

DOWNLOAD_DESCRIPTION = (
    "The presigned URL makes S3 answer the file as an attachment saved under its own name "
    "(`Content-Disposition: attachment; filename*=UTF-8''...`) and as `application/octet-stream`, "
    "whatever type it was stored with, so that a browser saves it and never renders it."
)
KEY_PARAMETER = Path(
    description="The S3 object key, percent-encoded; `/` may be sent raw or as %2F",
)


def _query_string() -> dict[str, list[str]]:
    return router.current_event.multi_value_query_string_parameters or {}


@router.get(
    "/files",
    summary="List files of a user or of a bucket, within bounds of size and upload time",
    description=LIST_DESCRIPTION,
    responses={
        200: json_answer("One page", "FileListPage"),
        **ERRORS,
    },
    tags=["files"],
)
def list_files(query: Annotated[ListQuery, Query()]) -> Response[models.FileListPage]:
    check_list_query(router.current_event)
    return list_page("GET /files", router.current_event, query)


@router.get(
    "/files/<objectKey>",
    summary="One file by its exact key",
    responses={
        200: json_answer("The file", "FileItem"),
        **ERRORS,
        **NOT_FOUND,
    },
    tags=["files"],
)
def get_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[models.FileItem]:
    record_shape("key")
    refuse_unknown(_query_string(), "GET /files/{objectKey}")
    item = models.FileItem.model_validate(file_search().get_file(decode_object_key(objectKey)))
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=item)


@router.get(
    "/download/<objectKey>",
    summary="Redirect to a short-lived presigned S3 URL of the file",
    description=DOWNLOAD_DESCRIPTION,
    responses={
        302: {"description": "Redirect; `Location` is the presigned URL"},
        **ERRORS,
        **NOT_FOUND,
    },
    tags=["files"],
)
def download_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[None]:
    record_shape("download")
    refuse_unknown(_query_string(), "GET /download/{objectKey}")
    url = file_search().download_url(decode_object_key(objectKey))
    return Response(
        status_code=HTTPStatus.FOUND,
        content_type=None,
        body=None,
        headers={"Location": url, "Cache-Control": "no-store"},
    )


@router.get(
    "/status",
    summary="The state of the index and of the indexer's backlog",
    description=(
        "Whether the index is READY or BUILDING (with the running backfill's or reconcile's progress), the "
        "events waiting in the indexer's queue and the age of the oldest, and the dead-lettered events. "
        "A figure SQS or CloudWatch could not give this time is null and named in `unavailable`; the "
        "answer is still 200."
    ),
    responses={200: json_answer("The status", "IndexStatus")},
    tags=["status"],
)
def get_status() -> Response[models.IndexStatus]:
    record_shape("status")
    refuse_unknown(_query_string(), "GET /status")
    report = file_search().status()
    body = models.IndexStatus.model_validate(report.to_json())
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)
