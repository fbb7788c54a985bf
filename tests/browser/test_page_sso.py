"""Sign-in with an organisation in a real Chromium: the page's "Sign in with <name>" through the local
stand-in of the managed login domain (authorization code with PKCE), the files listed with those tokens,
refresh at the domain, and sign-out revoking the refresh token and then ending the managed login's own
session at the domain's `/logout` (so the next person at a shared machine is not signed in as this one)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from local_stack.identity_provider import provider_person
from local_stack.stack import LocalFileSearch
from sign_up_guard.guard import REFUSAL
from tests.browser.helpers import axe_violations, listed
from tests.integration.local_stack.conftest import module_aws_environment

from playwright.sync_api import Page, expect  # isort: skip

__all__ = ["module_aws_environment"]

FEDERATION = {
    "signInDomainPrefix": "files-example",
    "identityProviders": [
        {
            "type": "OIDC",
            "name": "Okta",
            "issuer": "https://example.okta.com",
            "clientId": "0oa1example",
            "clientSecretName": "s3-file-search/okta",
        },
        {"type": "SAML", "name": "Entra", "metadataUrl": "https://login.example/federationmetadata.xml"},
    ],
}
SESSION_KEY = "s3-file-search.session"


@pytest.fixture(scope="module", autouse=True)
def _aws_credentials(module_aws_environment: None) -> None:
    """The shared AWS environment of a module whose stack lives through many tests (conftest)."""


@pytest.fixture(scope="module")
def ready(module_aws_environment: None) -> Iterator[dict[str, Any]]:
    """A stack of its own with identity providers (the default stack has none)."""
    with LocalFileSearch(
        aws_port=0, api_port=0, web_port=0, log_level="WARNING", context=FEDERATION
    ) as stack:
        yield stack.describe()


def _config(ready: dict[str, Any]) -> dict[str, Any]:
    with urllib.request.urlopen(f"{ready['webUrl']}/config.json", timeout=10) as answer:  # noqa: S310
        config: dict[str, Any] = json.loads(answer.read())
    return config


def _refresh_at_domain(config: dict[str, Any], refresh_token: str) -> int:
    form = {
        "grant_type": "refresh_token",
        "client_id": config["userPoolClientId"],
        "refresh_token": refresh_token,
    }
    request = urllib.request.Request(  # noqa: S310 (the local stand-in)
        f"{config['signInDomain']}/oauth2/token",
        data=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _managed_logout(page: Page, config: dict[str, Any]) -> list[dict[str, list[str]]]:
    """The query of every request the page makes to the domain's `GET /logout` (the local stand-in answers
    it as Cognito does: back to `logout_uri` only when `client_id` is the app client and `logout_uri` one
    of its sign-out URLs as moto holds them, else an error page)."""
    asked: list[dict[str, list[str]]] = []
    domain_logout = f"{config['signInDomain']}/logout"

    def seen(request: Any) -> None:
        if request.url == domain_logout or request.url.startswith(f"{domain_logout}?"):
            asked.append(parse_qs(urlsplit(request.url).query))

    page.on("request", seen)
    return asked


def test_config_names_the_domain_and_the_providers(ready: dict[str, Any]) -> None:
    config = _config(ready)
    assert config["identityProviders"] == ["Okta", "Entra"]
    assert config["signInRedirectUri"] == f"{ready['webUrl']}/"
    assert config["signInDomain"].startswith("http://127.0.0.1:")


def test_sign_in_with_an_organisation_then_sign_out_revokes(page: Page, ready: dict[str, Any]) -> None:
    page.goto(ready["webUrl"])
    providers = page.get_by_role("group", name="Sign in with your organisation")
    expect(providers.get_by_role("button")).to_have_text(["Sign in with Okta", "Sign in with Entra"])
    assert axe_violations(page) == []
    with page.expect_request(lambda request: "/oauth2/authorize?" in request.url) as asked:
        page.get_by_role("button", name="Sign in with Okta").click()
    authorize = asked.value.url
    assert "identity_provider=Okta" in authorize
    assert "code_challenge_method=S256" in authorize
    assert "response_type=code" in authorize
    expect(page.get_by_text("Signed in as")).to_contain_text(provider_person("Okta"))
    # The code and state leave the address bar; the verifier leaves the tab's storage.
    assert page.url == f"{ready['webUrl']}/"
    assert page.evaluate("sessionStorage.getItem('s3-file-search.oauth')") is None
    listed(page)  # the API took the ID token
    expect(page.locator("#list-error")).to_be_hidden()
    kept = json.loads(page.evaluate(f"sessionStorage.getItem('{SESSION_KEY}')"))
    assert kept["via"] == "oauth"
    # Refresh goes to the domain's token endpoint and keeps the person signed in.
    renewed = page.evaluate(
        """async () => {
            const tokens = await import('./session.js');
            const before = tokens.session.idToken;
            await tokens.refresh();
            return tokens.session.idToken !== before && tokens.session.via;
        }"""
    )
    assert renewed == "oauth"
    config = _config(ready)
    assert _refresh_at_domain(config, kept["refreshToken"]) == 200
    logouts = _managed_logout(page, config)
    with page.expect_response(lambda response: response.url.endswith("/oauth2/revoke")) as revoked:
        page.get_by_role("button", name="Sign out").click()
    assert revoked.value.status == 200
    # Then the managed login's own session ends at the domain's /logout, which sends the browser back to
    # the page: the sign-out URL the stack registers on the app client.
    expect(page.get_by_role("status").filter(has_text="You are signed out.")).to_be_visible()
    assert logouts == [
        {"client_id": [config["userPoolClientId"]], "logout_uri": [config["signInRedirectUri"]]}
    ]
    assert page.url == f"{ready['webUrl']}/"
    expect(page.get_by_role("button", name="Sign in with Okta")).to_be_visible()
    expect(page.get_by_text("Signed in as")).to_be_hidden()
    assert page.evaluate(f"sessionStorage.getItem('{SESSION_KEY}')") is None
    assert _refresh_at_domain(config, kept["refreshToken"]) == 400
    # A reload says nothing of a sign-out any more.
    page.reload()
    expect(page.get_by_role("button", name="Sign in with Okta")).to_be_visible()
    expect(page.locator("#sign-in-status")).to_have_text("")


def test_a_password_sign_in_signs_out_without_leaving_the_page(page: Page, ready: dict[str, Any]) -> None:
    """A password sign-in never used the managed login: sign-out revokes its token with Cognito's API and
    stays on the page."""
    config = _config(ready)
    logouts = _managed_logout(page, config)
    page.goto(ready["webUrl"])
    page.get_by_label("User name", exact=True).fill(ready["demoUser"])
    page.get_by_label("Password", exact=True).fill(ready["demoPassword"])
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_text("Signed in as")).to_contain_text(ready["demoUser"])
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status").filter(has_text="You are signed out.")).to_be_visible()
    assert logouts == []
    assert page.url == f"{ready['webUrl']}/"


def test_a_code_that_this_tab_did_not_ask_for_is_refused(page: Page, ready: dict[str, Any]) -> None:
    page.goto(f"{ready['webUrl']}/?code=stolen&state=elsewhere")
    expect(page.locator("#sign-in-error")).to_have_text(
        "That sign-in did not start on this page. Please sign in again."
    )
    assert page.url == f"{ready['webUrl']}/"
    expect(page.get_by_text("Signed in as")).to_be_hidden()


def test_a_refused_sign_in_is_said(page: Page, ready: dict[str, Any]) -> None:
    page.goto(f"{ready['webUrl']}/?error=access_denied&error_description=Not+in+the+group")
    expect(page.locator("#sign-in-error")).to_have_text(
        "Sign-in with your organisation failed: Not in the group."
    )


def test_a_sign_up_the_pool_refused_is_said_once(page: Page, ready: dict[str, Any]) -> None:
    """`allowedEmailDomains`: Cognito sends the person back with its trigger's refusal, a sentence of its own
    (functions/sign_up_guard); the page says it without a second full stop."""
    refusal = f"PreSignUp failed with error {REFUSAL}."
    page.goto(f"{ready['webUrl']}/?{urlencode({'error_description': refusal, 'error': 'invalid_request'})}")
    expect(page.locator("#sign-in-error")).to_have_text(f"Sign-in with your organisation failed: {refusal}")
    expect(page.get_by_text("Signed in as")).to_be_hidden()
