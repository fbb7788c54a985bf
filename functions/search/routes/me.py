"""The signed-in people's router, behind the user pool's Cognito authorizer, and its CORS headers.

Routes: `GET /me/files`, `GET`/`DELETE /me/files/{objectKey}`, `GET /me/download/{objectKey}`,
`GET /me/links/{objectKey}`, `GET /me/previews/{objectKey}`, `POST /me/uploads` and the multipart
upload's `POST /me/uploads/parts`, `GET /me/uploads/parts`, `POST /me/uploads/complete` and
`POST /me/uploads/abort`. The CORS headers let the page's origin, and only it, read their answers.
(Over 400 lines: twelve routes of one audience behind one authorizer, each with the OpenAPI text `/docs`
shows; what they do is in `search.service`.)
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from search.composition import file_search
from search.errors import BadRequest, FileNotFound, Forbidden
from search.observability import logger, record_shape
from search.openapi import ERRORS, NOT_FOUND, json_answer
from search.people import (
    Person,
    UserAccess,
    authorization_values,
    folder_prefix,
    own_folder,
    person_from_claims,
    share_link_seconds,
)
from search.previews import PREVIEW_MAX_BYTES, PREVIEW_TYPES, PREVIEW_URL_EXPIRY_SECONDS
from search.queries import MAX_PREFIX_BYTES, ListQuery
from search.routes.files import DOWNLOAD_DESCRIPTION, KEY_PARAMETER
from search.routes.lists import check_list_query, list_page
from search.routes.query_string import refuse_unknown
from search.service import decode_object_key
from search.upload_shapes import ABORT, COMPLETE, PARTS
from search.uploads import MAX_PART_URLS, MULTIPART_THRESHOLD_BYTES

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

    from search import models, upload_bodies
else:
    from search.routes import models, upload_bodies

router = Router()

ME_PREFIX = "/me/"
_ME_TAG = "signed-in people"
_SIGNED_IN: list[dict[str, list[str]]] = [{"cognito": []}]
_SIGNED_IN_ERRORS: dict[int, OpenAPIResponse] = {
    **ERRORS,
    401: json_answer("No valid ID token of this application", "ErrorMessage"),
}


def _query_string() -> dict[str, list[str]]:
    return router.current_event.multi_value_query_string_parameters or {}


def _user_access() -> UserAccess:
    access = file_search().user_access
    if access is None:  # the deployed API has no /me routes then; the function says so all the same
        raise FileNotFound("this deployment has no user sign-in (userAccess is off)")
    return access


def signed_in_person() -> Person:
    """The person whose ID token the user pool's authorizer accepted for this request (else 401)."""
    access = _user_access()
    event = router.current_event.raw_event
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    return person_from_claims(authorizer.get("claims"), access, authorization_values(event))


def _person_asking(shape: str, route: str) -> Person:
    """The signed-in person of a request to `route`, a route without query parameters (any is a 400),
    the request's shape recorded first: how every `/me` route but the list begins."""
    record_shape(shape)
    person = signed_in_person()
    refuse_unknown(_query_string(), route)
    return person


@router.get(
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
    responses={200: json_answer("One page", "FileListPage"), **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def list_my_files(query: Annotated[ListQuery, Query()]) -> Response[models.FileListPage]:
    check_list_query(router.current_event)
    person = signed_in_person()
    user, bucket, prefix = query.user, query.bucket, query.prefix
    if (user is not None or bucket is not None) and not person.is_admin:
        raise Forbidden("user and bucket are for admins; without them the list is your own files")
    if user is None and bucket is None:
        user = person.user
    folder = ""
    if user is not None and bucket is None and (prefix is not None or query.delimiter is not None):
        # Folders are the user's own: `prefix` and `commonPrefixes` are relative to `{user}/`.
        folder = own_folder(user)
        prefix = folder_prefix(user, prefix)
    # An admin's list of another person's files or of the bucket names each file's person.
    people = file_search().people if person.is_admin and (query.user or query.bucket) else None
    return list_page(
        "GET /me/files",
        router.current_event,
        query,
        folder=folder,
        owner_names=people.names if people is not None else None,
        user=user,
        prefix=prefix,
    )


@router.get(
    "/me/people",
    summary="People of the user pool whose name starts with the words given (admins only)",
    description=(
        'Answers `{"people": [{"user", "name"}]}`, at most 20: `user` is the uploadUser to pass as '
        "`GET /me/files?user=`, `name` the attribute the deployment shows (`ownerNameAttribute`: "
        "name, email or user name), or the user name of a person without it, as the lists show them "
        "(`ownerName`): a person is found by either. The match is the user pool's own prefix filter "
        "(case-sensitive). "
        "For members of the admin group only (403 for anybody else)."
    ),
    responses={200: {"description": "The people found"}, **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def find_people(
    q: Annotated[str, Query(description="The start of the person's name", min_length=1, max_length=256)],
) -> Response[dict[str, Any]]:
    record_shape("people")
    person = signed_in_person()
    refuse_unknown(_query_string(), "GET /me/people", ("q",))
    if not person.is_admin:
        raise Forbidden("finding people is for admins")
    people = file_search().people
    if people is None:
        raise BadRequest("this deployment does not name its user pool (USER_POOL_ID): no names to find")
    body = {"people": people.search(q)}
    return Response(
        HTTPStatus.OK, content_types.APPLICATION_JSON, body, headers={"Cache-Control": "no-store"}
    )


@router.get(
    "/me/files/<objectKey>",
    summary="One of the signed-in person's files by its exact key",
    responses={200: json_answer("The file", "FileItem"), **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def get_my_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[models.FileItem]:
    person = _person_asking("key", "GET /me/files/{objectKey}")
    item = models.FileItem.model_validate(file_search().persons_file(person, decode_object_key(objectKey)))
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=item)


@router.delete(
    "/me/files/<objectKey>",
    summary="Delete one of the signed-in person's own files",
    description="Deletes the object; the index follows through the bucket's events, as for any delete.",
    responses={204: {"description": "Deleted"}, **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def delete_my_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[None]:
    person = _person_asking("delete", "DELETE /me/files/{objectKey}")
    key = decode_object_key(objectKey)
    file_search().delete_persons_file(person, key)
    logger.info("deleted", extra={"uploadUser": person.user})
    return Response(status_code=HTTPStatus.NO_CONTENT, content_type=None, body=None)


@router.get(
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
        **NOT_FOUND,
    },
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def download_my_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[Any]:
    person = _person_asking("download", "GET /me/download/{objectKey}")
    key = decode_object_key(objectKey)
    search = file_search()
    url = search.download_url(key, item=search.persons_file(person, key))
    if "application/json" in (router.current_event.headers.get("accept") or ""):
        body = {"url": url}
        headers = {"Cache-Control": "no-store"}
        return Response(HTTPStatus.OK, content_types.APPLICATION_JSON, body, headers=headers)
    headers = {"Location": url, "Cache-Control": "no-store"}
    return Response(status_code=HTTPStatus.FOUND, content_type=None, body=None, headers=headers)


LINK_DESCRIPTION = (
    "A download link to share: the URL of `GET /me/download/{objectKey}` (an attachment, as "
    "`application/octet-stream`), signed to work for `expiresIn` seconds, for anyone who has it, without "
    "signing in. It downloads that one file, the version indexed when the link was made, and nothing else; "
    'it cannot be withdrawn before it expires. The answer is `{"url", "expiresAt"}` (ISO 8601, UTC). '
    "`expiresIn` is a whole number of seconds from 1 to the deployment's cap (`shareLinkMaxSeconds`, "
    "default 3600; 400 above it). **The link may stop working before `expiresAt`:** it is signed with the "
    "function's own credentials, the temporary ones of its Lambda role, and S3 refuses it once those "
    "expire (within hours; AWS does not promise how many), whatever expiry it was signed with. One's own "
    "files only (admins: any file of the bucket); any other key is a 404."
)


@router.get(
    "/me/links/<objectKey>",
    summary="A download link of one of the signed-in person's files, to share, for a chosen time",
    description=LINK_DESCRIPTION,
    responses={200: {"description": "The link and when it expires"}, **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def share_my_file(
    objectKey: Annotated[str, KEY_PARAMETER],
    expiresIn: Annotated[
        str | None, Query(description="Seconds the link works for: 1 to the deployment's cap")
    ] = None,
) -> Response[dict[str, str]]:
    record_shape("link")
    person = signed_in_person()
    given = _query_string()
    refuse_unknown(given, "GET /me/links/{objectKey}", ("expiresIn",))
    search = file_search()
    seconds = share_link_seconds(given.get("expiresIn"), _user_access())
    link = search.share_link(person, decode_object_key(objectKey), seconds)
    logger.info("link signed", extra={"uploadUser": person.user, "expiresIn": seconds})
    headers = {"Cache-Control": "no-store"}
    return Response(HTTPStatus.OK, content_types.APPLICATION_JSON, link, headers=headers)


@router.get(
    "/me/previews/<objectKey>",
    summary="A URL that shows one of the signed-in person's files in the browser, without a download",
    description=(
        'Answers `{"url", "kind", "contentType", "size"}`; `kind` is `image`, `pdf`, `text`, `audio` or '
        "`video`. Only files whose name ends in an allowlisted extension have a preview: "
        + "; ".join(
            f"{kind}: " + ", ".join(f"`.{ext}`" for ext in types) for kind, types in PREVIEW_TYPES.items()
        )
        + ". Anything else (HTML, SVG, XML, scripts, ...) is a 415. The URL makes S3 answer the "
        "allowlisted type of the extension, whatever type the file was stored with (text as "
        "`text/plain; charset=utf-8`), with `Content-Disposition: inline`: a browser shows it and never "
        "runs it. Size caps (413 above): "
        + ", ".join(f"{kind} {limit // 1024**2} MiB" for kind, limit in PREVIEW_MAX_BYTES.items())
        + f". The URL works for {PREVIEW_URL_EXPIRY_SECONDS} seconds. One's own files only (admins: any "
        "file of the bucket); any other key is a 404."
    ),
    responses={
        200: {"description": "The preview's URL and what it shows"},
        413: json_answer("Too large to preview", "ErrorMessage"),
        415: json_answer("No safe preview for this type", "ErrorMessage"),
        **_SIGNED_IN_ERRORS,
        **NOT_FOUND,
    },
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def preview_my_file(objectKey: Annotated[str, KEY_PARAMETER]) -> Response[dict[str, Any]]:
    person = _person_asking("preview", "GET /me/previews/{objectKey}")
    preview = file_search().preview(person, decode_object_key(objectKey))
    headers = {"Cache-Control": "no-store"}
    return Response(HTTPStatus.OK, content_types.APPLICATION_JSON, preview, headers=headers)


def _body[Body: upload_bodies.UploadBody](model: type[Body]) -> Body:
    return upload_bodies.read_body(model, router.current_event.decoded_body)


@router.post(
    "/me/uploads",
    summary="Start an upload of one file by the signed-in person: a presigned POST form, or parts",
    description=(
        'Body: `{"name", "contentType", "size", "folder": optional, "onConflict": optional}`. The key is '
        "`{user}/{folder}/{name}`, under the person's own prefix.\n\n"
        f"**Up to {MULTIPART_THRESHOLD_BYTES} bytes** the answer "
        '`{"key", "url", "fields"}` is an HTML form POST to S3: send every field, then the file as the '
        "field `file`. The signed policy pins the key, the content type and the size: S3 takes a file of "
        "exactly `size` bytes.\n\n"
        "**Above it** the file goes in parts (S3 multipart): the answer is "
        '`{"key", "uploadId", "size", "partSize", "partCount", "uploadToken"}`. Ask '
        "`POST /me/uploads/parts` for the parts' URLs, PUT each part (every part is `partSize` bytes, the "
        "last what is left), and `POST /me/uploads/complete`. After a dropped connection, "
        "`GET /me/uploads/parts` says which parts S3 holds; `POST /me/uploads/abort` cancels. At most the "
        "deployment's upload limit (`maxUploadBytes`, S3's own object limit by default).\n\n"
        "`onConflict`, for a name that the index already holds: `replace` (the default) uploads over it; "
        '`keepBoth` uploads as the next free `name (1).ext`; `ask` answers 409 `{"message", "existing"}` '
        "with the file that is there, and nothing is uploaded. The file reaches the index through the "
        "bucket's events."
    ),
    responses={200: {"description": "The form, or the multipart upload"}, **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def create_my_upload() -> Response[dict[str, Any]]:
    person = _person_asking("upload", "POST /me/uploads")
    access = _user_access()
    request = _body(upload_bodies.StartBody)
    started = file_search().uploads.start(person, request, access)
    logger.info(
        "upload signed",
        extra={"uploadUser": person.user, "size": request.size, "multipart": "uploadId" in started},
    )
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=started)


@router.post(
    "/me/uploads/parts",
    summary="Presigned URLs of parts of one of the signed-in person's multipart uploads",
    description=(
        f"Body: `{PARTS}`, as `POST /me/uploads` answered, and the part numbers wanted (at most "
        f'{MAX_PART_URLS}). The answer\'s `parts` are `{{"partNumber", "size", "url"}}`: PUT exactly '
        "`size` bytes to `url` (its signature holds the Content-Length); S3 answers the part's ETag."
    ),
    responses={200: {"description": "The parts' URLs"}, **_SIGNED_IN_ERRORS},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def sign_my_upload_parts() -> Response[dict[str, Any]]:
    person = _person_asking("upload", "POST /me/uploads/parts")
    answer = file_search().uploads.part_urls(person, _body(upload_bodies.PartsBody), _user_access())
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=answer)


@router.get(
    "/me/uploads/parts",
    summary="The parts S3 holds of one of the signed-in person's multipart uploads (to resume it)",
    description=(
        'The answer\'s `parts` are `{"partNumber", "size", "etag"}`, each a part S3 holds: a resumed '
        "upload sends the others. 404 if the upload was completed or aborted."
    ),
    responses={200: {"description": "The parts uploaded"}, **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def my_uploaded_parts(
    key: Annotated[str, Query(description="The key `POST /me/uploads` answered")],
    uploadId: Annotated[str, Query(description="The upload id `POST /me/uploads` answered")],
) -> Response[dict[str, Any]]:
    record_shape("upload")
    person = signed_in_person()
    given = _query_string()
    refuse_unknown(given, "GET /me/uploads/parts", ("key", "uploadId"))
    answer = file_search().uploads.uploaded_parts(person, key, uploadId)
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=answer)


@router.post(
    "/me/uploads/complete",
    summary="Complete one of the signed-in person's multipart uploads",
    description=(
        f"Body: `{COMPLETE}`. S3 must hold every part, each of its size, adding up to the size "
        "declared when the upload started: a part missing is a 400 that leaves the upload to resume; parts "
        "that cannot add up to it abort the upload (400). `parts` "
        '(`[{"partNumber", "etag"}]`), if given, must be the ETags S3 holds. Answers `{"key", "size"}`.'
    ),
    responses={200: {"description": "Completed"}, **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def complete_my_upload() -> Response[dict[str, Any]]:
    person = _person_asking("upload", "POST /me/uploads/complete")
    answer = file_search().uploads.complete(person, _body(upload_bodies.CompleteBody))
    logger.info("upload completed", extra={"uploadUser": person.user, "size": answer["size"]})
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=answer)


@router.post(
    "/me/uploads/abort",
    summary="Cancel one of the signed-in person's multipart uploads",
    description=f"Body: `{ABORT}`. S3 drops the parts it holds. 404 if there is no such upload.",
    responses={204: {"description": "Aborted"}, **_SIGNED_IN_ERRORS, **NOT_FOUND},
    tags=[_ME_TAG],
    security=_SIGNED_IN,
)
def abort_my_upload() -> Response[None]:
    person = _person_asking("upload", "POST /me/uploads/abort")
    file_search().uploads.abort(person, _body(upload_bodies.AbortBody))
    return Response(status_code=HTTPStatus.NO_CONTENT, content_type=None, body=None)


def is_signed_in_route(event: dict[str, Any]) -> bool:
    """Whether `event` asks for a path of the signed-in people's routes (`/me/...`), a known one or not."""
    return str(event.get("path") or "").startswith(ME_PREFIX)


def allow_web_origin(response: dict[str, Any]) -> None:
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
