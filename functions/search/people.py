"""Signed-in people: who a request's ID token names, which files are theirs, and where their uploads go.

The `/me/...` routes are authorized by the stack's Cognito user pool: API Gateway's Cognito authorizer
checks the ID token (signature, issuer, expiry, and that its `aud` is an app client of the pool) before the
function runs and hands the function its claims in `requestContext.authorizer.claims`, each claim as a
string. The function then checks that the token is an ID token (`token_use`) of this stack's app client
(`aud`).

**Groups are read from the token itself.** The authorizer flattens an array claim into one string
(`cognito:groups` `["readers,admins"]` and `["readers", "admins"]` both arrive as `readers,admins`), and
Cognito allows commas, brackets and other punctuation in group names, so that string cannot say which
groups a person is in. The function reads `cognito:groups`, a JSON array, from the payload of the ID token
in the request's `Authorization` header, the token API Gateway verified, after checking that the payload
is that of the token whose claims the authorizer passed (same `sub`, `aud`, `token_use`, `iat`, `jti` and
`origin_jti`) and that the request carries exactly one such header value. Anything that does not match
grants no group: the person is still who the claims say, and no admin.

A person's uploadUser is the value of one claim (`USER_CLAIM`, default `sub`, which Cognito never reuses).
Their files are the indexed entries with that uploadUser: the indexer derives it from the key with the
deployment's key pattern, so ownership is decided by the same rule that indexed the file, whatever the
key looks like (`..` segments, encoded `/`, another placement). Another person's file is answered as if it
did not exist (404), so that nobody learns which keys exist. Members of the admin group may list any user
and the bucket, and read and download any file of the bucket; everybody deletes only their own files.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import MAX_KEY_BYTES
from search.errors import BadRequest, FileNotFound, Forbidden, Unauthorized
from search.queries import MAX_PREFIX_BYTES, PREFIX_LIMIT, utf8_length

DEFAULT_USER_CLAIM = "sub"
DEFAULT_ADMIN_GROUP = "admins"
# S3's own limit on an object; files above `search.uploads.MULTIPART_THRESHOLD_BYTES` go in parts.
DEFAULT_MAX_UPLOAD_BYTES = 5 * 1024**4
DEFAULT_UPLOAD_URL_EXPIRY_SECONDS = 900
# A share link is signed with the function's own credentials, the Lambda role's temporary ones: S3 refuses
# the link once they expire, whatever expiry it was signed with (AWS does not say when Lambda renews them;
# hours, not days). An hour is what the API promises by default; the deployment may allow up to 12 hours,
# the longest a role session lasts, and says that such a link may stop working earlier.
DEFAULT_SHARE_LINK_MAX_SECONDS = 3600
MAX_SHARE_LINK_SECONDS = 12 * 3600
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
    # The longest a share link (`GET /me/links/{objectKey}`) may be asked for, in seconds.
    share_link_max_seconds: int = DEFAULT_SHARE_LINK_MAX_SECONDS
    # The user pool (its people's names in admins' lists) and the attribute shown as a name; None: none.
    user_pool_id: str | None = None
    owner_name_attribute: str = "name"
    # The page's origin: the only one the `/me/...` routes answer cross-origin requests from.
    web_origin: str | None = None


@dataclass(frozen=True)
class Person:
    """A signed-in person: their uploadUser, and whether they are in the admin group."""

    user: str
    is_admin: bool = False


# The claims that tie the token in the Authorization header to the claims the authorizer passed: whom it
# names, which app client and kind of token it is, and which token it is (with `iat`, compared as a time).
MATCHED_CLAIMS = ("sub", "aud", "token_use", "jti", "origin_jti")
_BEARER = "bearer "
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# How API Gateway's Cognito authorizer passes a time claim (`exp`, `iat`): `Thu Dec 06 16:08:23 UTC 2018`.
_AUTHORIZER_TIME = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2}) "
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2}) UTC (?P<year>\d{4})"
)


def claim_seconds(value: Any) -> int | None:
    """A time claim in epoch seconds: a number (the token's own), or as the authorizer passes it
    (`Thu Dec 06 16:08:23 UTC 2018`, or digits); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    if value.isascii() and value.isdigit():
        return int(value)
    match = _AUTHORIZER_TIME.fullmatch(value)
    if match is None or match["month"] not in _MONTHS:
        return None
    try:
        moment = datetime(
            int(match["year"]),
            _MONTHS.index(match["month"]) + 1,
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"]),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    return int(moment.timestamp())


def token_payload(authorization: str) -> dict[str, Any] | None:
    """The payload of the JWT in an Authorization header value (raw, or after `Bearer `), unverified;
    None if it is no JWT with a JSON object as payload."""
    token = authorization.strip()
    if token[: len(_BEARER)].lower() == _BEARER:
        token = token[len(_BEARER) :].strip()
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    return payload if isinstance(payload, dict) else None


def is_same_token(payload: Mapping[str, Any], claims: Mapping[str, Any]) -> bool:
    """Whether `payload` is that of the token whose claims the authorizer passed: MATCHED_CLAIMS are equal
    strings (or absent from both) and `iat` is the same second."""
    for name in MATCHED_CLAIMS:
        value = payload.get(name)
        if (value is None) != (claims.get(name) is None):
            return False
        if value is not None and (not isinstance(value, str) or value != claims.get(name)):
            return False
    issued = payload.get("iat")  # a number in the token itself
    same_time = type(issued) is int and issued == claim_seconds(claims.get("iat"))
    return same_time and payload.get("sub") is not None


def token_groups(claims: Mapping[str, Any], authorization: Sequence[str]) -> frozenset[str]:
    """The groups of the ID token the authorizer accepted: `cognito:groups` of the token in `authorization`
    (the request's Authorization header values), once it is shown to be that token; else none."""
    if len(set(authorization)) != 1:
        return frozenset()
    payload = token_payload(authorization[0])
    if payload is None or not is_same_token(payload, claims):
        return frozenset()
    groups = payload.get("cognito:groups", [])
    if not isinstance(groups, list) or not all(isinstance(group, str) for group in groups):
        return frozenset()
    return frozenset(groups)


def authorization_values(event: Mapping[str, Any]) -> list[str]:
    """Every value of the Authorization header of an API Gateway REST proxy event, whatever its case."""
    values: list[str] = []
    for name, given in (event.get("multiValueHeaders") or {}).items():
        if str(name).lower() == "authorization" and isinstance(given, list):
            values.extend(str(value) for value in given)
    if not values:
        for name, value in (event.get("headers") or {}).items():
            if str(name).lower() == "authorization" and value is not None:
                values.append(str(value))
    return values


def person_from_claims(
    claims: Mapping[str, Any] | None, access: UserAccess, authorization: Sequence[str] = ()
) -> Person:
    """The person an authorizer's claims name; Unauthorized unless they are an ID token of our client.

    Their groups are read from the token in `authorization`, the request's Authorization header values
    (`token_groups`): without it, nobody is an admin.
    """
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
    return Person(user=user, is_admin=access.admin_group in token_groups(claims, authorization))


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


def upload_key(person: Person, name: str, folder: str | None, key_pattern: KeyPattern) -> str:
    """The key a person's upload of `name` (in `folder`, optional) gets: `{user}/{folder}/{name}`.

    BadRequest for a name or folder that could leave the person's prefix or that S3 could not take, and
    for a user the key pattern would not read back from the key (the indexer must credit the file to them).
    """
    if "/" in name:
        raise BadRequest("name must not contain '/'; give the folder as folder")
    _check_segment("name", name)
    segments: list[str] = []
    if folder is not None:
        segments = [_check_segment("each folder of folder", part) for part in folder.strip("/").split("/")]
    key = "/".join([person.user, *segments, name])
    try:
        encoded = key.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("name and folder must be valid text") from None
    if len(encoded) > MAX_KEY_BYTES:
        raise BadRequest(f"the file's key would be longer than S3's {MAX_KEY_BYTES} bytes: {len(encoded)}")
    if key_pattern.split(key).upload_user != person.user:
        raise BadRequest(
            f"this deployment's key pattern cannot credit files to user {person.user!r} "
            "(the key pattern reads another user from the key); ask an admin"
        )
    return key


def upload_content_type(value: str | None) -> str:
    if not value:
        return DEFAULT_CONTENT_TYPE
    if not _CONTENT_TYPE.fullmatch(value):
        raise BadRequest("contentType must be a media type such as 'image/png'")
    return value


def upload_size(value: int, access: UserAccess) -> int:
    """`value`, an upload's size in bytes, if it is within the deployment's upload limit."""
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


def share_link_seconds(given: Sequence[str] | None, access: UserAccess) -> int:
    """The seconds a share link is asked for (`expiresIn`, given once): a whole number from 1 to the
    deployment's cap; BadRequest saying what is allowed otherwise."""
    cap = access.share_link_max_seconds
    allowed = f"a whole number of seconds from 1 to {cap} (shareLinkMaxSeconds)"
    if not given:
        raise BadRequest(f"expiresIn is required: {allowed}")
    if len(given) > 1:
        raise BadRequest(f"expiresIn is given {len(given)} times: give it once")
    text = given[0].strip()
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise BadRequest(f"expiresIn must be {allowed}, not {given[0]!r}")
    seconds = int(text)
    if seconds < 1:
        raise BadRequest(f"expiresIn must be {allowed}, not {seconds}")
    if seconds > cap:
        raise BadRequest(f"expiresIn {seconds} is over this deployment's cap; allowed: {allowed}")
    return seconds
