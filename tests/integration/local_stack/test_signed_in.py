"""Uploads, downloads and deletes of signed-in people, on the in-process local stack.

moto checks no presigned POST policy, so the tests read the policy the function signs: the exact key under
the person's own prefix, the content type, and exactly the declared size (at most `maxUploadBytes`). The
form then goes to S3 as a browser sends it, and the file reaches the index through the bucket's events.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.signed_in import (
    add_person,
    call,
    claims_of,
    cognito,
    edited,
    key_path,
    post_form,
    sign_in,
)

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("signed-in")

MAX_UPLOAD = 1000


@pytest.fixture(scope="module", autouse=True)
def _aws_credentials(module_aws_environment: None) -> None:
    """The shared AWS environment of a module whose stack lives through many tests (conftest)."""


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalFileSearch]:
    with LocalFileSearch(
        aws_port=0, api_port=0, log_level="WARNING", context={"maxUploadBytes": MAX_UPLOAD}
    ) as running:
        running.wait_until_indexed()
        yield running


@pytest.fixture(scope="module")
def demo(stack: LocalFileSearch) -> dict[str, Any]:
    ready = stack.describe()
    tokens = sign_in(stack.aws_endpoint, ready["userPoolClientId"], ready["demoUser"], ready["demoPassword"])
    return {"token": tokens["IdToken"], "sub": claims_of(tokens["IdToken"])["sub"]}


def _policy(form: dict[str, Any]) -> dict[str, Any]:
    policy: dict[str, Any] = json.loads(base64.b64decode(form["fields"]["policy"]))
    return policy


def _upload(stack: LocalFileSearch, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    status, answer, _ = call(f"{stack.api_url}/me/uploads", "POST", token=token, body=body)
    return status, answer


def test_the_upload_policy_pins_key_type_and_size(stack: LocalFileSearch, demo: dict[str, Any]) -> None:
    status, form = _upload(
        stack,
        demo["token"],
        {"name": "plan.pdf", "contentType": "application/pdf", "size": 10, "folder": "a/b"},
    )
    assert status == 200, form
    assert form["key"] == f"{demo['sub']}/a/b/plan.pdf"
    assert form["fields"]["key"] == form["key"]
    assert form["url"] == f"{stack.aws_endpoint}/{stack.bucket}"
    conditions = _policy(form)["conditions"]
    assert {"key": form["key"]} in conditions
    assert {"bucket": stack.bucket} in conditions
    assert {"Content-Type": "application/pdf"} in conditions
    # Exactly the declared size: a form for 10 bytes cannot carry a larger (or smaller) file.
    sizes = [c for c in conditions if isinstance(c, list) and c[0] == "content-length-range"]
    assert sizes == [["content-length-range", 10, 10]]
    # No condition lets the key vary (starts-with), and the policy expires.
    assert not [
        condition for condition in conditions if isinstance(condition, list) and condition[0] == "starts-with"
    ]
    assert _policy(form)["expiration"]


def test_an_uploaded_file_is_listed_downloaded_and_deleted(
    stack: LocalFileSearch, demo: dict[str, Any]
) -> None:
    content = "Grüße, world".encode()
    status, form = _upload(
        stack, demo["token"], {"name": "größe über.txt", "contentType": "text/plain", "size": len(content)}
    )
    assert status == 200, form
    assert post_form(form["url"], form["fields"], content) == 204
    stack.wait_until_indexed()
    status, page, _ = call(f"{stack.api_url}/me/files?q=grosse", token=demo["token"])
    assert status == 200
    assert [item["objectKey"] for item in page["items"]] == [form["key"]]
    status, _, headers = call(f"{stack.api_url}/me/download/{key_path(form['key'])}", token=demo["token"])
    assert status == 302
    assert "response-content-disposition=attachment" in headers["Location"]
    status, answer, _ = call(
        f"{stack.api_url}/me/download/{key_path(form['key'])}",
        token=demo["token"],
        headers={"Accept": "application/json"},
    )
    assert status == 200
    import urllib.request

    with urllib.request.urlopen(answer["url"]) as response:  # noqa: S310 (the local S3)
        assert response.read() == content
        disposition = response.headers["Content-Disposition"]
        content_type = response.headers["Content-Type"]
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''gr%C3%B6%C3%9Fe%20%C3%BCber.txt" in disposition
    assert content_type == "application/octet-stream"
    status, _, _ = call(f"{stack.api_url}/me/files/{key_path(form['key'])}", "DELETE", token=demo["token"])
    assert status == 204
    stack.wait_until_indexed()
    assert call(f"{stack.api_url}/me/files/{key_path(form['key'])}", token=demo["token"])[0] == 404
    status, page, _ = call(f"{stack.api_url}/me/files", token=demo["token"])
    assert form["key"] not in [item["objectKey"] for item in page["items"]]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "a/b.txt", "size": 1}, "must not contain '/'"),
        ({"name": "..", "size": 1}, "'.' or '..'"),
        ({"name": "x.txt", "size": 1, "folder": "a/../b"}, "'.' or '..'"),
        ({"name": "x.txt", "size": 1, "folder": "a//b"}, "must not be empty"),
        ({"name": "x\u0000.txt", "size": 1}, "control characters"),
        ({"name": "x.txt", "size": MAX_UPLOAD + 1}, f"upload limit of {MAX_UPLOAD} bytes (maxUploadBytes)"),
        ({"name": "x.txt", "size": -1}, "size must be"),
        ({"name": "x.txt", "size": "1"}, "size must be"),
        ({"name": "x.txt"}, "size is required"),
        ({"size": 1}, "name is required"),
        ({"name": "x.txt", "size": 1, "contentType": "text"}, "contentType must be a media type"),
        ({"name": "x.txt", "size": 1, "owner": "someone"}, "unknown field(s) owner"),
        ({"name": "é" * 200, "size": 1}, "longer than 255 bytes"),
        (["x.txt"], "must be a JSON object"),
    ],
)
def test_a_bad_upload_request_is_a_clear_400(
    stack: LocalFileSearch, demo: dict[str, Any], body: Any, message: str
) -> None:
    status, answer = _upload(stack, demo["token"], body)
    assert status == 400
    assert message in answer["message"]


def test_a_body_that_is_not_json_is_a_400(stack: LocalFileSearch, demo: dict[str, Any]) -> None:
    status, answer, _ = call(f"{stack.api_url}/me/uploads", "POST", token=demo["token"], body=b"name=x")
    assert status == 400
    assert "the body must be JSON" in answer["message"]


def test_the_routes_answer_the_pages_origin_only(stack: LocalFileSearch, demo: dict[str, Any]) -> None:
    origin = stack.web_url
    assert origin is not None
    status, _, headers = call(f"{stack.api_url}/me/uploads", "OPTIONS", headers={"Origin": origin})
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == origin
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert "Authorization" in headers["Access-Control-Allow-Headers"]
    # Answers, errors included, name the page's origin (never "*").
    for token in (demo["token"], None):
        _, _, headers = call(f"{stack.api_url}/me/files", token=token, headers={"Origin": origin})
        assert headers["Access-Control-Allow-Origin"] == origin
    # The IAM routes are not opened to pages.
    _, _, headers = call(f"{stack.api_url}/status", headers={"Origin": origin})
    assert "Access-Control-Allow-Origin" not in headers


def test_a_method_a_route_does_not_declare_is_a_405(stack: LocalFileSearch, demo: dict[str, Any]) -> None:
    for method, path, allowed in (
        ("PUT", "/me/files", "GET"),
        ("POST", "/me/files/x", "GET, DELETE"),
        ("GET", "/me/uploads", "POST"),
        ("TRACE", "/me/download/x", "GET"),
    ):
        status, _, headers = call(f"{stack.api_url}{path}", method, token=demo["token"])
        assert (status, headers.get("Allow")) == (405, allowed), (method, path)


def test_the_page_is_served_with_its_security_headers(stack: LocalFileSearch) -> None:
    assert stack.web_url is not None
    status, _, headers = call(f"{stack.web_url}/")
    assert status == 200
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert stack.api_url in csp
    assert stack.aws_endpoint in csp
    assert headers["X-Frame-Options"] == "DENY"
    status, config, _ = call(f"{stack.web_url}/config.json")
    ready = stack.describe()
    assert config == {
        "apiUrl": stack.api_url,
        "region": stack.region,
        "userPoolId": ready["userPoolId"],
        "userPoolClientId": ready["userPoolClientId"],
        "cognitoEndpoint": stack.aws_endpoint,
        "maxUploadBytes": MAX_UPLOAD,
        # The share link expiries offered, up to shareLinkMaxSeconds (an hour by default).
        "linkExpiries": [300, 3600],
        "adminGroup": "admins",
        "userClaim": "sub",
        "bucket": stack.bucket,
        # The pool's password rules, which the page shows under a new password and checks before sending.
        "passwordPolicy": {
            "minimumLength": 12,
            "requireLowercase": True,
            "requireUppercase": True,
            "requireNumbers": True,
            "requireSymbols": True,
        },
    }
    assert call(f"{stack.web_url}/../README.md")[0] == 404
    assert call(f"{stack.web_url}/%2e%2e/README.md")[0] == 404


@pytest.mark.parametrize("content_type", ["text/html", "image/svg+xml", "application/xhtml+xml"])
def test_no_download_is_rendered_by_a_browser(
    stack: LocalFileSearch, demo: dict[str, Any], content_type: str
) -> None:
    content = b"<html><script>alert(document.domain)</script></html>"
    status, form = _upload(
        stack, demo["token"], {"name": "page.html", "contentType": content_type, "size": len(content)}
    )
    assert status == 200, form
    assert post_form(form["url"], form["fields"], content) == 204
    stack.wait_until_indexed()
    import urllib.request

    # Both the signed-in route and the operators' IAM route presign an attachment of a type no browser
    # renders; S3 (moto) answers with the overrides.
    _, answer, _ = call(
        f"{stack.api_url}/me/download/{key_path(form['key'])}",
        token=demo["token"],
        headers={"Accept": "application/json"},
    )
    status, _, headers = call(f"{stack.api_url}/download/{key_path(form['key'])}")
    assert status == 302
    for url in (answer["url"], headers["Location"]):
        with urllib.request.urlopen(url) as response:  # noqa: S310 (the local S3)
            assert response.read() == content
            assert response.headers["Content-Type"] == "application/octet-stream"
            assert response.headers["Content-Disposition"].startswith('attachment; filename="page.html"')


def _keys(page: dict[str, Any]) -> list[str]:
    return [item["objectKey"] for item in page["items"]]


def test_folders_on_me_are_the_persons_own(stack: LocalFileSearch, demo: dict[str, Any]) -> None:
    for name, folder in (("q3.pdf", "reports"), ("plan.txt", "reports/2026"), ("notes.txt", None)):
        body: dict[str, Any] = {"name": name, "contentType": "text/plain", "size": 2}
        if folder is not None:
            body["folder"] = folder
        status, form = _upload(stack, demo["token"], body)
        assert status == 200, form
        assert post_form(form["url"], form["fields"], b"ok") == 204
    stack.wait_until_indexed()
    sub, token = demo["sub"], demo["token"]

    def page(query: str, who: str = token) -> dict[str, Any]:
        status, answer, _ = call(f"{stack.api_url}/me/files?{query}", token=who)
        assert status == 200, answer
        return dict(answer)

    # `prefix` is a folder of the person's own; items keep their whole key (what /me/files/{key} takes).
    assert _keys(page("prefix=reports/")) == [f"{sub}/reports/2026/plan.txt", f"{sub}/reports/q3.pdf"]
    assert _keys(page("prefix=/reports/")) == _keys(page("prefix=reports/"))
    folders = page("prefix=reports/&delimiter=/")
    assert (_keys(folders), folders["commonPrefixes"]) == ([f"{sub}/reports/q3.pdf"], ["reports/2026/"])
    top = page("delimiter=/")
    assert "reports/" in top["commonPrefixes"]
    assert f"{sub}/notes.txt" in _keys(top)
    assert f"{sub}/reports/q3.pdf" not in _keys(top)
    # Typing the hidden folder is no longer how one finds one's files.
    assert _keys(page(f"prefix={sub}/reports/")) == []
    key = _keys(page("prefix=reports/"))[1]
    assert call(f"{stack.api_url}/me/files/{key_path(key)}", token=token)[0] == 200
    # An admin naming the user lists that user's folders; naming the bucket, whole keys.
    ready = stack.describe()
    admin = sign_in(stack.aws_endpoint, ready["userPoolClientId"], ready["adminUser"], ready["adminPassword"])
    admin_token = admin["IdToken"]
    as_admin = page(f"user={sub}&prefix=reports/&delimiter=/", admin_token)
    assert (_keys(as_admin), as_admin["commonPrefixes"]) == ([f"{sub}/reports/q3.pdf"], ["reports/2026/"])
    assert _keys(page(f"bucket={stack.bucket}&prefix=reports/", admin_token)) == []
    whole = page(f"bucket={stack.bucket}&prefix={sub}/reports/&delimiter=/", admin_token)
    assert (_keys(whole), whole["commonPrefixes"]) == ([f"{sub}/reports/q3.pdf"], [f"{sub}/reports/2026/"])


def test_a_folder_prefix_past_the_limit_is_a_400_saying_how_much_is_left(
    stack: LocalFileSearch, demo: dict[str, Any]
) -> None:
    room = 1020 - len(f"{demo['sub']}/".encode())
    status, answer, _ = call(f"{stack.api_url}/me/files?prefix={'a' * room}", token=demo["token"])
    assert (status, answer["items"]) == (200, [])
    status, answer, _ = call(f"{stack.api_url}/me/files?prefix={'a' * (room + 1)}", token=demo["token"])
    assert status == 400
    assert (
        f"prefix is {room + 1} bytes of UTF-8; within the folder '{demo['sub']}/' at most {room}"
        in (answer["message"])
    )


def _person_in(stack: LocalFileSearch, name: str, groups: list[str]) -> str:
    """A new person of the local pool in `groups` (made as needed), signed in: their ID token."""
    ready = stack.describe()
    pool, client = ready["userPoolId"], cognito(stack.aws_endpoint)
    password = add_person(stack.aws_endpoint, pool, name)
    for group in groups:
        with contextlib.suppress(client.exceptions.GroupExistsException):
            client.create_group(GroupName=group, UserPoolId=pool)
        client.admin_add_user_to_group(UserPoolId=pool, Username=name, GroupName=group)
    token: str = sign_in(stack.aws_endpoint, ready["userPoolClientId"], name, password)["IdToken"]
    assert sorted(claims_of(token).get("cognito:groups", [])) == sorted(groups)
    return token


@pytest.mark.parametrize(
    ("name", "groups", "admin"),
    [
        ("carol", ["readers,admins"], False),
        ("dan", ["[admins]"], False),
        ("erin", ["[admins", "readers]"], False),
        ("frank", ["admins,"], False),
        ("grace", ["admins", "readers,x"], True),
        ("heidi", [], False),
    ],
)
def test_admins_are_the_members_of_exactly_the_admin_group(
    stack: LocalFileSearch, name: str, groups: list[str], admin: bool
) -> None:
    token = _person_in(stack, name, groups)
    status, answer, _ = call(f"{stack.api_url}/me/files?bucket={stack.bucket}", token=token)
    assert status == (200 if admin else 403), answer


def test_a_second_authorization_header_grants_nothing(stack: LocalFileSearch) -> None:
    token = _person_in(stack, "ivan", ["readers"])
    # The same token with the admin group written in: the authorizer checks one header value, the function
    # sees both and trusts neither for groups.
    forged = edited(token, **{"cognito:groups": ["admins"]})
    url = urlsplit(stack.api_url)
    for values in ([token, forged], [token]):
        connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        try:
            connection.putrequest("GET", f"/me/files?bucket={stack.bucket}")
            for value in values:
                connection.putheader("Authorization", value)
            connection.endheaders()
            status = connection.getresponse().status
        finally:
            connection.close()
        assert status == 403


def test_a_shared_link_works_until_it_expires_and_then_is_refused_as_s3_does(
    stack: LocalFileSearch, demo: dict[str, Any]
) -> None:
    import time
    import urllib.error
    import urllib.request
    from datetime import UTC, datetime, timedelta

    content = b"the minutes"
    status, form = _upload(
        stack, demo["token"], {"name": "minutes.txt", "contentType": "text/plain", "size": 11}
    )
    assert status == 200, form
    assert post_form(form["url"], form["fields"], content) == 204
    stack.wait_until_indexed()
    status, answer, _ = call(
        f"{stack.api_url}/me/links/{key_path(form['key'])}?expiresIn=3", token=demo["token"]
    )
    assert status == 200, answer
    expires_at = datetime.fromisoformat(answer["expiresAt"])
    if datetime.now(UTC) < expires_at:  # a loaded machine may take longer than the link lives
        with urllib.request.urlopen(answer["url"]) as response:  # noqa: S310 (the local S3)
            assert response.read() == content
    while datetime.now(UTC) <= expires_at + timedelta(seconds=1):
        time.sleep(0.25)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(answer["url"])  # noqa: S310 (the local S3)
    assert refused.value.code == 403
    assert b"<Code>AccessDenied</Code><Message>Request has expired</Message>" in refused.value.read()
    # A link with time left still downloads: only the expiry refuses.
    status, fresh, _ = call(
        f"{stack.api_url}/me/links/{key_path(form['key'])}?expiresIn=600", token=demo["token"]
    )
    assert status == 200, fresh
    with urllib.request.urlopen(fresh["url"]) as response:  # noqa: S310 (the local S3)
        assert response.read() == content
