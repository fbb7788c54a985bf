"""Who may call the `/me/...` routes, and what they see, through `python -m local_stack.serve` as a black box.

The stand-in's authorizer checks tokens as API Gateway's Cognito authorizer does: every token below that is
not a fresh ID token of this pool's app client is a 401 before the function runs. Another person's file is
a 404 on every route, whatever the key looks like.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from joserfc.jwk import RSAKey

from tests.integration.local_stack.conftest import serving
from tests.integration.local_stack.signed_in import (
    add_person,
    call,
    claims_of,
    cognito,
    edited,
    expired,
    key_path,
    post_form,
    sign_in,
    signed,
    unsigned,
)

pytestmark = pytest.mark.xdist_group("serve-signed-in")


@pytest.fixture(scope="module")
def ready() -> Iterator[dict[str, Any]]:
    with serving() as started:
        yield started


@pytest.fixture(scope="module")
def people(ready: dict[str, Any]) -> dict[str, Any]:
    """alice and bob, each signed in, each with one uploaded file, and the admin."""
    endpoint, pool, client = ready["awsEndpoint"], ready["userPoolId"], ready["userPoolClientId"]
    found: dict[str, Any] = {}
    for name in ("alice", "bob"):
        password = add_person(endpoint, pool, name)
        tokens = sign_in(endpoint, client, name, password)
        status, form, _ = call(
            f"{ready['apiUrl']}/me/uploads",
            "POST",
            token=tokens["IdToken"],
            body={"name": f"{name}-notes.txt", "contentType": "text/plain", "size": 5},
        )
        assert status == 200, form
        assert post_form(form["url"], form["fields"], b"hello") == 204
        found[name] = {"tokens": tokens, "key": form["key"], "sub": claims_of(tokens["IdToken"])["sub"]}
    found["admin"] = {"tokens": sign_in(endpoint, client, ready["adminUser"], ready["adminPassword"])}
    # Wait until both files are listed (the indexer runs in the serve process).
    for name in ("alice", "bob"):
        for _ in range(200):
            status, page, _ = call(f"{ready['apiUrl']}/me/files", token=found[name]["tokens"]["IdToken"])
            if status == 200 and page["items"]:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"{name}'s upload never appeared")
    return found


def test_the_ready_line_names_the_page_and_the_pool(ready: dict[str, Any]) -> None:
    assert ready["webUrl"].startswith("http://127.0.0.1:")
    assert ready["userPoolId"].startswith("us-east-1_")
    assert ready["userPoolClientId"]
    assert ready["demoUser"] == "demo"
    assert len(ready["demoPassword"]) >= 12


def _bad_tokens(ready: dict[str, Any], people: dict[str, Any]) -> dict[str, str | None]:
    endpoint = ready["awsEndpoint"]
    good = people["alice"]["tokens"]["IdToken"]
    claims = claims_of(good)
    client = cognito(endpoint)
    # Another app client of the same pool, and another pool (moto signs both with the same key: only the
    # audience and the issuer tell them apart, which is what the authorizer must check).
    other_client = client.create_user_pool_client(
        UserPoolId=ready["userPoolId"], ClientName="other", ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH"]
    )["UserPoolClient"]["ClientId"]
    other_pool = client.create_user_pool(PoolName="other")["UserPool"]["Id"]
    other_pool_client = client.create_user_pool_client(
        UserPoolId=other_pool, ClientName="web", ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH"]
    )["UserPoolClient"]["ClientId"]
    add_person(endpoint, other_pool, "alice", "Other-Pool-Passw0rd!")
    return {
        "no header": None,
        "empty": "",
        "not a JWT": "hello",
        "Bearer and nothing": "Bearer ",
        "edited claims": edited(good, sub=people["bob"]["sub"]),
        "edited group": edited(good, **{"cognito:groups": ["admins"]}),
        "alg none": unsigned(claims),
        "another key": signed(claims, RSAKey.generate_key(2048), kid="dummy"),
        "unknown kid": signed(claims, kid="other"),
        "expired": expired(good),
        "access token": people["alice"]["tokens"]["AccessToken"],
        "another app client": sign_in(endpoint, other_client, "alice", "Another-Passw0rd!")["IdToken"],
        "another pool": sign_in(endpoint, other_pool_client, "alice", "Other-Pool-Passw0rd!")["IdToken"],
        "another issuer, same key": signed(
            {**claims, "iss": "https://cognito-idp.us-east-1.amazonaws.com/x"}
        ),
    }


def test_every_bad_token_is_a_401_on_every_route(ready: dict[str, Any], people: dict[str, Any]) -> None:
    api = ready["apiUrl"]
    key = key_path(people["alice"]["key"])
    routes = [
        ("GET", f"{api}/me/files"),
        ("GET", f"{api}/me/files/{key}"),
        ("DELETE", f"{api}/me/files/{key}"),
        ("GET", f"{api}/me/download/{key}"),
        ("POST", f"{api}/me/uploads"),
    ]
    refused = {}
    for name, token in _bad_tokens(ready, people).items():
        for method, url in routes:
            body = {"name": "x.txt", "size": 1} if method == "POST" else None
            status, answer, _ = call(url, method, token=token, body=body)
            refused[(name, method, url.removeprefix(api))] = (status, answer)
    wrong = {case: answer for case, answer in refused.items() if answer != (401, {"message": "Unauthorized"})}
    assert wrong == {}
    # Nothing was deleted by any of them.
    status, _, _ = call(f"{api}/me/files/{key}", token=people["alice"]["tokens"]["IdToken"])
    assert status == 200


def test_the_raw_token_and_bearer_are_both_accepted(ready: dict[str, Any], people: dict[str, Any]) -> None:
    token = people["alice"]["tokens"]["IdToken"]
    for header in (token, f"Bearer {token}", f"bearer {token}"):
        status, page, _ = call(f"{ready['apiUrl']}/me/files", token=header)
        assert status == 200
        assert [item["objectKey"] for item in page["items"]] == [people["alice"]["key"]]


def test_anothers_file_is_a_404_on_every_route(ready: dict[str, Any], people: dict[str, Any]) -> None:
    api = ready["apiUrl"]
    bob = people["bob"]["tokens"]["IdToken"]
    alice_key = people["alice"]["key"]
    alice_sub, bob_sub = people["alice"]["sub"], people["bob"]["sub"]
    file_name = alice_key.rsplit("/", 1)[-1]
    crafted = [
        key_path(alice_key),
        alice_key,  # with raw "/"
        f"{bob_sub}/../{alice_sub}/{file_name}",
        key_path(f"{bob_sub}/../{alice_sub}/{file_name}"),
        f"{bob_sub}%2F..%2F{alice_sub}%2F{file_name}",
        f"{bob_sub}/{key_path(alice_key)}",
        f"{bob_sub}_{alice_key}",
        key_path(alice_key).replace("%2F", "%252F"),
    ]
    answers = {}
    for path in crafted:
        for method, route in (("GET", "files"), ("DELETE", "files"), ("GET", "download")):
            status, body, _ = call(f"{api}/me/{route}/{path}", method, token=bob)
            answers[(method, route, path)] = status
            if status == 404:
                assert "message" in body
    assert set(answers.values()) <= {404, 400}, answers
    assert 404 in answers.values()
    # Listing with alice's folder as prefix, or searching her file's words, finds nothing of hers.
    for query in (f"prefix={alice_sub}/", "q=alice", "q=notes", f"prefix={alice_sub}&delimiter=/"):
        status, page, _ = call(f"{api}/me/files?{query}", token=bob)
        assert status == 200, page
        assert all(item["uploadUser"] == bob_sub for item in page["items"]), query
        assert all(alice_sub not in prefix for prefix in page.get("commonPrefixes", [])), query
    # alice's file is still there.
    status, item, _ = call(
        f"{api}/me/files/{key_path(alice_key)}", token=people["alice"]["tokens"]["IdToken"]
    )
    assert (status, item["objectKey"]) == (200, alice_key)


def test_only_admins_may_name_a_user_or_the_bucket(ready: dict[str, Any], people: dict[str, Any]) -> None:
    api = ready["apiUrl"]
    bob = people["bob"]["tokens"]["IdToken"]
    for query in (
        f"user={people['alice']['sub']}",
        f"bucket={ready['bucket']}",
        f"user={people['bob']['sub']}",
    ):
        status, body, _ = call(f"{api}/me/files?{query}", token=bob)
        assert status == 403, body
        assert "admins" in body["message"]
    admin = people["admin"]["tokens"]["IdToken"]
    status, page, _ = call(f"{api}/me/files?user={people['alice']['sub']}", token=admin)
    assert status == 200
    assert [item["objectKey"] for item in page["items"]] == [people["alice"]["key"]]
    status, page, _ = call(f"{api}/me/files?bucket={ready['bucket']}", token=admin)
    assert {people["alice"]["key"], people["bob"]["key"]} <= {item["objectKey"] for item in page["items"]}
    # An admin reads and downloads anyone's file, but deletes only their own.
    key = key_path(people["alice"]["key"])
    assert call(f"{api}/me/files/{key}", token=admin)[0] == 200
    assert call(f"{api}/me/download/{key}", token=admin)[0] == 302
    assert call(f"{api}/me/files/{key}", "DELETE", token=admin)[0] == 404


def test_iam_routes_are_unchanged(ready: dict[str, Any], people: dict[str, Any]) -> None:
    status, page, _ = call(f"{ready['apiUrl']}/files?user={people['alice']['sub']}")
    assert status == 200
    assert [item["objectKey"] for item in page["items"]] == [people["alice"]["key"]]


def test_user_access_off_gives_the_stack_without_sign_in() -> None:
    from local_stack.stack import LocalFileSearch

    with LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", context={"userAccess": False}) as stack:
        ready = stack.describe()
        assert (ready["webUrl"], ready["userPoolId"], ready["userPoolClientId"]) == (None, None, None)
        assert "demoPassword" not in ready
        status, _, _ = call(f"{stack.api_url}/me/files", token="anything")
        assert status == 404
        # Only GET is declared without the `/me/...` routes.
        assert call(f"{stack.api_url}/me/uploads", "POST", body={})[0] == 404
