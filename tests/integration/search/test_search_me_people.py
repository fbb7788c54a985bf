"""Whose file: an admin's lists name each file's person from the user pool (`ownerName`), never by `sub`,
and `GET /me/people?q=` finds people by name for the `user` filter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from search import composition
from search.directory import NAME_CACHE_SIZE, UNKNOWN_PERSON, PeopleDirectory
from tests.integration.search.conftest import REGION, SearchApi
from tests.integration.search.people import ADMIN, ALICE, call, me_api

__all__ = ["me_api"]


@pytest.fixture
def pool(me_api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A user pool (on moto) with three people; their subs by user name."""
    cognito = boto3.client("cognito-idp", region_name=REGION)
    pool_id = cognito.create_user_pool(PoolName="people")["UserPool"]["Id"]
    subs = {}
    for username, attributes in (
        ("alice", {"name": "Alice Archer", "email": "alice@example.com"}),
        ("bob", {"email": "bob@example.com"}),  # no name: shown by user name
        ("alfred", {"name": "Alfred Ames", "email": "alfred@example.com"}),
    ):
        created = cognito.admin_create_user(
            UserPoolId=pool_id,
            Username=username,
            UserAttributes=[{"Name": name, "Value": value} for name, value in attributes.items()],
            MessageAction="SUPPRESS",
        )
        subs[username] = next(a["Value"] for a in created["User"]["Attributes"] if a["Name"] == "sub")
    monkeypatch.setenv("USER_POOL_ID", pool_id)
    composition.file_search.cache_clear()
    yield subs
    cognito.delete_user_pool(UserPoolId=pool_id)


def names_in(body: dict[str, Any]) -> dict[str, str | None]:
    return {item["objectKey"]: item.get("ownerName") for item in body["items"]}


def test_an_admins_bucket_list_names_each_files_person(me_api: SearchApi, pool: dict[str, str]) -> None:
    me_api.put_file(f"{pool['alice']}/a.txt", user=pool["alice"])
    me_api.put_file(f"{pool['bob']}/b.txt", user=pool["bob"])
    me_api.put_file("gone-person/c.txt", user="gone-person")
    status, body, _ = call(me_api, "GET", "/me/files?bucket=fileupload.a", ADMIN)
    assert status == 200, body
    assert names_in(body) == {
        f"{pool['alice']}/a.txt": "Alice Archer",
        f"{pool['bob']}/b.txt": "bob",
        "gone-person/c.txt": UNKNOWN_PERSON,
    }
    status, body, _ = call(me_api, "GET", f"/me/files?user={pool['alice']}", ADMIN)
    assert names_in(body) == {f"{pool['alice']}/a.txt": "Alice Archer"}


def test_ones_own_list_has_no_names(me_api: SearchApi, pool: dict[str, str]) -> None:
    me_api.put_file("USER001/mine.txt")
    status, body, _ = call(me_api, "GET", "/me/files", ALICE)
    assert status == 200
    assert names_in(body) == {"USER001/mine.txt": None}
    assert "ownerName" not in body["items"][0]


def test_the_name_attribute_is_configured(
    me_api: SearchApi, pool: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    me_api.put_file(f"{pool['alice']}/a.txt", user=pool["alice"])
    for attribute, shown in (("email", "alice@example.com"), ("username", "alice")):
        monkeypatch.setenv("OWNER_NAME_ATTRIBUTE", attribute)
        composition.file_search.cache_clear()
        body = call(me_api, "GET", "/me/files?bucket=fileupload.a", ADMIN)[1]
        assert names_in(body) == {f"{pool['alice']}/a.txt": shown}
    monkeypatch.setenv("OWNER_NAME_ATTRIBUTE", "nickname")
    composition.file_search.cache_clear()
    status, body, _ = call(me_api, "GET", "/me/files?bucket=fileupload.a", ADMIN)
    assert status == 500  # a configuration fault, logged with its name
    composition.file_search.cache_clear()


def test_admins_find_people_by_name(me_api: SearchApi, pool: dict[str, str]) -> None:
    status, body, _ = call(me_api, "GET", "/me/people?q=Al", ADMIN)
    assert status == 200, body
    assert sorted(body["people"], key=lambda person: person["name"]) == [
        {"user": pool["alfred"], "name": "Alfred Ames"},
        {"user": pool["alice"], "name": "Alice Archer"},
    ]
    assert call(me_api, "GET", '/me/people?q=Al"ice', ADMIN)[1] == {"people": []}
    status, body, _ = call(me_api, "GET", "/me/people?q=Al", ALICE)
    assert status == 403
    assert call(me_api, "GET", "/me/people", ADMIN)[0] == 400


def test_names_are_cached_within_a_bound(pool: dict[str, str]) -> None:
    asked: list[str] = []
    cognito = boto3.client("cognito-idp", region_name=REGION)

    class Counting:
        exceptions = cognito.exceptions

        def list_users(self, **request: Any) -> Any:
            asked.append(request["Filter"])
            return cognito.list_users(**request)

    pool_id = next(iter(cognito.list_user_pools(MaxResults=10)["UserPools"]))["Id"]
    directory = PeopleDirectory(Counting(), pool_id=pool_id, user_claim="sub", name_attribute="name")
    assert directory.names([pool["alice"], pool["alice"], pool["bob"]]) == {
        pool["alice"]: "Alice Archer",
        pool["bob"]: "bob",
    }
    assert directory.name(pool["alice"]) == "Alice Archer"
    assert len(asked) == 2  # once per person
    for n in range(NAME_CACHE_SIZE):
        directory._names[f"filler-{n}"] = "x"
    directory.name("one-more")
    assert len(directory._names) == NAME_CACHE_SIZE
    assert pool["alice"] not in directory._names
