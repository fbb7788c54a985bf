"""Whose file: an admin's lists name each file's person from the user pool (`ownerName`), never by `sub`,
and `GET /me/people?q=` finds people by name for the `user` filter."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from search import composition
from search.directory import LOOKUPS_PER_PAGE, NAME_CACHE_SIZE, UNKNOWN_PERSON, PeopleDirectory
from search.payload import array_payload_bytes
from tests.integration.search.conftest import REGION, RawBody, SearchApi, sdk_hook
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
    # A person without the name attribute is found by what the Owner column shows: their user name.
    assert call(me_api, "GET", "/me/people?q=bo", ADMIN)[1] == {
        "people": [{"user": pool["bob"], "name": "bob"}]
    }
    # ... and only them: a person shown by their name is not found by their user name.
    assert call(me_api, "GET", "/me/people?q=ali", ADMIN)[1] == {"people": []}
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


class CognitoCalls:
    """Counts the handler's Cognito calls by operation; answers them with `code` (a throttle, a fault)
    while `code` is set, as the user pool does under load."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.code: str | None = None

    def __call__(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        self.calls[event_name.rsplit(".", 1)[-1]] += 1
        if self.code is None:
            return None
        body = json.dumps({"__type": self.code, "message": "Rate exceeded"}).encode()
        headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": self.code}
        return AWSResponse(request.url, 400, headers, RawBody(body))


@pytest.fixture
def cognito_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[CognitoCalls]:
    counter = CognitoCalls()
    # botocore sleeps between retries in its endpoint module; a throttled lookup need not wait here.
    monkeypatch.setattr("botocore.endpoint.time", SimpleNamespace(sleep=lambda _: None))
    with sdk_hook("before-send.cognito-identity-provider", counter):
        yield counter


def many_people(me_api: SearchApi, pool: dict[str, str], count: int) -> dict[str, str]:
    """`count` more people of the pool, each with one file: their names by sub."""
    cognito = boto3.client("cognito-idp", region_name=REGION)
    pool_id = os.environ["USER_POOL_ID"]
    names = {}
    for n in range(count):
        created = cognito.admin_create_user(
            UserPoolId=pool_id,
            Username=f"person{n:03}",
            UserAttributes=[{"Name": "name", "Value": f"Person {n:03}"}],
            MessageAction="SUPPRESS",
        )
        sub = next(a["Value"] for a in created["User"]["Attributes"] if a["Name"] == "sub")
        me_api.put_file(f"{sub}/f{n:03}.txt", user=sub)
        names[sub] = f"Person {n:03}"
    return names


def test_a_page_of_many_people_names_a_bounded_number_at_a_time(
    me_api: SearchApi, pool: dict[str, str], cognito_calls: CognitoCalls
) -> None:
    people = many_people(me_api, pool, LOOKUPS_PER_PAGE * 2 + 10)
    shown: dict[str, str] = {}
    for page in range(1, 4):
        status, body, _ = call(me_api, "GET", "/me/files?bucket=fileupload.a&limit=1000", ADMIN)
        assert status == 200, body
        shown = {item["uploadUser"]: item["ownerName"] for item in body["items"]}
        named = {user for user, name in shown.items() if name == people[user]}
        # Each page asks the pool for at most LOOKUPS_PER_PAGE people it has not named yet; the others are
        # shown by their user value until a later page names them.
        assert cognito_calls.calls["ListUsers"] <= page * LOOKUPS_PER_PAGE
        assert len(named) == min(page * LOOKUPS_PER_PAGE, len(people))
        assert all(shown[user] == user for user in set(people) - named)
    assert {user: shown[user] for user in people} == people


@pytest.mark.parametrize("code", ["TooManyRequestsException", "InternalErrorException"])
def test_a_throttled_or_failing_pool_leaves_owners_unnamed_never_a_500(
    me_api: SearchApi, pool: dict[str, str], cognito_calls: CognitoCalls, code: str
) -> None:
    me_api.put_file(f"{pool['alice']}/a.txt", user=pool["alice"])
    cognito_calls.code = code
    status, body, _ = call(me_api, "GET", "/me/files?bucket=fileupload.a", ADMIN)
    assert status == 200, body
    assert names_in(body) == {f"{pool['alice']}/a.txt": pool["alice"]}
    cognito_calls.code = None  # the pool answers again: the next page names her
    assert names_in(call(me_api, "GET", "/me/files?bucket=fileupload.a", ADMIN)[1]) == {
        f"{pool['alice']}/a.txt": "Alice Archer"
    }


def test_a_throttled_people_search_is_a_503_with_retry_after(
    me_api: SearchApi, pool: dict[str, str], cognito_calls: CognitoCalls
) -> None:
    cognito_calls.code = "TooManyRequestsException"
    status, body, headers = call(me_api, "GET", "/me/people?q=Al", ADMIN)
    assert status == 503, body
    assert headers["Retry-After"] == "1"


def test_owners_names_count_in_the_pages_size(
    me_api: SearchApi, pool: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long name (Cognito allows 2,048 characters) on every item: the page is cut to fit with them, and
    the next pages go on where it ended."""
    cognito = boto3.client("cognito-idp", region_name=REGION)
    long_name = "名" * 2048
    cognito.admin_update_user_attributes(
        UserPoolId=os.environ["USER_POOL_ID"],
        Username="alice",
        UserAttributes=[{"Name": "name", "Value": long_name}],
    )
    keys = {f"{pool['alice']}/f{n:02}.txt" for n in range(40)}
    for key in keys:
        me_api.put_file(key, user=pool["alice"])
    budget = 100_000  # 40 items fit without their names (about 16 KB), not with them (about 250 KB)
    monkeypatch.setattr(composition.file_search(), "_page_budget", budget)
    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        status, body, _ = call(me_api, "GET", f"/me/files?bucket=fileupload.a&limit=1000{cursor}", ADMIN)
        assert status == 200, body
        pages += 1
        assert array_payload_bytes(body["items"]) <= budget
        assert all(item["ownerName"] == long_name for item in body["items"])
        seen += [item["objectKey"] for item in body["items"]]
        if body["nextCursor"] is None:
            break
        cursor = "&cursor=" + quote(body["nextCursor"])
    assert pages > 1
    assert sorted(seen) == sorted(keys)


@pytest.mark.parametrize("user", ["has space", "x" * 129, ""])
def test_a_user_name_cognito_cannot_hold_is_an_unknown_person(pool: dict[str, str], user: str) -> None:
    cognito = boto3.client("cognito-idp", region_name=REGION)
    pool_id = os.environ["USER_POOL_ID"]
    directory = PeopleDirectory(
        cognito, pool_id=pool_id, user_claim="cognito:username", name_attribute="name"
    )
    assert directory.names([user, "alice"]) == {user: UNKNOWN_PERSON, "alice": "Alice Archer"}
