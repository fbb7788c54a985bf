"""Who a `/me/...` request's claims name, and where their uploads may go (search.people)."""

from __future__ import annotations

import pytest

from file_index.key_layout import KeyLayout
from search.errors import BadRequest, Forbidden, Unauthorized
from search.people import Person, UserAccess, claim_groups, person_from_claims, upload_key

ACCESS = UserAccess(client_id="client-1")
CLAIMS = {"token_use": "id", "aud": "client-1", "sub": "5f0c-11", "cognito:username": "alice"}


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        ("admins", {"admins"}),
        ("admins,editors", {"admins", "editors"}),
        ("[admins editors]", {"admins", "editors"}),
        (["admins", "x"], {"admins", "x"}),
        ("", set()),
        (None, set()),
    ],
)
def test_groups_are_read_in_every_form_api_gateway_passes(value: object, groups: set[str]) -> None:
    assert claim_groups(value) == groups


def test_the_person_is_the_configured_claim() -> None:
    assert person_from_claims(CLAIMS, ACCESS) == Person(user="5f0c-11", is_admin=False)
    by_name = UserAccess(client_id="client-1", user_claim="cognito:username")
    assert person_from_claims(CLAIMS, by_name).user == "alice"
    admin = {**CLAIMS, "cognito:groups": "[admins staff]"}
    assert person_from_claims(admin, ACCESS).is_admin
    assert not person_from_claims({**CLAIMS, "cognito:groups": "administrators"}, ACCESS).is_admin


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
    layout = KeyLayout.parse(None)
    person = Person(user="USER001")
    assert upload_key(person, "a.txt", None, layout) == "USER001/a.txt"
    assert upload_key(person, "a.txt", "/reports/2026/", layout) == "USER001/reports/2026/a.txt"


def test_a_user_the_layout_would_not_read_back_cannot_upload() -> None:
    # The default layout reads the user up to the first "_" or "/": "john_doe/..." would be john's.
    with pytest.raises(BadRequest, match="cannot credit files to user 'john_doe'"):
        upload_key(Person(user="john_doe"), "a.txt", None, KeyLayout.parse(None))
    with pytest.raises(BadRequest, match="cannot credit"):
        upload_key(
            Person(user="alice"), "a.txt", None, KeyLayout.parse(r"uploads/(?P<user>[^/]+)/(?P<file>.+)")
        )
