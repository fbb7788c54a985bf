"""The `/me/...` routes in the function itself: it trusts only claims API Gateway's authorizer put there.

Defence in depth: a request that reached the function without the authorizer's claims (a misconfigured
method) is a 401, never the files of nobody in particular; a deployment without a user pool has no such
routes (404).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from local_stack.api_gateway import to_rest_event
from search import composition, handler
from tests.integration.search.conftest import SearchApi

CLIENT_ID = "web-client"
CLAIMS = {"token_use": "id", "aud": CLIENT_ID, "sub": "USER001"}


@pytest.fixture
def signed_in_api(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> SearchApi:
    monkeypatch.setenv("USER_POOL_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("WEB_ORIGIN", "https://files.example.com")
    composition.file_search.cache_clear()
    return api


def _call(
    api: SearchApi, method: str, path: str, claims: dict[str, str] | None
) -> tuple[int, Any, dict[str, Any]]:
    result = handler.lambda_handler(to_rest_event(method, path, claims=claims), api.lambda_context)
    headers = {name: values[0] for name, values in (result.get("multiValueHeaders") or {}).items()}
    body = json.loads(result["body"]) if result.get("body") else None
    return int(result["statusCode"]), body, headers


def test_a_request_without_the_authorizers_claims_is_a_401(signed_in_api: SearchApi) -> None:
    signed_in_api.put_file("USER001_a.txt", size=3)
    for method, path in (
        ("GET", "/me/files"),
        ("GET", "/me/files/USER001_a.txt"),
        ("DELETE", "/me/files/USER001_a.txt"),
        ("GET", "/me/download/USER001_a.txt"),
        ("POST", "/me/uploads"),
    ):
        status, body, headers = _call(signed_in_api, method, path, None)
        assert status == 401, (method, path, body)
        assert headers["Access-Control-Allow-Origin"] == "https://files.example.com"
        assert headers["Access-Control-Expose-Headers"] == "Retry-After"  # a 503's, for the page
    status, body, _ = _call(signed_in_api, "GET", "/me/files", CLAIMS)
    assert status == 200
    assert [item["objectKey"] for item in body["items"]] == ["USER001_a.txt"]


def test_without_a_user_pool_there_are_no_me_routes(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USER_POOL_CLIENT_ID", raising=False)
    composition.file_search.cache_clear()
    status, body, headers = _call(api, "GET", "/me/files", CLAIMS)
    assert status == 404
    assert "userAccess is off" in body["message"]
    assert "Access-Control-Allow-Origin" not in headers
    composition.file_search.cache_clear()
