"""Signed-in people: who a request's ID token names, which files are theirs, and where their uploads go.

The `/me/...` routes are authorized by the stack's Cognito user pool: API Gateway's Cognito authorizer
checks the ID token (signature, issuer, expiry) before the function runs and hands the function its
claims in `requestContext.authorizer.claims`, each claim as a string. The function then checks what the
authorizer does not: that the token is an ID token (`token_use`) of this stack's app client (`aud`).

A person's uploadUser is the value of one claim (`USER_CLAIM`, default `sub`, which Cognito never reuses).
Their files are the indexed entries with that uploadUser: the indexer derives it from the key with the
deployment's key layout, so ownership is decided by the same rule that indexed the file, whatever the
key looks like (`..` segments, encoded `/`, another layout). Another person's file is answered as if it
did not exist (404), so that nobody learns which keys exist. Members of the admin group may list any user
and the bucket, and read and download any file of the bucket; everybody deletes only their own files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from file_index.key_layout import KeyLayout
from file_index.objects import MAX_KEY_BYTES
from search.errors import BadRequest, FileNotFound, Forbidden, Unauthorized
from search.queries import MAX_PREFIX_BYTES, PREFIX_LIMIT, utf8_length

DEFAULT_USER_CLAIM = "sub"
DEFAULT_ADMIN_GROUP = "admins"
# S3's limit for one PUT or POST; larger files need a multipart upload.
DEFAULT_MAX_UPLOAD_BYTES = 5 * 1024**3
DEFAULT_UPLOAD_URL_EXPIRY_SECONDS = 900
DEFAULT_CONTENT_TYPE = "application/octet-stream"
MAX_NAME_BYTES = 255
_CONTENT_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
    r"(;\s*[A-Za-z0-9_.-]+=[A-Za-z0-9_.\"-]+){0,3}"
)
# Control characters and the path separators of other systems have no place in a file name.
_BAD_NAME_CHARACTERS = re.compile(r"[\x00-\x1f\x7f\\]")
_SIGNED_OUT = "sign in: this route needs a valid ID token in the Authorization header"


@dataclass(frozen=True)
class UserAccess:
    """How the `/me/...` routes know people: the app client, the claim naming them, the admin group."""

    client_id: str
    user_claim: str = DEFAULT_USER_CLAIM
    admin_group: str = DEFAULT_ADMIN_GROUP
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    upload_url_expiry_seconds: int = DEFAULT_UPLOAD_URL_EXPIRY_SECONDS
    # The page's origin: the only one the `/me/...` routes answer cross-origin requests from.
    web_origin: str | None = None


@dataclass(frozen=True)
class Person:
    """A signed-in person: their uploadUser, and whether they are in the admin group."""

    user: str
    is_admin: bool = False


def claim_groups(value: Any) -> frozenset[str]:
    """The groups of a `cognito:groups` claim, as API Gateway passes it (`a`, `a,b` or `[a b]`) or a list."""
    if isinstance(value, list | tuple):
        return frozenset(str(group) for group in value)
    if not isinstance(value, str):
        return frozenset()
    return frozenset(part for part in re.split(r"[\s,]+", value.strip().strip("[]")) if part)


def person_from_claims(claims: Mapping[str, Any] | None, access: UserAccess) -> Person:
    """The person an authorizer's claims name; Unauthorized unless they are an ID token of our client."""
    if not isinstance(claims, Mapping) or not claims:
        raise Unauthorized(_SIGNED_OUT)
    if claims.get("token_use") != "id":
        raise Unauthorized(f"{_SIGNED_OUT}; an access token is not accepted")
    if claims.get("aud") != access.client_id:
        raise Unauthorized(f"{_SIGNED_OUT}; the token is not of this application")
    user = claims.get(access.user_claim)
    if not isinstance(user, str) or not user.strip():
        raise Forbidden(
            f"your account has no {access.user_claim} attribute, which names your files here; ask an admin"
        )
    return Person(user=user, is_admin=access.admin_group in claim_groups(claims.get("cognito:groups")))


def own_folder(user: str) -> str:
    """The folder a user's uploads go to (`upload_key`): `{user}/`."""
    return f"{user}/"


def folder_prefix(user: str, prefix: str | None) -> str:
    """The key prefix `/me/files` lists for `prefix`, a folder within `user`'s own (`{user}/`).

    A leading "/" is dropped, as for an upload's folder. BadRequest if the whole prefix would pass the
    name index's limit (MAX_PREFIX_BYTES), saying how much the relative prefix may take.
    """
    folder = own_folder(user)
    relative = (prefix or "").lstrip("/")
    whole = folder + relative
    room = MAX_PREFIX_BYTES - utf8_length("user", folder)
    if utf8_length("prefix", whole) > MAX_PREFIX_BYTES:
        raise BadRequest(
            f"prefix is {utf8_length('prefix', relative)} bytes of UTF-8; within the folder {folder!r} "
            f"at most {max(room, 0)} are allowed (with the folder, {PREFIX_LIMIT})"
        )
    return whole


def check_owner(person: Person, item: Mapping[str, Any], object_key: str, *, admin_may: bool) -> None:
    """FileNotFound (as for a missing file) unless `item` is `person`'s, or they are an admin and may."""
    if item.get("uploadUser") == person.user or (admin_may and person.is_admin):
        return
    raise FileNotFound(f"no indexed file with key {object_key!r}")


def _check_segment(what: str, segment: str) -> str:
    if not segment or segment in (".", ".."):
        raise BadRequest(f"{what} must not be empty, '.' or '..'")
    if _BAD_NAME_CHARACTERS.search(segment):
        raise BadRequest(f"{what} must not hold control characters or '\\'")
    if len(segment.encode("utf-8", errors="replace")) > MAX_NAME_BYTES:
        raise BadRequest(f"{what} is longer than {MAX_NAME_BYTES} bytes")
    return segment


def upload_key(person: Person, name: Any, folder: Any, layout: KeyLayout) -> str:
    """The key a person's upload of `name` (in `folder`, optional) gets: `{user}/{folder}/{name}`.

    BadRequest for a name or folder that could leave the person's prefix or that S3 could not take, and
    for a user the key layout would not read back from the key (the indexer must credit the file to them).
    """
    if not isinstance(name, str):
        raise BadRequest("name must be a string: the file's name")
    if "/" in name:
        raise BadRequest("name must not contain '/'; give the folder as folder")
    _check_segment("name", name)
    segments: list[str] = []
    if folder is not None:
        if not isinstance(folder, str):
            raise BadRequest("folder must be a string such as 'reports/2026'")
        segments = [_check_segment("each folder of folder", part) for part in folder.strip("/").split("/")]
    key = "/".join([person.user, *segments, name])
    try:
        encoded = key.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("name and folder must be valid text") from None
    if len(encoded) > MAX_KEY_BYTES:
        raise BadRequest(f"the file's key would be longer than S3's {MAX_KEY_BYTES} bytes: {len(encoded)}")
    if layout.split(key).upload_user != person.user:
        raise BadRequest(
            f"this deployment's key layout cannot credit files to user {person.user!r} "
            "(the key layout reads another user from the key); ask an admin"
        )
    return key


def upload_content_type(value: Any) -> str:
    if value is None or value == "":
        return DEFAULT_CONTENT_TYPE
    if not isinstance(value, str) or not _CONTENT_TYPE.fullmatch(value):
        raise BadRequest("contentType must be a media type such as 'image/png'")
    return value


def upload_size(value: Any, access: UserAccess) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest("size must be the file's size in bytes, a whole number")
    if value > access.max_upload_bytes:
        raise BadRequest(
            f"size {value} is over this deployment's upload limit of {access.max_upload_bytes} bytes "
            "(maxUploadBytes)"
        )
    return value


def attachment_disposition(key: str) -> str:
    """A Content-Disposition that saves the file under its own name (the key's last segment)."""
    from urllib.parse import quote

    name = key.rsplit("/", 1)[-1] or "download"
    fallback = re.sub(r"[^A-Za-z0-9._ -]", "_", name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
