"""Helpers of the signed-in tests: sign in at the local pool, make tokens, call the `/me/...` routes."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import boto3
from joserfc import jwt
from joserfc.jwk import RSAKey
from moto.utilities.utils import load_resource

from local_stack.web import post_form

__all__ = ["post_form"]

FAKE = "testing"


def cognito(endpoint: str) -> Any:
    return boto3.client(
        "cognito-idp",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=FAKE,
        aws_secret_access_key=FAKE,
        aws_session_token=FAKE,
    )


def sign_in(endpoint: str, client_id: str, username: str, password: str) -> dict[str, Any]:
    """Cognito's AuthenticationResult (IdToken, AccessToken, RefreshToken) for a password sign-in."""
    result: dict[str, Any] = cognito(endpoint).initiate_auth(
        AuthFlow="USER_PASSWORD_AUTH",
        ClientId=client_id,
        AuthParameters={"USERNAME": username, "PASSWORD": password},
    )["AuthenticationResult"]
    return result


def add_person(endpoint: str, pool_id: str, username: str, password: str = "Another-Passw0rd!") -> str:  # noqa: S107
    """A new person in the pool; returns their password."""
    client = cognito(endpoint)
    client.admin_create_user(UserPoolId=pool_id, Username=username, MessageAction="SUPPRESS")
    client.admin_set_user_password(UserPoolId=pool_id, Username=username, Password=password, Permanent=True)
    return password


def claims_of(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (to build tampered copies)."""
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


def moto_signing_key() -> RSAKey:
    """The local pool's signing key (moto's, public knowledge): a token it signs is one the pool made."""
    return RSAKey.import_key(load_resource("cognitoidp/resources/jwks-private.json"))


def signed(claims: Mapping[str, Any], key: RSAKey | None = None, kid: str = "dummy") -> str:
    return jwt.encode({"alg": "RS256", "kid": kid}, dict(claims), key or moto_signing_key())


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def edited(token: str, **changes: Any) -> str:
    """The token with its claims changed and its signature kept (so it no longer matches)."""
    header, _, signature = token.split(".")
    claims = {**claims_of(token), **changes}
    return f"{header}.{b64(json.dumps(claims).encode())}.{signature}"


def unsigned(claims: Mapping[str, Any]) -> str:
    """`alg: none`: no signature at all."""
    header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{b64(json.dumps(dict(claims)).encode())}."


def expired(token: str) -> str:
    """The token's claims, expired an hour ago, signed by the pool's own key."""
    now = int(time.time())
    return signed({**claims_of(token), "iat": now - 7200, "auth_time": now - 7200, "exp": now - 3600})


def key_path(key: str) -> str:
    return quote(key, safe="")


# The answers that say "retry later" (the stage's throttle, a throttled or slow DynamoDB), and how often a
# helper tries a request before it returns such an answer: a loaded test machine makes the local stack's
# DynamoDB slow at times, and the API answers that with a 503, as AWS would.
RETRY_LATER_STATUSES = frozenset({429, 503})
MAX_ATTEMPTS = 5


def retry_delay(status: int, headers: Mapping[str, str], attempt: int) -> float | None:
    """Seconds to wait before trying again after an answer of `status`, None when it is final."""
    if status not in RETRY_LATER_STATUSES or attempt >= MAX_ATTEMPTS:
        return None
    retry_after = {name.lower(): value for name, value in headers.items()}.get("retry-after", "1")
    return float(retry_after) if retry_after.isdigit() else 1.0


def call(
    url: str,
    method: str = "GET",
    *,
    token: str | None = None,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """(status, JSON body or raw bytes, headers) of one request, tried again after a 429 or 503 (as its
    Retry-After says); redirects are not followed."""
    attempt = 1
    while True:
        status, answer, answer_headers = _call_once(url, method, token=token, body=body, headers=headers)
        delay = retry_delay(status, answer_headers, attempt)
        if delay is None:
            return status, answer, answer_headers
        time.sleep(delay)
        attempt += 1


def _call_once(
    url: str,
    method: str,
    *,
    token: str | None,
    body: Any,
    headers: Mapping[str, str] | None,
) -> tuple[int, Any, dict[str, str]]:
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = token
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=sent)  # noqa: S310
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        with opener.open(request, timeout=30) as response:
            status, raw, answer_headers = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, answer_headers = error.code, error.read(), dict(error.headers)
    try:
        return status, json.loads(raw) if raw else None, answer_headers
    except ValueError:
        return status, raw, answer_headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
