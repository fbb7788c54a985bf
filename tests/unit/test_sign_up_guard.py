"""The pre sign-up trigger of `allowedEmailDomains` with Cognito's own event shapes: a person signing in
through an identity provider for the first time gets an account only with an address in an allowed domain;
an operator's AdminCreateUser is never refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from file_index.rules.config import ConfigError
from sign_up_guard import handler
from sign_up_guard.guard import (
    DOMAINS_VARIABLE,
    REFUSAL,
    InvalidDomainError,
    SignUpRefusedError,
    check_sign_up,
    domains_from_env,
    parse_domains,
    to_env,
)

# What Cognito sends at a person's first sign-in through the pool's OIDC provider "Okta" whose attribute
# mapping is {"email": "email"}: the user name is `<provider>_<id at the provider>`, the attributes are
# the mapped ones and Cognito's own aliases, the response is the one the trigger may change.
EXTERNAL_PROVIDER_EVENT: dict[str, Any] = {
    "version": "1",
    "triggerSource": "PreSignUp_ExternalProvider",
    "region": "eu-west-1",
    "userPoolId": "eu-west-1_AbCdEfGhI",
    "userName": "Okta_00u1abcd2EFGH3ijk4x7",
    "callerContext": {
        "awsSdkVersion": "aws-sdk-unknown-unknown",
        "clientId": "4l0ncl13nt1d3x4mpl3abcdefg",
    },
    "request": {
        "userAttributes": {
            "email": "Jane.Doe@Example.com",
            "cognito:email_alias": "",
            "cognito:phone_number_alias": "",
        },
        "validationData": None,
    },
    "response": {"autoConfirmUser": False, "autoVerifyEmail": False, "autoVerifyPhone": False},
}
# An operator's `aws cognito-idp admin-create-user` (README, "Adding people").
ADMIN_CREATE_USER_EVENT: dict[str, Any] = {
    **EXTERNAL_PROVIDER_EVENT,
    "triggerSource": "PreSignUp_AdminCreateUser",
    "userName": "alice",
    "callerContext": {"awsSdkVersion": "aws-cli/2.17.0", "clientId": "CLIENT_ID_NOT_APPLICABLE"},
    "request": {"userAttributes": {"email": "alice@elsewhere.example"}, "validationData": None},
}
ALLOWED = ("example.com", "example.org")


def _with_email(email: Any) -> dict[str, Any]:
    event = copy.deepcopy(EXTERNAL_PROVIDER_EVENT)
    event["request"]["userAttributes"]["email"] = email
    return event


@pytest.mark.parametrize("email", ["jane.doe@example.com", "Jane.Doe@Example.COM", "j@example.org"])
def test_an_address_in_an_allowed_domain_gets_an_account(email: str) -> None:
    check_sign_up(_with_email(email), ALLOWED)


@pytest.mark.parametrize(
    "email",
    [
        "jane@example.net",
        "jane@eu.example.com",  # a sub-domain is another domain
        "jane@example.com.evil.example",
        "jane@evil.example@",
        "@example.com",
        "example.com",
        "",
        None,
    ],
)
def test_any_other_address_is_refused(email: Any) -> None:
    with pytest.raises(SignUpRefusedError, match="not in a domain this deployment allows"):
        check_sign_up(_with_email(email), ALLOWED)


def test_a_provider_that_gives_no_address_is_refused() -> None:
    event = copy.deepcopy(EXTERNAL_PROVIDER_EVENT)
    del event["request"]["userAttributes"]["email"]
    with pytest.raises(SignUpRefusedError):
        check_sign_up(event, ALLOWED)


def test_an_operators_admin_create_user_is_never_refused() -> None:
    check_sign_up(ADMIN_CREATE_USER_EVENT, ALLOWED)


def test_the_handler_answers_cognito_with_its_event_unchanged(
    monkeypatch: pytest.MonkeyPatch, lambda_context: object
) -> None:
    monkeypatch.setenv(DOMAINS_VARIABLE, "example.com,example.org")
    handler.allowed_domains.cache_clear()
    try:
        event = copy.deepcopy(EXTERNAL_PROVIDER_EVENT)
        # No auto-confirmation or verification: a federated user is confirmed by Cognito itself.
        assert handler.lambda_handler(event, lambda_context) == EXTERNAL_PROVIDER_EVENT  # type: ignore[arg-type]
        with pytest.raises(SignUpRefusedError) as refused:
            handler.lambda_handler(_with_email("jane@example.net"), lambda_context)  # type: ignore[arg-type]
        # What Cognito shows after "PreSignUp failed with error ": says why, names no allowed domain.
        assert str(refused.value) == REFUSAL
        assert "example.com" not in REFUSAL
    finally:
        handler.allowed_domains.cache_clear()


@pytest.mark.parametrize("value", [None, "", " , "])
def test_without_domains_the_handler_refuses_every_sign_up(
    monkeypatch: pytest.MonkeyPatch, lambda_context: object, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv(DOMAINS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(DOMAINS_VARIABLE, value)
    handler.allowed_domains.cache_clear()
    try:
        with pytest.raises(ConfigError, match=DOMAINS_VARIABLE):
            handler.lambda_handler(copy.deepcopy(EXTERNAL_PROVIDER_EVENT), lambda_context)  # type: ignore[arg-type]
    finally:
        handler.allowed_domains.cache_clear()


def test_domains_are_read_lower_case_once_and_back_from_the_environment() -> None:
    domains = parse_domains(["Example.COM", " example.org ", "example.com", "xn--bcher-kva.example"])
    assert domains == ("example.com", "example.org", "xn--bcher-kva.example")
    assert domains_from_env(to_env(domains)) == domains


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("@example.com", "without '@'"),
        ("jane@example.com", "without '@'"),
        ("example", "not a domain name such as example.com"),
        ("exa mple.com", "not a domain name such as example.com"),
        ("-example.com", "not a domain name such as example.com"),
        ("*.example.com", "not a domain name such as example.com"),
        ("bücher.example", "xn--"),
        (42, "is not a domain name"),
    ],
)
def test_a_value_that_is_not_a_domain_is_named(value: Any, why: str) -> None:
    with pytest.raises(
        InvalidDomainError, match=rf"^{value!r}".replace("*", r"\*").replace(".", r"\.")
    ) as raised:
        parse_domains([value])
    assert why in str(raised.value)
    with pytest.raises(InvalidDomainError, match="no domain given"):
        parse_domains([])
