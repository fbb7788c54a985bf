"""The local stand-in for the managed login domain: the code grant with PKCE as Cognito answers it (a wrong
verifier, a second use of a code, another redirect URI are refused), refresh, and revocation."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import boto3
import pytest
from moto import mock_aws

from infra.federation import IdentityProvider
from local_stack.cognito import LocalUserPool, create_user_pool
from local_stack.identity_provider import LocalSignInDomain, code_challenge, provider_person

PAGE = "http://127.0.0.1:9/"
OKTA = IdentityProvider(
    kind="OIDC", name="Okta", issuer="https://example.okta.com", client_id="x", client_secret_name="okta"
)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.fixture
def domain(aws_credentials: None) -> Iterator[tuple[LocalSignInDomain, LocalUserPool, Any]]:
    with mock_aws():
        cognito = boto3.client("cognito-idp", region_name="us-east-1")
        pool = create_user_pool(cognito, endpoint="http://unused", region="us-east-1", admin_group="admins")
        with LocalSignInDomain(
            host="127.0.0.1", cognito=cognito, pool=pool, providers=(OKTA,), page_url=PAGE
        ) as started:
            yield started, pool, cognito


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")


def _authorize(domain: LocalSignInDomain, pool: LocalUserPool, **changes: str) -> tuple[int, str]:
    query = {
        "client_id": pool.client_id,
        "redirect_uri": PAGE,
        "response_type": "code",
        "identity_provider": "Okta",
        "scope": "openid email profile",
        "code_challenge_method": "S256",
        "code_challenge": code_challenge("the-verifier-" + "v" * 40),
        "state": "s-123",
        **changes,
    }
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(f"{domain.url}/oauth2/authorize?{urlencode(query)}", timeout=10) as answer:
            return answer.status, answer.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location") or error.read().decode()


def _post(domain: LocalSignInDomain, path: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(  # noqa: S310 (the stand-in's own address)
        f"{domain.url}{path}",
        data=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            body = answer.read()
            return answer.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _code(domain: LocalSignInDomain, pool: LocalUserPool) -> str:
    status, location = _authorize(domain, pool)
    assert status == 302
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == PAGE
    query = parse_qs(parts.query)
    assert query["state"] == ["s-123"]
    return query["code"][0]


def _redeem(
    domain: LocalSignInDomain, pool: LocalUserPool, code: str, verifier: str
) -> tuple[int, dict[str, Any]]:
    form = {
        "grant_type": "authorization_code",
        "client_id": pool.client_id,
        "code": code,
        "redirect_uri": PAGE,
        "code_verifier": verifier,
    }
    return _post(domain, "/oauth2/token", form)


def test_the_code_with_its_verifier_gives_the_pools_tokens(domain: Any) -> None:
    site, pool, _ = domain
    status, tokens = _redeem(site, pool, _code(site, pool), "the-verifier-" + "v" * 40)
    assert status == 200
    assert tokens["token_type"] == "Bearer"
    # The pool's own ID token for the federated person: what the local API's authorizer checks.
    claims = json.loads(_payload(tokens["id_token"]))
    assert claims["cognito:username"] == provider_person("Okta")
    assert claims["aud"] == pool.client_id
    assert claims["token_use"] == "id"
    assert claims["iss"] == pool.issuer


def _payload(token: str) -> str:
    body = token.split(".")[1]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def test_a_wrong_verifier_is_refused_and_spends_the_code(domain: Any) -> None:
    site, pool, _ = domain
    code = _code(site, pool)
    status, answer = _redeem(site, pool, code, "another-verifier-" + "w" * 40)
    assert (status, answer["error"]) == (400, "invalid_grant")
    # A code is good once: the right verifier after a wrong one no longer redeems it.
    status, answer = _redeem(site, pool, code, "the-verifier-" + "v" * 40)
    assert (status, answer["error"]) == (400, "invalid_grant")


def test_a_code_is_good_once_and_for_its_redirect_uri(domain: Any) -> None:
    site, pool, _ = domain
    code = _code(site, pool)
    form = {
        "grant_type": "authorization_code",
        "client_id": pool.client_id,
        "code": code,
        "redirect_uri": "http://127.0.0.1:9/elsewhere",
        "code_verifier": "the-verifier-" + "v" * 40,
    }
    assert _post(site, "/oauth2/token", form)[0] == 400
    code = _code(site, pool)
    assert _redeem(site, pool, code, "the-verifier-" + "v" * 40)[0] == 200
    assert _redeem(site, pool, code, "the-verifier-" + "v" * 40)[0] == 400


@pytest.mark.parametrize(
    "changes",
    [
        {"redirect_uri": "http://127.0.0.1:9/evil"},
        {"client_id": "not-a-client"},
        {"identity_provider": "Entra"},
        {"identity_provider": "COGNITO"},
        {"response_type": "token"},
        {"code_challenge_method": "plain"},
        {"code_challenge": ""},
    ],
)
def test_authorize_refuses_what_cognito_refuses(domain: Any, changes: dict[str, str]) -> None:
    site, pool, _ = domain
    status, _ = _authorize(site, pool, **changes)
    assert status == 400


def test_refresh_then_revoke(domain: Any) -> None:
    site, pool, _ = domain
    _, tokens = _redeem(site, pool, _code(site, pool), "the-verifier-" + "v" * 40)
    refresh = {
        "grant_type": "refresh_token",
        "client_id": pool.client_id,
        "refresh_token": tokens["refresh_token"],
    }
    status, renewed = _post(site, "/oauth2/token", refresh)
    assert status == 200
    assert "refresh_token" not in renewed
    assert renewed["id_token"]
    status, _ = _post(site, "/oauth2/revoke", {"token": tokens["refresh_token"], "client_id": pool.client_id})
    assert status == 200
    status, answer = _post(site, "/oauth2/token", refresh)
    assert (status, answer["error"]) == (400, "invalid_grant")


def test_unknown_grant_types_are_refused(domain: Any) -> None:
    site, pool, _ = domain
    status, answer = _post(site, "/oauth2/token", {"grant_type": "password", "client_id": pool.client_id})
    assert (status, answer["error"]) == (400, "unsupported_grant_type")


def _logout(domain: LocalSignInDomain, query: dict[str, str]) -> tuple[int, str]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(f"{domain.url}/logout?{urlencode(query)}", timeout=10) as answer:
            return answer.status, answer.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location") or error.read().decode()


def test_logout_sends_the_browser_back_only_to_a_sign_out_url_of_the_client(domain: Any) -> None:
    started, pool, cognito = domain
    allowed = cognito.describe_user_pool_client(UserPoolId=pool.pool_id, ClientId=pool.client_id)[
        "UserPoolClient"
    ]["LogoutURLs"]
    assert allowed == [PAGE]
    assert _logout(started, {"client_id": pool.client_id, "logout_uri": PAGE}) == (302, PAGE)
    status, body = _logout(started, {"client_id": pool.client_id, "logout_uri": "https://evil.example/"})
    assert (status, "not a sign-out URL" in body) == (400, True)
    assert _logout(started, {"client_id": "other", "logout_uri": PAGE})[0] == 400
