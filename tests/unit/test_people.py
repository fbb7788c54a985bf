"""Who a `/me/...` request's claims name, and where their uploads may go (search.people)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from file_index.rules.key_pattern import KeyPattern
from local_stack.api_gateway import rest_claim, rest_claims
from search.errors import BadRequest, Forbidden, Unauthorized
from search.people import (
    Person,
    UserAccess,
    authorization_values,
    claim_seconds,
    person_from_claims,
    upload_key,
)

ACCESS = UserAccess(client_id="client-1")
CLAIMS = {"token_use": "id", "aud": "client-1", "sub": "5f0c-11", "cognito:username": "alice"}
# An ID token's payload as Cognito writes it.
TOKEN: dict[str, Any] = {
    **CLAIMS,
    "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc",
    "email_verified": True,
    "auth_time": 1544112503,
    "iat": 1544112503,
    "exp": 1544116103,
    "jti": "a2b6c1f0-1111-4c1e-9a52-5d1d3c2c9e10",
    "origin_jti": "0f1e2d3c-2222-4b5a-8c7d-6e5f4a3b2c1d",
}


def _token(payload: dict[str, Any]) -> str:
    """A JWT with `payload` (the function reads the payload; checking the signature is API Gateway's)."""
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.{body}.c2lnbmF0dXJl"


def _signed_in(groups: list[str] | None, **changes: Any) -> tuple[dict[str, str], list[str]]:
    """The authorizer's claims of an ID token in `groups` (as API Gateway REST passes them) and the
    Authorization header values of the request that carried the token (with `changes` in its payload)."""
    payload: dict[str, Any] = {**TOKEN, **({"cognito:groups": groups} if groups is not None else {})}
    return rest_claims(payload), [_token({**payload, **changes})]


@pytest.mark.parametrize(
    ("groups", "admin"),
    [
        (["admins"], True),
        (["readers", "admins"], True),
        (["readers,admins"], False),
        (["[admins]"], False),
        (["[admins", "x]"], False),
        (["a b"], False),
        (["admins "], False),
        ([" admins"], False),
        (["administrators"], False),
        (["Admins"], False),
        ([], False),
        (None, False),
        (["readers,admins", "admins"], True),
    ],
)
def test_group_membership_is_exact(groups: list[str] | None, admin: bool) -> None:
    claims, authorization = _signed_in(groups)
    assert person_from_claims(claims, ACCESS, authorization) == Person(user="5f0c-11", is_admin=admin)


def test_the_flattened_groups_claim_alone_grants_nothing() -> None:
    claims, _ = _signed_in(["readers", "admins"])
    assert claims["cognito:groups"] == "readers,admins"
    assert not person_from_claims(claims, ACCESS).is_admin
    assert not person_from_claims({**claims, "cognito:groups": "admins"}, ACCESS, []).is_admin


@pytest.mark.parametrize(
    "changes",
    [
        {"sub": "someone-else"},
        {"aud": "client-2"},
        {"token_use": "access"},
        {"jti": "another-token"},
        {"origin_jti": "another-sign-in"},
        {"iat": TOKEN["iat"] + 1},
        {"iat": str(TOKEN["iat"])},
        {"sub": None},
        {"iat": None},
    ],
)
def test_a_header_that_is_not_the_authorized_token_grants_nothing(changes: dict[str, Any]) -> None:
    claims, authorization = _signed_in(["admins"], **changes)
    person = person_from_claims(claims, ACCESS, authorization)
    assert person == Person(user="5f0c-11", is_admin=False)


@pytest.mark.parametrize(
    "authorization",
    [
        [],
        ["not a token"],
        ["a.b.c"],
        ["a.W10.c"],  # a JSON array, not an object
    ],
)
def test_a_header_without_a_readable_token_grants_nothing(authorization: list[str]) -> None:
    claims, _ = _signed_in(["admins"])
    assert not person_from_claims(claims, ACCESS, authorization).is_admin


def test_two_authorization_values_grant_nothing_whatever_they_hold() -> None:
    claims, authorization = _signed_in(["admins"])
    token = authorization[0]
    resigned = f"{token.rsplit('.', 1)[0]}.Zm9yZ2Vk"
    assert person_from_claims(claims, ACCESS, [token]).is_admin
    for values in ([token, f"Bearer {token}"], [token, resigned], [resigned, token]):
        assert not person_from_claims(claims, ACCESS, values).is_admin
    # The same value twice is one token.
    assert person_from_claims(claims, ACCESS, [token, token]).is_admin


def test_the_token_may_follow_bearer() -> None:
    claims, authorization = _signed_in(["admins"])
    assert person_from_claims(claims, ACCESS, [f"Bearer {authorization[0]}"]).is_admin
    assert person_from_claims(claims, ACCESS, [f"bearer  {authorization[0]} "]).is_admin


def test_times_are_read_as_the_authorizer_passes_them() -> None:
    assert rest_claim("iat", 1544112503) == "Thu Dec 06 16:08:23 UTC 2018"
    assert claim_seconds("Thu Dec 06 16:08:23 UTC 2018") == 1544112503
    assert claim_seconds("1544112503") == 1544112503
    assert claim_seconds(1544112503) == 1544112503
    for value in ("Thu Dec 32 16:08:23 UTC 2018", "Thu Foo 06 16:08:23 UTC 2018", "", "-1", None, True, 1.5):
        assert claim_seconds(value) is None


def test_the_authorization_header_is_read_in_any_case_and_every_value() -> None:
    event = {
        "headers": {"authorization": "b"},
        "multiValueHeaders": {"Authorization": ["a"], "AUTHORIZATION": ["b"]},
    }
    assert authorization_values(event) == ["a", "b"]
    assert authorization_values({"headers": {"Authorization": "a"}}) == ["a"]
    assert authorization_values({}) == []


def test_the_person_is_the_configured_claim() -> None:
    assert person_from_claims(CLAIMS, ACCESS) == Person(user="5f0c-11", is_admin=False)
    by_name = UserAccess(client_id="client-1", user_claim="cognito:username")
    assert person_from_claims(CLAIMS, by_name).user == "alice"


@pytest.mark.parametrize(
    "claims",
    [
        None,
        {},
        {**CLAIMS, "token_use": "access"},
        {**CLAIMS, "aud": "client-2"},
        {k: v for k, v in CLAIMS.items() if k != "aud"},
    ],
)
def test_claims_that_are_not_an_id_token_of_this_client_are_refused(claims: dict[str, str] | None) -> None:
    with pytest.raises(Unauthorized):
        person_from_claims(claims, ACCESS)


def test_a_person_without_the_claim_is_told_so() -> None:
    access = UserAccess(client_id="client-1", user_claim="custom:uploadUser")
    with pytest.raises(Forbidden, match="no custom:uploadUser attribute"):
        person_from_claims(CLAIMS, access)


def test_uploads_go_under_the_persons_prefix() -> None:
    key_pattern = KeyPattern.parse(None)
    person = Person(user="USER001")
    assert upload_key(person, "a.txt", None, key_pattern) == "USER001/a.txt"
    assert upload_key(person, "a.txt", "/reports/2026/", key_pattern) == "USER001/reports/2026/a.txt"


def test_a_user_the_placement_would_not_read_back_cannot_upload() -> None:
    # The default placement reads the user up to the first "_" or "/": "john_doe/..." would be john's.
    with pytest.raises(BadRequest, match="cannot credit files to user 'john_doe'"):
        upload_key(Person(user="john_doe"), "a.txt", None, KeyPattern.parse(None))
    with pytest.raises(BadRequest, match="cannot credit"):
        upload_key(
            Person(user="alice"), "a.txt", None, KeyPattern.parse(r"uploads/(?P<user>[^/]+)/(?P<file>.+)")
        )
