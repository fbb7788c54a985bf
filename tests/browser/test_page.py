"""The page as a person meets it: headless Chromium against `python -m local_stack.serve`.

Driven by labels and roles, as a screen reader or a keyboard user would; axe-core checks every view for
serious and critical accessibility violations. The screenshots go to docs/screenshots/ (the README shows
them). Without a browser the tests skip with one line, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from bench.page import FIRST_LOAD_BUDGET_BYTES, TRANSFERRED_BYTES
from file_index.store.state import IndexStateStore, Operation
from local_stack.browser import CHROMIUM_ARGS, chromium_path
from tests.browser.helpers import (
    TIMEOUT_MS,
    api_error,
    axe_violations,
    file_payload,
    fresh_person,
    listed,
    open_filters,
    retry_later,
    row,
    shot,
    sign_in,
    signed_in,
    upload,
)
from tests.integration.local_stack.signed_in import add_person, call, expired, post_form
from tests.integration.local_stack.signed_in import sign_in as cognito_sign_in

from playwright.sync_api import Browser, Dialog, Page, Route, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")

BIG = bytes(range(256)) * 8 * 1024  # 2 MiB: big enough for the progress events of a real upload
SMALL = b"quarterly numbers\n" * 40


def test_a_person_signs_in_uploads_finds_downloads_and_deletes(
    page: Page, ready: dict[str, Any], tmp_path: Path
) -> None:
    page.goto(ready["webUrl"])
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert axe_violations(page) == []
    shot(page, "sign-in.png")
    sign_in(page, ready, "demo", ready["demoPassword"])
    expect(page.get_by_text("Signed in as")).to_contain_text("demo")
    expect(page.get_by_text("No files yet.")).to_be_visible()

    # Two files at once through the picker: a progress bar for each, then both listed, no reload.
    page.get_by_label("Upload files").set_input_files(
        [
            file_payload("site-plan.pdf", "application/pdf", BIG),
            file_payload("quarterly report.txt", "text/plain", SMALL),
        ]
    )
    for name in ("site-plan.pdf", "quarterly report.txt"):
        expect(page.get_by_role("progressbar", name=f"Upload of {name}")).to_be_visible()
    for name in ("site-plan.pdf", "quarterly report.txt"):
        expect(row(page, name)).to_have_count(1)
        bar = page.get_by_role("progressbar", name=f"Upload of {name}")
        assert bar.evaluate("element => element.value") == 100
    # And one dropped on the list (its drop zone).
    drop = page.evaluate_handle(
        "() => { const data = new DataTransfer();"
        " data.items.add(new File(['dropped'], 'dropped note.md', {type: 'text/markdown'})); return data; }"
    )
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": drop})
    expect(row(page, "dropped note.md")).to_have_count(1)
    expect(page.locator("#rows tr")).to_have_count(3)
    plan = row(page, "site-plan.pdf")
    expect(plan).to_contain_text("2.0 MB")
    assert axe_violations(page) == []
    shot(page, "files.png")

    # The name search box.
    page.get_by_label("Name", exact=True).fill("quarterly")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#rows tr")).to_have_count(1)
    expect(row(page, "quarterly report.txt")).to_have_count(1)
    shot(page, "search.png")
    page.get_by_role("button", name="Clear", exact=True).click()
    expect(page.locator("#rows tr")).to_have_count(3)

    # A size range: at least 1 MB (the filters beyond the name are folded until asked for).
    expect(page.get_by_label("At least")).to_be_hidden()
    open_filters(page)
    page.get_by_label("At least").fill("1")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#rows tr")).to_have_count(1)
    expect(row(page, "site-plan.pdf")).to_have_count(1)
    page.get_by_role("button", name="Clear", exact=True).click()
    # A date range that ended yesterday holds nothing.
    page.get_by_label("To", exact=True).fill("2020-01-01")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("No files match these filters.")).to_be_visible()
    page.get_by_role("button", name="Clear", exact=True).click()
    expect(page.locator("#rows tr")).to_have_count(3)

    # Sorting: by size, largest first, then smallest first; by time, newest first.
    page.get_by_role("button", name="Size").click()
    expect(page.locator("#size-header")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#rows tr").first).to_contain_text("site-plan.pdf")
    page.get_by_role("button", name="Size").click()
    expect(page.locator("#size-header")).to_have_attribute("aria-sort", "ascending")
    expect(page.locator("#rows tr").first).to_contain_text("dropped note.md")
    page.get_by_role("button", name="Uploaded").click()
    expect(page.locator("#time-header")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#rows tr").first).to_contain_text("dropped note.md")

    # Download: the file's own name, the same bytes.
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download site-plan.pdf").click()
    download = download_info.value
    assert download.suggested_filename == "site-plan.pdf"
    saved = tmp_path / "saved.pdf"
    download.save_as(saved)
    assert saved.read_bytes() == BIG

    # Delete, after a confirmation in the page's own dialog, as for a selection (never the browser's
    # confirm()); Cancel keeps the file.
    native: list[str] = []

    def browsers_own(dialog: Dialog) -> None:
        native.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", browsers_own)
    opener = page.get_by_role("button", name="Delete quarterly report.txt")
    opener.click()
    confirm = page.get_by_role("dialog", name="Delete “quarterly report.txt”?")
    expect(confirm).to_be_visible()
    expect(confirm).to_contain_text("This cannot be undone.")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    assert axe_violations(page) == []
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_be_hidden()
    expect(opener).to_be_focused()
    expect(row(page, "quarterly report.txt")).to_have_count(1)
    opener.click()
    confirm.get_by_role("button", name="Delete", exact=True).click()
    expect(row(page, "quarterly report.txt")).to_have_count(0)
    assert native == []
    expect(page.get_by_role("status").filter(has_text="quarterly report.txt was deleted")).to_be_visible()
    page.reload()
    expect(page.locator("#rows tr")).to_have_count(2)

    # No password anywhere the page keeps things; sign-out forgets the tokens.
    stored = page.evaluate("() => JSON.stringify({...sessionStorage}) + JSON.stringify({...localStorage})")
    assert ready["demoPassword"] not in stored
    assert "idToken" in stored
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length + localStorage.length") == 0


def test_a_second_person_sees_none_of_the_first_persons_files(
    browser: Browser, ready: dict[str, Any]
) -> None:
    password = add_person(ready["awsEndpoint"], ready["userPoolId"], "carol", "Carol-Passw0rd!x")
    first = browser.new_context()
    first.set_default_timeout(TIMEOUT_MS)
    page = first.new_page()
    signed_in(page, ready, "demo", ready["demoPassword"])
    page.get_by_label("Upload files").set_input_files(
        [file_payload("demo-private.txt", "text/plain", b"mine")]
    )
    expect(row(page, "demo-private.txt")).to_have_count(1)
    first.close()
    second = browser.new_context()
    second.set_default_timeout(TIMEOUT_MS)
    page = second.new_page()
    sign_in(page, ready, "carol", password)
    expect(page.get_by_text("Signed in as")).to_contain_text("carol")
    expect(page.get_by_text("No files yet.")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("private")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("No files match these filters.")).to_be_visible()
    # Nobody but admins is offered the choice of another user.
    expect(page.get_by_label("Show", exact=True)).to_be_hidden()
    second.close()


def test_an_admin_chooses_a_user_or_the_whole_bucket(page: Page, ready: dict[str, Any]) -> None:
    sign_in(page, ready, ready["adminUser"], ready["adminPassword"])
    expect(page.get_by_text("Signed in as")).to_contain_text("admin")
    page.get_by_label("Show", exact=True).select_option("The whole bucket")
    expect(page.get_by_role("heading", name="All files of the bucket")).to_be_visible()
    expect(page.locator("#rows tr").first).to_be_visible()
    # Newest first, as the column header says (the bucket's time index, not its size index).
    shown = page.locator("#rows time").evaluate_all("times => times.map(t => t.dateTime)")
    assert len(shown) > 1
    assert shown == sorted(shown, reverse=True)
    # Others' files have no Delete button.
    expect(page.get_by_role("button", name=re.compile("^Delete "))).to_have_count(0)
    assert axe_violations(page) == []
    shot(page, "admin.png")


def test_a_wrong_password_is_said_clearly(page: Page, ready: dict[str, Any]) -> None:
    sign_in(page, ready, "demo", "not-the-password")
    expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")
    expect(page.get_by_label("Password", exact=True)).to_have_value("")
    sign_in(page, ready, "nobody-here", "whatever-Passw0rd!")
    expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")


def test_an_expired_session_asks_to_sign_in_again(page: Page, ready: dict[str, Any]) -> None:
    sign_in(page, ready, "demo", ready["demoPassword"])
    expect(page.get_by_text("Signed in as")).to_be_visible()
    # The ID token has expired and the refresh token is no longer good (revoked, or past its validity):
    # the API refuses the token, the refresh fails, and the page says so instead of showing an error.
    kept = json.loads(page.evaluate("() => sessionStorage.getItem('s3-file-search.session')"))
    kept["idToken"] = expired(kept["idToken"])
    kept["refreshToken"] = "no-longer-valid"
    page.evaluate("value => sessionStorage.setItem('s3-file-search.session', value)", json.dumps(kept))
    page.reload()
    expect(page.get_by_role("alert")).to_have_text("Your session has expired. Please sign in again.")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0


def test_tokens_are_refreshed_before_they_expire(page: Page, ready: dict[str, Any]) -> None:
    sign_in(page, ready, "demo", ready["demoPassword"])
    expect(page.get_by_text("Signed in as")).to_be_visible()
    before = json.loads(page.evaluate("() => sessionStorage.getItem('s3-file-search.session')"))
    # The token is about to expire (its record says so): the next request refreshes it first.
    page.evaluate(
        "() => { const key = 's3-file-search.session'; const s = JSON.parse(sessionStorage.getItem(key));"
        " s.expiresAt = Date.now() + 10000; sessionStorage.setItem(key, JSON.stringify(s)); }"
    )
    page.reload()
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("Signed in as")).to_be_visible()
    page.wait_for_function(
        "old => JSON.parse(sessionStorage.getItem('s3-file-search.session')).idToken !== old",
        arg=before["idToken"],
    )


def test_a_phone_screen_and_the_first_load(browser: Browser, ready: dict[str, Any]) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(ready["webUrl"])
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.wait_for_load_state("networkidle")
    transferred = page.evaluate(TRANSFERRED_BYTES)
    assert 0 < transferred <= FIRST_LOAD_BUDGET_BYTES
    sign_in(page, ready, "demo", ready["demoPassword"])
    expect(page.get_by_text("Signed in as")).to_be_visible()
    photo = file_payload("phone photo with a rather long name.jpg", "image/jpeg", b"\xff\xd8" * 500)
    page.get_by_label("Upload files").set_input_files([photo])
    expect(row(page, "phone photo with a rather long name.jpg")).to_have_count(1)
    # Nothing wider than the screen.
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    # On a phone the files come first, on the first screen, under the upload buttons; the filters after.
    top = "(element) => element.getBoundingClientRect().top"
    files_top = page.locator("#results").evaluate(top)
    assert page.get_by_label("Upload files").evaluate(top) < files_top < 740
    assert files_top < page.get_by_role("search", name="Find files").evaluate(top)
    assert axe_violations(page) == []
    shot(page, "phone.png")
    context.close()


def test_on_a_desktop_the_files_come_first_each_on_one_line(browser: Browser, ready: dict[str, Any]) -> None:
    """As in Drive or the S3 console: at 1280×800 the list starts above the fold, under the name search
    and the upload buttons (a drop on the list uploads too); the other filters are folded until asked for;
    a row with four buttons is one line high."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    password = fresh_person(ready, "ines")
    signed_in(page, ready, "ines", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    upload(page, ("quarterly report 2026.txt", "text/plain", SMALL))
    # A file dropped on the list is uploaded into the folder shown.
    drop = page.evaluate_handle(
        "() => { const data = new DataTransfer();"
        " data.items.add(new File(['dropped'], 'dropped on the list.md', {type: 'text/markdown'}));"
        " return data; }"
    )
    page.get_by_role("table").dispatch_event("drop", {"dataTransfer": drop})
    expect(row(page, "dropped on the list.md")).to_have_count(1)

    page.reload()
    listed(page)
    expect(page.locator("#rows tr")).to_have_count(2)
    table = page.get_by_role("table").bounding_box()
    assert table is not None
    assert table["y"] < 400, table
    last = page.locator("#rows tr").last.bounding_box()
    assert last is not None
    assert last["y"] + last["height"] <= 800, last
    expect(page.get_by_label("At least")).to_be_hidden()
    expect(page.get_by_label("Upload files")).to_be_attached()
    expect(page.get_by_text("Upload files", exact=True)).to_be_visible()

    # Download, Preview, Copy link and Delete side by side: the row is one button high.
    report = row(page, "quarterly report 2026.txt")
    buttons = report.get_by_role("button")
    expect(buttons).to_have_count(4)
    boxes = [box for box in (button.bounding_box() for button in buttons.all()) if box is not None]
    assert len({round(box["y"]) for box in boxes}) == 1, boxes
    height = (report.bounding_box() or {"height": 0.0})["height"]
    assert height < 2 * boxes[0]["height"], (height, boxes[0])
    assert axe_violations(page) == []
    shot(page, "desktop.png", docs=False)

    # "Filters" unfolds the rest; a folded filter in use is counted on it.
    open_filters(page)
    page.get_by_label("At least").fill("1")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("No files match these filters.")).to_be_visible()
    page.locator("details summary").click()
    expect(page.get_by_label("At least")).to_be_hidden()
    expect(page.locator("details summary")).to_have_text("Filters (1 on)")
    assert axe_violations(page) == []
    context.close()


def test_the_index_state_is_shown_while_building(page: Page, ready: dict[str, Any]) -> None:
    store = IndexStateStore(
        boto3.client("dynamodb", endpoint_url=ready["dynamodbEndpoint"], region_name=ready["region"]),
        ready["table"],
    )
    store.start(ready["bucket"], Operation.BACKFILL, "browser-test-run")
    try:
        signed_in(page, ready, "demo", ready["demoPassword"])
        # The search function reads the state record at most every few seconds: search until it tells.
        notice = page.get_by_role("status")
        for _ in range(40):
            if "The index is being built" in (page.locator("#notice").text_content() or ""):
                break
            page.wait_for_timeout(500)
            page.get_by_role("button", name="Search").click()
        expect(notice).to_contain_text("The index is being built")
        shot(page, "building.png")
    finally:
        store.finish(ready["bucket"], "browser-test-run")


def test_more_pages_never_show_a_file_twice_and_the_keyboard_suffices(
    page: Page, ready: dict[str, Any]
) -> None:
    password = add_person(ready["awsEndpoint"], ready["userPoolId"], "dave", "Dave-Passw0rd!xy")
    token = cognito_sign_in(ready["awsEndpoint"], ready["userPoolClientId"], "dave", password)["IdToken"]
    for index in range(63):  # more than one page of 50
        status, form, _ = call(
            f"{ready['apiUrl']}/me/uploads",
            "POST",
            token=token,
            body={"name": f"page-{index:02d}.txt", "size": 2},
        )
        assert status == 200
        assert post_form(form["url"], form["fields"], b"hi") == 204
    # Only the keyboard: focus moves to the user name, Tab to the password, Enter signs in.
    page.goto(ready["webUrl"])
    expect(page.get_by_label("User name", exact=True)).to_be_focused()
    page.keyboard.type("dave")
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    expect(page.get_by_text("Signed in as")).to_contain_text("dave")
    rows = page.locator("#rows tr")
    for _ in range(40):  # the uploads are indexed in the background
        if page.get_by_role("button", name="Show more").is_visible():
            break
        page.wait_for_timeout(250)
        page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(50)
    more = page.get_by_role("button", name="Show more")
    more.focus()
    page.keyboard.press("Enter")
    expect(rows).to_have_count(63)
    expect(more).to_be_hidden()
    names = rows.locator("th").all_text_contents()
    assert sorted(names) == [f"page-{index:02d}.txt" for index in range(63)]

    # By size: the API's size order of the person's files, a page at a time, not the whole list read and
    # sorted in the page (everywhere: a folder's own list is in name order only).
    page.get_by_label("Everywhere").check()
    expect(rows).to_have_count(50)
    with page.expect_request(lambda request: "/me/files?" in request.url and "sort=size" in request.url):
        page.get_by_role("button", name="Size").click()
    expect(page.locator("#size-header")).to_have_attribute("aria-sort", "descending")
    expect(rows).to_have_count(50)
    page.get_by_role("button", name="Show more").click()
    expect(rows).to_have_count(63)
    assert sorted(rows.locator("th").all_text_contents()) == [f"page-{index:02d}.txt" for index in range(63)]


# ---- what a newcomer's trial found, and the API's rate limit


def _listing_polls(url: str) -> bool:
    """What the page asks while an upload waits to be indexed: a list of one's files from the file's key
    on (`prefix`, one item), never `GET /me/files/{key}`."""
    query = parse_qs(urlsplit(url).query)
    return "/me/files?" in url and "prefix" in query and query.get("limit") == ["1"]


def _not_listed_yet(route: Route, ready: dict[str, Any]) -> None:
    """The API's answer to that list before the file is indexed: 200, no item."""
    route.fulfill(
        status=200,
        headers={"Access-Control-Allow-Origin": ready["webUrl"], "Content-Type": "application/json"},
        body=json.dumps({"items": [], "nextCursor": None, "orderedBy": "objectKey", "indexState": "READY"}),
    )


def test_waiting_for_an_upload_logs_no_error(page: Page, ready: dict[str, Any]) -> None:
    """A file not indexed yet is a list without it (200), not a 404, which Chromium logs in the console as
    an error at every wait: no request for the file by its key, no error in the console."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    by_key: list[str] = []
    page.on(
        "request",
        lambda request: by_key.append(request.url) if re.search(r"/me/files/[^?]", request.url) else None,
    )
    password = fresh_person(ready, "hilda")
    signed_in(page, ready, "hilda", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    polls: list[str] = []

    def slow_to_index(route: Route) -> None:
        polls.append(route.request.url)
        if len(polls) <= 2:
            _not_listed_yet(route, ready)
        else:
            route.fallback()

    page.route(_listing_polls, slow_to_index)
    upload(page, ("slow to index.txt", "text/plain", SMALL), ("another.txt", "text/plain", SMALL))
    expect(page.locator("#uploads li").filter(has_text="Done")).to_have_count(2)
    assert by_key == []
    assert errors == []
    assert len(polls) >= 3


def test_an_upload_is_asked_for_less_and_less_often(page: Page, ready: dict[str, Any]) -> None:
    """Polling backs off (250 ms, doubling up to 4 s) instead of asking 4 times a second for a minute.

    The gaps are lower bounds, which a slow machine only widens: a poll is sent no sooner than its wait
    after the previous one was answered, and the route handler sees it no sooner than it is sent.
    """
    password = fresh_person(ready, "erin")
    signed_in(page, ready, "erin", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    seen: list[float] = []

    def not_listed_yet(route: Route) -> None:
        if route.request.method != "GET":
            route.fallback()
            return
        seen.append(time.monotonic())
        if len(seen) <= 3:
            _not_listed_yet(route, ready)
        else:
            route.fallback()

    page.route(_listing_polls, not_listed_yet)
    upload(page, ("slow to index.txt", "text/plain", SMALL))
    expect(page.locator("#uploads li")).to_contain_text("Done")
    gaps = [later - earlier for earlier, later in itertools.pairwise(seen)]
    assert len(gaps) >= 3
    for gap, least in zip(gaps, (0.5, 1.0, 2.0), strict=False):
        assert gap >= least, gaps


def test_an_upload_rides_out_the_apis_rate_limit(page: Page, ready: dict[str, Any]) -> None:
    """429s while the page waits for an upload to be listed: it waits (Retry-After when it may read it,
    else backing off), asks again, and the upload ends listed, not "Failed"."""
    password = fresh_person(ready, "frank")
    signed_in(page, ready, "frank", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    seen: list[float] = []

    def throttled(route: Route) -> None:
        if route.request.method != "GET":
            route.fallback()
            return
        seen.append(time.monotonic())
        if len(seen) == 1:
            retry_later(route, ready, retry_after="2")
        elif len(seen) <= 4:
            retry_later(route, ready)
        else:
            route.fallback()

    page.route(_listing_polls, throttled)
    upload(page, ("busy day.txt", "text/plain", SMALL))
    uploads = page.locator("#uploads li")
    expect(uploads).to_contain_text("Done")
    expect(uploads).not_to_contain_text("Failed")
    assert len(seen) >= 5
    assert seen[1] - seen[0] >= 2.0  # Retry-After: 2


def test_an_upload_rides_out_a_failing_api_while_it_waits(page: Page, ready: dict[str, Any]) -> None:
    """A 502 or 504 (a function timing out) while the page waits for an upload to be listed only means
    asking later: the upload ends listed, not "Failed" nor given up."""
    password = fresh_person(ready, "gail")
    signed_in(page, ready, "gail", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    seen: list[int] = []

    def failing(route: Route) -> None:
        if route.request.method != "GET" or len(seen) >= 2:
            route.fallback()
            return
        seen.append(len(seen))
        api_error(route, ready, (502, 504)[len(seen) - 1], "Internal server error")

    page.route(_listing_polls, failing)
    upload(page, ("stormy day.txt", "text/plain", SMALL))
    expect(page.locator("#uploads li")).to_contain_text("Done")
    assert seen == [0, 1]


def test_filters_are_checked_in_the_fields_own_words(page: Page, ready: dict[str, Any]) -> None:
    signed_in(page, ready, "demo", ready["demoPassword"])
    listed(page)
    open_filters(page)
    least, most = page.get_by_label("At least"), page.get_by_label("At most")
    problem = page.locator("#filter-error")

    def marked(*fields: Any) -> None:
        for field in fields:
            expect(field).to_have_attribute("aria-invalid", "true")
            expect(field).to_have_attribute("aria-describedby", "filter-error")

    # The page knows its own fields: it says what is wrong with them before asking the API.
    least.fill("5")
    most.fill("2")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_have_text("“At least” must not be more than “At most”.")
    expect(problem).to_have_attribute("role", "alert")
    marked(least, most)
    assert axe_violations(page) == []
    shot(page, "filter-error.png", docs=False)
    most.fill("")
    least.fill("9999999999")
    page.get_by_label("Unit").select_option("GB")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_have_text("“At least” is larger than any file.")
    marked(least)
    expect(most).not_to_have_attribute("aria-invalid", "true")
    least.fill("-1")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_contain_text("“At least”: ")
    marked(least)
    page.get_by_role("button", name="Clear", exact=True).click()
    page.get_by_label("From", exact=True).fill("2024-05-02")
    page.get_by_label("To", exact=True).fill("2024-05-01")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_have_text("“From” must not be after “To”.")
    marked(page.get_by_label("From", exact=True), page.get_by_label("To", exact=True))
    # What only the API can tell is said under the field's label, in the API's words.
    page.get_by_role("button", name="Clear", exact=True).click()
    page.get_by_label("Name", exact=True).fill("!!!")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_contain_text("“Name” has no word in it")
    marked(page.get_by_label("Name", exact=True))
    expect(page.locator("#list-error")).to_be_hidden()
    for api_word in ("minSize", "maxSize", "9223372036854775807", "query parameter"):
        expect(page.locator("main")).not_to_contain_text(api_word)
    # Right again: the marks go.
    page.get_by_label("Name", exact=True).fill("quarterly")
    page.get_by_role("button", name="Search").click()
    expect(problem).to_be_hidden()
    expect(page.get_by_label("Name", exact=True)).not_to_have_attribute("aria-invalid", "true")


def test_a_failed_list_offers_to_try_again(page: Page, ready: dict[str, Any]) -> None:
    answers: list[int] = []

    def fails_once(route: Route) -> None:
        if route.request.method == "GET" and not answers:
            answers.append(500)
            api_error(route, ready, 500, "internal error")
        else:
            route.fallback()

    page.route(lambda url: "/me/files?" in url, fails_once)
    signed_in(page, ready, "demo", ready["demoPassword"])
    expect(page.locator("#list-error")).to_have_text("Your files could not be loaded: internal error")
    again = page.get_by_role("button", name="Try again")
    expect(again).to_be_visible()
    assert axe_violations(page) == []
    shot(page, "list-error.png", docs=False)
    again.click()
    listed(page)
    expect(page.locator("#list-error")).to_be_hidden()
    expect(again).to_be_hidden()
    assert answers == [500]


def test_clear_resets_every_filter_the_unit_included(page: Page, ready: dict[str, Any]) -> None:
    signed_in(page, ready, "demo", ready["demoPassword"])
    page.get_by_label("Name", exact=True).fill("report")
    open_filters(page)
    page.get_by_label("From", exact=True).fill("2024-01-01")
    page.get_by_label("To", exact=True).fill("2024-12-31")
    page.get_by_label("At least").fill("1")
    page.get_by_label("At most").fill("2")
    page.get_by_label("Unit").select_option("GB")
    page.get_by_role("button", name="Clear", exact=True).click()
    for field in ("Name", "From", "To", "At least", "At most"):
        expect(page.get_by_label(field, exact=True)).to_have_value("")
    expect(page.get_by_label("Unit")).to_have_value(
        page.get_by_role("option", name="MB").get_attribute("value") or ""
    )


def test_signing_out_is_said_as_a_status(page: Page, ready: dict[str, Any]) -> None:
    signed_in(page, ready, "demo", ready["demoPassword"])
    page.get_by_role("button", name="Sign out").click()
    said = page.get_by_role("status").filter(has_text="You are signed out.")
    expect(said).to_be_visible()
    expect(page.get_by_role("alert")).to_have_count(0)
    # Not drawn as the errors are (the sign-in form's own error is the same red as every error).
    colour = "element => getComputedStyle(element).color"
    assert said.evaluate(colour) != page.locator("#sign-in-error").evaluate(colour)
    assert said.evaluate("element => getComputedStyle(element).fontWeight") in ("400", "normal")
    shot(page, "signed-out.png", docs=False)


def test_what_the_page_last_said_goes_with_sign_out(page: Page, ready: dict[str, Any]) -> None:
    """The notice of the last action ("… deleted") was about the files of the person signing out: it
    goes at once, not when it would have faded, so the next person at the screen never reads it."""
    password = fresh_person(ready, "hugo")
    signed_in(page, ready, "hugo", password)
    upload(page, ("old draft.txt", "text/plain", SMALL))
    page.get_by_label("Select old draft.txt").check()
    page.get_by_role("button", name="Delete selected").click()
    page.get_by_role("dialog", name="Delete 1 file?").get_by_role("button", name="Delete 1 file").click()
    notice = page.locator("#notice")
    expect(notice).to_have_text("1 file was deleted.")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert notice.text_content() == ""
    assert notice.is_hidden()
    expect(page.get_by_role("status").filter(has_text="You are signed out.")).to_be_visible()


def test_the_keyboard_stays_in_place_after_sign_in_and_delete(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "grace")
    page.goto(ready["webUrl"])
    expect(page.get_by_label("User name", exact=True)).to_be_focused()
    page.keyboard.type("grace")
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your files")).to_be_focused()
    page.get_by_label("Upload files").set_input_files(
        [file_payload(name, "text/plain", SMALL) for name in ("a.txt", "b.txt", "c.txt")]
    )
    expect(page.locator("#rows tr")).to_have_count(3)

    def confirm_with_keyboard(name: str) -> None:
        """Enter on a row's Delete opens the page's dialog, Cancel first; Shift+Tab, Enter: Delete."""
        page.keyboard.press("Enter")
        confirm = page.get_by_role("dialog", name=f"Delete “{name}”?")
        expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        expect(confirm.get_by_role("button", name="Delete", exact=True)).to_be_focused()
        page.keyboard.press("Enter")

    names = page.locator("#rows th").all_text_contents()  # newest first, whatever order they were indexed
    # The middle one: focus goes to the next row's Delete; the last one: to the previous row's.
    page.get_by_role("button", name=f"Delete {names[1]}").focus()
    confirm_with_keyboard(names[1])
    expect(row(page, names[1])).to_have_count(0)
    expect(page.get_by_role("button", name=f"Delete {names[2]}")).to_be_focused()
    confirm_with_keyboard(names[2])
    expect(row(page, names[2])).to_have_count(0)
    expect(page.get_by_role("button", name=f"Delete {names[0]}")).to_be_focused()
    # The last file: the list's heading.
    confirm_with_keyboard(names[0])
    expect(page.get_by_text("No files yet.")).to_be_visible()
    expect(page.get_by_role("heading", name="Your files")).to_be_focused()


def test_loading_the_page_requests_nothing_missing(browser: Browser, ready: dict[str, Any]) -> None:
    # A browser of its own: Chromium remembers an icon that was missing and would not ask for it again.
    fresh = browser.browser_type.launch(executable_path=str(chromium_path()), args=list(CHROMIUM_ARGS))
    try:
        page = fresh.new_page()
        page.goto(ready["webUrl"])
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        page.wait_for_load_state("networkidle")
        # Without an icon the browser asks for /favicon.ico after the load: give it the time to.
        page.wait_for_timeout(1500)
        entries = page.evaluate(
            "() => performance.getEntriesByType('navigation')"
            ".concat(performance.getEntriesByType('resource'))"
            ".map(entry => [entry.name, entry.responseStatus])"
        )
        assert [name for name, status in entries if status >= 400] == []
        assert {name.rsplit("/", 1)[-1] for name, _ in entries} >= {"", "app.js", "style.css", "config.json"}
        icon = page.locator("link[rel~='icon']")
        expect(icon).to_have_count(1)
        assert (icon.get_attribute("href") or "").startswith("data:image/svg+xml,")
    finally:
        fresh.close()
