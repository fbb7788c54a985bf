"""`GET /me/links/{objectKey}`: a download link to share, for a number of seconds up to the cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from search import composition
from tests.integration.search.conftest import BUCKET, SearchApi
from tests.integration.search.people import ADMIN, ALICE, call, me_api

__all__ = ["me_api"]


@pytest.fixture(autouse=True)
def two_hour_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARE_LINK_MAX_SECONDS", "7200")
    composition.file_search.cache_clear()


def link(api: SearchApi, path: str, caller: Any = ALICE) -> tuple[int, Any]:
    status, body, _ = call(api, "GET", path, caller)
    return status, body


def test_a_link_downloads_the_file_for_the_seconds_asked(me_api: SearchApi) -> None:
    key = "USER001/report 2017.txt"
    me_api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"the report")
    me_api.put_file(key)
    before = datetime.now(UTC).replace(microsecond=0)

    status, body = link(me_api, f"/me/links/{quote(key)}?expiresIn=3600")

    assert status == 200, body
    assert set(body) == {"url", "expiresAt"}
    query = parse_qs(urlsplit(body["url"]).query)
    assert query["X-Amz-Expires"] == ["3600"]
    assert query["response-content-disposition"][0].startswith("attachment;")
    assert query["response-content-type"] == ["application/octet-stream"]
    expires_at = datetime.fromisoformat(body["expiresAt"])
    assert body["expiresAt"].endswith("Z")
    assert before + timedelta(seconds=3600) <= expires_at <= datetime.now(UTC) + timedelta(seconds=3600)
    fetched = requests.get(body["url"], timeout=10)
    assert fetched.status_code == 200
    assert fetched.content == b"the report"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "expiresIn is required: a whole number of seconds from 1 to 7200 (shareLinkMaxSeconds)"),
        ("?expiresIn=soon", "expiresIn must be a whole number of seconds from 1 to 7200"),
        ("?expiresIn=1.5", "expiresIn must be a whole number of seconds from 1 to 7200"),
        ("?expiresIn=0", "a whole number of seconds from 1 to 7200 (shareLinkMaxSeconds), not 0"),
        ("?expiresIn=-60", "not -60"),
        ("?expiresIn=7201", "expiresIn 7201 is over this deployment's cap; allowed: a whole number"),
        ("?expiresIn=60&expiresIn=120", "expiresIn is given 2 times"),
        ("?expires=60", "unknown query parameter 'expires' (did you mean 'expiresIn'?)"),
    ],
)
def test_a_bad_expiry_is_a_400_saying_what_is_allowed(me_api: SearchApi, query: str, message: str) -> None:
    me_api.put_file("USER001/a.txt")
    status, body = link(me_api, f"/me/links/USER001/a.txt{query}")
    assert status == 400
    assert message in body["message"]


def test_the_cap_is_an_hour_unless_configured(me_api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHARE_LINK_MAX_SECONDS")
    composition.file_search.cache_clear()
    me_api.put_file("USER001/a.txt")
    assert link(me_api, "/me/links/USER001/a.txt?expiresIn=3600")[0] == 200
    status, body = link(me_api, "/me/links/USER001/a.txt?expiresIn=3601")
    assert status == 400
    assert "from 1 to 3600" in body["message"]


def test_another_persons_file_is_a_404_but_an_admin_may_share_any(me_api: SearchApi) -> None:
    me_api.put_file("USER002/theirs.txt", user="USER002")
    status, body = link(me_api, "/me/links/USER002/theirs.txt?expiresIn=60")
    assert status == 404
    assert "USER002/theirs.txt" in body["message"]
    assert link(me_api, "/me/links/USER001/missing.txt?expiresIn=60")[0] == 404
    status, body = link(me_api, "/me/links/USER002/theirs.txt?expiresIn=60", ADMIN)
    assert status == 200, body
    assert parse_qs(urlsplit(body["url"]).query)["X-Amz-Expires"] == ["60"]
