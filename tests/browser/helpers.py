"""What the page's browser tests share: signing in, finding rows, axe-core, screenshots, the API's 429.

Importing this module skips the importing test module when there is no browser to drive (one line), except
under CI=true, where that is a failure. The fixtures (`ready`, `browser`, `page`) are in conftest.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from local_stack.browser import missing_browser
from tests.integration.local_stack.conftest import REPO_ROOT
from tests.integration.local_stack.signed_in import add_person

if missing_browser() is not None:
    reason = f"browser tests: {missing_browser()}"
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from playwright.sync_api import FilePayload, Page, Route, expect  # isort: skip

SCREENSHOTS = REPO_ROOT / "docs" / "screenshots"
AXE = REPO_ROOT / "node_modules" / "axe-core" / "axe.min.js"
# What a person may wait for: an upload is listed once the emulated stack has indexed it, which on a loaded
# two-core machine (the other test worker busy) takes longer than on AWS, the more so when the indexer
# failed a batch under that load and the local queue hands it back after its 30 s visibility timeout; the
# page itself asks for three minutes.
TIMEOUT_MS = 120_000

expect.set_options(timeout=TIMEOUT_MS)


def sign_in(page: Page, ready: dict[str, Any], username: str, password: str) -> None:
    page.goto(ready["webUrl"])
    page.get_by_label("User name", exact=True).fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def signed_in(page: Page, ready: dict[str, Any], username: str, password: str) -> None:
    sign_in(page, ready, username, password)
    expect(page.get_by_text("Signed in as")).to_contain_text(username)


def file_payload(name: str, mime_type: str, content: bytes) -> FilePayload:
    return {"name": name, "mimeType": mime_type, "buffer": content}


def axe_violations(page: Page) -> list[str]:
    """Serious and critical violations axe-core finds in the page as it is now."""
    if not any(page.evaluate("() => typeof window.axe") == kind for kind in ("object", "function")):
        # Through the DevTools protocol, not a <script>: the page's CSP allows only its own scripts.
        page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{violation['id']} ({violation['impact']}): {[node['target'] for node in violation['nodes']]}"
        for violation in result
        if violation["impact"] in ("serious", "critical")
    ]


def row(page: Page, name: str) -> Any:
    return page.locator("#rows tr").filter(has=page.get_by_role("rowheader", name=name, exact=True))


def shot(page: Page, name: str, *, docs: bool = True) -> None:
    """A full-page screenshot: into docs/screenshots/ (the README's), or beside the test run's files."""
    folder = SCREENSHOTS if docs else Path(os.environ.get("PAGE_SHOTS", "/tmp")) / "page-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def api_error(
    route: Route, ready: dict[str, Any], status: int, message: str, headers: dict[str, str] | None = None
) -> None:
    """An error answer as the API gives it: `{"message": ...}` with its CORS header, so the page reads it."""
    route.fulfill(
        status=status,
        headers={"Access-Control-Allow-Origin": ready["webUrl"], "Content-Type": "application/json"}
        | (headers or {}),
        body=json.dumps({"message": message}),
    )


def retry_later(route: Route, ready: dict[str, Any], retry_after: str | None = None) -> None:
    """API Gateway's answer at the stage's rate limit: 429, with its CORS header (DEFAULT_4XX's)."""
    headers = (
        {}
        if retry_after is None
        else {"Retry-After": retry_after, "Access-Control-Expose-Headers": "Retry-After"}
    )
    api_error(route, ready, 429, "Too Many Requests", headers)


def upload(page: Page, *files: tuple[str, str, bytes]) -> None:
    """Chooses `files` (name, content type, bytes) with "Upload files" and waits until each is listed."""
    page.get_by_label("Upload files").set_input_files(
        [file_payload(name, mime, content) for name, mime, content in files]
    )
    for name, _, _ in files:
        expect(row(page, name)).to_have_count(1)


def open_filters(page: Page) -> None:
    """Unfolds "Filters" (type, upload dates, sizes), which stay folded until asked for."""
    filters = page.locator("details").filter(has=page.locator("summary", has_text="Filters"))
    if filters.get_attribute("open") is None:
        filters.locator("summary").click()
    expect(page.get_by_label("At least")).to_be_visible()


def listed(page: Page) -> None:
    """Waits until the list has answered: some rows, or the words of an empty list."""
    expect(page.locator("#rows tr, #empty:not([hidden])").first).to_be_visible()


def fresh_person(ready: dict[str, Any], username: str) -> str:
    return add_person(ready["awsEndpoint"], ready["userPoolId"], username, f"{username.title()}-Passw0rd!x")
