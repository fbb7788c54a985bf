"""Signed-in people of the `/me/...` tests that call the handler itself: the authorizer's claims and the
Authorization header of a person's ID token, and one call of a route as them."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest

from local_stack.api_gateway import rest_claims, to_rest_event
from search import composition, handler
from tests.integration.search.conftest import SearchApi

CLIENT_ID = "web-client"


@dataclass(frozen=True)
class Caller:
    """A person as the function sees them: the authorizer's claims and the token in the header."""

    claims: dict[str, str]
    authorization: str


def person(sub: str, *, groups: list[str] | None = None) -> Caller:
    payload: dict[str, Any] = {
        "token_use": "id",
        "aud": CLIENT_ID,
        "sub": sub,
        "iat": 1700000000,
        "jti": f"jti-{sub}",
        **({"cognito:groups": groups} if groups is not None else {}),
    }
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    # The function reads the payload; checking the signature is API Gateway's.
    return Caller(rest_claims(payload), f"eyJhbGciOiJSUzI1NiJ9.{body}.c2lnbmF0dXJl")


ALICE = person("USER001")
BOB = person("USER002")
ADMIN = person("ADMIN01", groups=["admins"])


def call(
    api: SearchApi, method: str, path: str, caller: Caller = ALICE, body: Any = None
) -> tuple[int, Any, dict[str, str]]:
    """The status, JSON body (None if empty) and headers of one request as `caller`."""
    payload = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": caller.authorization, "Content-Type": "application/json"}
    event = to_rest_event(method, path, claims=caller.claims, headers=headers, body=payload)
    result = handler.lambda_handler(event, api.lambda_context)
    answered = dict(result.get("headers") or {})
    for name, values in (result.get("multiValueHeaders") or {}).items():
        answered.setdefault(name, values[0])
    text = result.get("body") or ""
    return int(result["statusCode"]), json.loads(text) if text else None, answered


@pytest.fixture
def me_api(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The search API with sign-in on (its app client `CLIENT_ID`)."""
    monkeypatch.setenv("USER_POOL_CLIENT_ID", CLIENT_ID)
    composition.file_search.cache_clear()
    yield api
    composition.file_search.cache_clear()
