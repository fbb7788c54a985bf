"""Nobody becomes another person by writing their own attributes, through `python -m local_stack.serve`.

A signed-in person holds an access token with which Cognito's `UpdateUserAttributes` writes their own
attributes. The claim that names their files (`userClaim`, by default `sub`) must stay theirs whatever
they write. Real Cognito refuses a write outside the app client's write attributes; moto does not (it
writes any attribute, even `sub`), so these tests show what holds on the local pool all the same: its
client has the deployed client's write attributes, and the token's `sub` is the pool's own id of the
person, which no write reaches.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from infra.people import USER_WRITABLE_ATTRIBUTES
from local_stack.stack import InvalidConfigurationError, LocalFileSearch
from tests.integration.local_stack.conftest import serving
from tests.integration.local_stack.signed_in import (
    add_person,
    call,
    claims_of,
    cognito,
    key_path,
    post_form,
    sign_in,
)

pytestmark = pytest.mark.xdist_group("serve-identity-claim")


@pytest.fixture(scope="module")
def ready() -> Iterator[dict[str, Any]]:
    with serving() as started:
        yield started


def _upload(ready: dict[str, Any], id_token: str, name: str) -> str:
    status, form, _ = call(
        f"{ready['apiUrl']}/me/uploads",
        "POST",
        token=id_token,
        body={"name": name, "contentType": "text/plain", "size": 5},
    )
    assert status == 200, form
    assert post_form(form["url"], form["fields"], b"hello") == 204
    key: str = form["key"]
    return key


def _listed_keys(ready: dict[str, Any], id_token: str, expected: int) -> list[str]:
    """The keys of a person's own files, once `expected` of them are indexed (the indexer runs in serve)."""
    for _ in range(200):
        status, page, _ = call(f"{ready['apiUrl']}/me/files", token=id_token)
        assert status == 200, page
        if len(page["items"]) >= expected:
            return [item["objectKey"] for item in page["items"]]
        time.sleep(0.05)
    pytest.fail(f"fewer than {expected} files were ever listed")


@pytest.fixture(scope="module")
def people(ready: dict[str, Any]) -> dict[str, Any]:
    """mallory and victim, signed in, each with one uploaded file."""
    endpoint, pool, client = ready["awsEndpoint"], ready["userPoolId"], ready["userPoolClientId"]
    found: dict[str, Any] = {}
    for name in ("mallory", "victim"):
        password = add_person(endpoint, pool, name)
        tokens = sign_in(endpoint, client, name, password)
        found[name] = {
            "password": password,
            "tokens": tokens,
            "sub": claims_of(tokens["IdToken"])["sub"],
            "key": _upload(ready, tokens["IdToken"], f"{name}-notes.txt"),
        }
    for name in ("mallory", "victim"):
        assert _listed_keys(ready, found[name]["tokens"]["IdToken"], 1) == [found[name]["key"]]
    return found


def test_the_local_client_lets_people_write_only_what_the_deployed_one_does(ready: dict[str, Any]) -> None:
    client = cognito(ready["awsEndpoint"]).describe_user_pool_client(
        UserPoolId=ready["userPoolId"], ClientId=ready["userPoolClientId"]
    )["UserPoolClient"]
    assert client["WriteAttributes"] == list(USER_WRITABLE_ATTRIBUTES)
    assert not {"sub", "email", "preferred_username", "custom:uploadUser"} & set(client["WriteAttributes"])


def test_writing_anothers_identity_changes_nobody(ready: dict[str, Any], people: dict[str, Any]) -> None:
    endpoint, client_id, api = ready["awsEndpoint"], ready["userPoolClientId"], ready["apiUrl"]
    mallory, victim = people["mallory"], people["victim"]
    pool = cognito(endpoint)
    pool.update_user_attributes(
        AccessToken=mallory["tokens"]["AccessToken"],
        UserAttributes=[
            {"Name": "sub", "Value": victim["sub"]},
            {"Name": "email", "Value": "victim@example.com"},
            {"Name": "preferred_username", "Value": "victim"},
        ],
    )
    # moto wrote every one of them (real Cognito refuses: `sub` is immutable, and none of them is in the
    # client's write attributes): the emulator enforces neither, so the test below is what holds locally.
    attributes = {
        attribute["Name"]: attribute["Value"]
        for attribute in pool.admin_get_user(UserPoolId=ready["userPoolId"], Username="mallory")[
            "UserAttributes"
        ]
    }
    assert attributes["sub"] == victim["sub"]
    assert attributes["preferred_username"] == "victim"

    # Fresh tokens, by password and by refresh, still name mallory: the token's `sub` is the pool's id.
    signed_in = sign_in(endpoint, client_id, "mallory", mallory["password"])["IdToken"]
    refreshed = pool.initiate_auth(
        AuthFlow="REFRESH_TOKEN_AUTH",
        ClientId=client_id,
        AuthParameters={"REFRESH_TOKEN": mallory["tokens"]["RefreshToken"]},
    )["AuthenticationResult"]["IdToken"]
    victims_key = key_path(victim["key"])
    for token in (signed_in, refreshed):
        assert claims_of(token)["sub"] == mallory["sub"]
        assert _listed_keys(ready, token, 1) == [mallory["key"]]
        assert call(f"{api}/me/files/{victims_key}", token=token)[0] == 404
        assert call(f"{api}/me/download/{victims_key}", token=token)[0] == 404
        assert call(f"{api}/me/files/{victims_key}", "DELETE", token=token)[0] == 404
    # The victim still has their file.
    assert _listed_keys(ready, victim["tokens"]["IdToken"], 1) == [victim["key"]]


@pytest.mark.parametrize("claim", ["email", "preferred_username", "phone_number"])
def test_the_local_stack_refuses_a_claim_people_could_write(claim: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=f"context userClaim='{claim}' is unsafe"):
        LocalFileSearch(aws_port=0, api_port=0, context={"userClaim": claim})


def test_moto_lets_a_person_rewrite_a_custom_claim_which_cognito_refuses() -> None:
    """What the local pool cannot show: moto ignores the client's write attributes.

    On AWS, `UpdateUserAttributes` of `custom:uploadUser` with the person's access token is refused (the
    stack's client does not list it); moto writes it, and the next ID token carries it. So a custom
    `userClaim` protects nobody on `make serve` (docs/page.md says so); the default `sub` does (above).
    """
    with LocalFileSearch(
        aws_port=0, api_port=0, log_level="WARNING", context={"userClaim": "custom:uploadUser"}
    ) as stack:
        assert stack.user_pool is not None
        endpoint, pool_id, client_id = stack.aws_endpoint, stack.user_pool.pool_id, stack.user_pool.client_id
        password = add_person(endpoint, pool_id, "mallory")
        cognito(endpoint).admin_update_user_attributes(
            UserPoolId=pool_id,
            Username="mallory",
            UserAttributes=[{"Name": "custom:uploadUser", "Value": "mallory"}],
        )
        tokens = sign_in(endpoint, client_id, "mallory", password)
        assert claims_of(tokens["IdToken"])["custom:uploadUser"] == "mallory"

        cognito(endpoint).update_user_attributes(
            AccessToken=tokens["AccessToken"],
            UserAttributes=[{"Name": "custom:uploadUser", "Value": "victim"}],
        )

        again = sign_in(endpoint, client_id, "mallory", password)["IdToken"]
        assert claims_of(again)["custom:uploadUser"] == "victim"
