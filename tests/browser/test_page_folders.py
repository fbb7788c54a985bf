"""Folders and many files at once, as a person meets them: headless Chromium against the local stack.

Browse (breadcrumbs, sub-folders first, Up), a new folder, uploads into the folder shown and of a whole
folder (its structure kept), search in the folder or everywhere and as one types, a selection downloaded
as one zip (opened with zipfile and compared with what was uploaded) and deleted after one confirmation.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import axe_violations, fresh_person, row, shot, signed_in, upload

from playwright.sync_api import Page, Route, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")


def _folder(page: Page, name: str) -> Any:
    return page.get_by_role("button", name=f"Open folder {name}", exact=True)


def test_a_person_browses_makes_a_folder_and_uploads_into_it_and_a_whole_folder(
    page: Page, ready: dict[str, Any], tmp_path: Path
) -> None:
    password = fresh_person(ready, "hana")
    signed_in(page, ready, "hana", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()

    # A new folder: a dialog, labelled, focus in it; a bad name is said in words, in the dialog.
    opener = page.get_by_role("button", name="New folder")
    opener.click()
    dialog = page.get_by_role("dialog", name="New folder")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_label("Folder name")).to_be_focused()
    dialog.get_by_label("Folder name").fill("a/b")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog.get_by_role("alert")).to_have_text("A folder's name cannot hold “/” or “\\”.")
    assert axe_violations(page) == []
    # Escape closes it and focus goes back to what opened it.
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()
    opener.click()
    dialog.get_by_label("Folder name").fill("reports")
    page.keyboard.press("Enter")
    expect(page.get_by_role("navigation", name="Folders")).to_contain_text("reports")
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    # Uploads go into the folder shown.
    upload(page, ("q1.txt", "text/plain", b"first quarter\n"))
    expect(row(page, "q1.txt")).to_contain_text("reports")

    # A whole folder from the folder picker keeps its structure.
    tree = tmp_path / "trip"
    (tree / "day 1").mkdir(parents=True)
    (tree / "day 1" / "beach.txt").write_bytes(b"sand\n")
    (tree / "notes.txt").write_bytes(b"pack light\n")
    page.get_by_label("Upload a folder").set_input_files(tree)
    expect(_folder(page, "trip")).to_be_visible()
    _folder(page, "trip").click()
    expect(row(page, "notes.txt")).to_have_count(1)
    expect(_folder(page, "day 1")).to_be_visible()
    _folder(page, "day 1").click()
    expect(row(page, "beach.txt")).to_contain_text("reports/trip/day 1")
    crumbs = page.get_by_role("navigation", name="Folders").get_by_role("listitem")
    expect(crumbs).to_have_text(["Your files", "reports", "trip", "day 1"])

    # Up, and the breadcrumbs, back to the top; sub-folders come before files.
    page.get_by_role("button", name="Up", exact=True).click()
    expect(row(page, "notes.txt")).to_have_count(1)
    page.get_by_role("navigation", name="Folders").get_by_role("button", name="Your files").click()
    expect(_folder(page, "reports")).to_be_visible()
    upload(page, ("top.txt", "text/plain", b"at the top\n"))
    first = page.locator("#results tbody tr").first
    expect(first).to_contain_text("reports")
    assert axe_violations(page) == []
    shot(page, "folders.png")

    # Search in this folder or everywhere, as one types (the previous request cancelled).
    _folder(page, "reports").click()
    expect(row(page, "q1.txt")).to_have_count(1)
    name = page.get_by_label("Name", exact=True)
    with page.expect_request(lambda request: "q=beach" in request.url and "prefix=reports" in request.url):
        name.press_sequentially("beach", delay=20)
    expect(row(page, "beach.txt")).to_have_count(1)
    expect(page.locator("#rows tr")).to_have_count(1)
    name.fill("top")
    expect(page.get_by_text("No files match these filters.")).to_be_visible()
    page.get_by_label("Everywhere").check()
    expect(row(page, "top.txt")).to_have_count(1)


def test_a_selection_downloads_as_one_zip_and_is_deleted_after_one_confirmation(
    page: Page, ready: dict[str, Any], tmp_path: Path
) -> None:
    password = fresh_person(ready, "ivan")
    signed_in(page, ready, "ivan", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    contents = {f"part-{index}.txt": f"part {index}\n".encode() * (index + 1) for index in range(5)}
    upload(page, *((name, "text/plain", content) for name, content in contents.items()))

    # A shift-click selects the range between two clicks.
    page.get_by_label("Select part-0.txt").click()
    page.get_by_label("Select part-3.txt").click(modifiers=["Shift"])
    expect(page.get_by_text("4 selected")).to_be_visible()
    expect(page.get_by_label("Select part-4.txt")).not_to_be_checked()
    page.get_by_label("Select all on this page").check()
    expect(page.get_by_text("5 selected")).to_be_visible()
    assert axe_violations(page) == []
    shot(page, "selection.png")

    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download as zip").click()
    download = download_info.value
    assert download.suggested_filename == "files.zip"
    saved = tmp_path / "files.zip"
    download.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        assert archive.testzip() is None
        assert {info.filename: archive.read(info) for info in archive.infolist()} == contents

    # A folder downloads the same way.
    page.get_by_role("button", name="New folder").click()
    page.get_by_label("Folder name").fill("kept")
    page.keyboard.press("Enter")
    upload(page, ("inside.txt", "text/plain", b"inside\n"))
    page.get_by_role("navigation", name="Folders").get_by_role("button", name="Your files").click()
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download folder kept as a zip").click()
    download = download_info.value
    assert download.suggested_filename == "kept.zip"
    download.save_as(tmp_path / "kept.zip")
    with zipfile.ZipFile(tmp_path / "kept.zip") as archive:
        assert {info.filename: archive.read(info) for info in archive.infolist()} == {
            "kept/inside.txt": b"inside\n"
        }

    # Delete many: one confirmation naming the count; Cancel keeps them.
    page.get_by_label("Select part-1.txt").check()
    page.get_by_label("Select part-2.txt").check()
    opener = page.get_by_role("button", name="Delete selected")
    opener.click()
    confirm = page.get_by_role("dialog", name="Delete 2 files?")
    expect(confirm).to_be_visible()
    assert axe_violations(page) == []
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_be_hidden()
    expect(opener).to_be_focused()
    expect(page.locator("#rows tr")).to_have_count(5)
    opener.click()
    confirm.get_by_role("button", name="Delete 2 files").click()
    expect(row(page, "part-1.txt")).to_have_count(0)
    expect(row(page, "part-2.txt")).to_have_count(0)
    expect(page.locator("#notice")).to_contain_text("2 files were deleted")
    page.reload()
    expect(row(page, "part-0.txt")).to_have_count(1)
    expect(page.locator("#rows tr")).to_have_count(3)


def test_typing_on_cancels_the_search_it_replaces(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "kim")
    signed_in(page, ready, "kim", password)
    upload(page, ("tide table.txt", "text/plain", b"high at noon\n"))
    held: list[Route] = []

    def hold_the_first_search(route: Route) -> None:
        if "q=tid&" in route.request.url + "&" and not held:
            held.append(route)  # never answered: only the page can give it up
            return
        route.continue_()

    page.route("**/me/files?*", hold_the_first_search)
    given_up: list[str] = []
    page.on("requestfailed", lambda request: given_up.append(request.url))
    name = page.get_by_label("Name", exact=True)
    name.fill("tid")
    for _ in range(240):
        if held:
            break
        page.wait_for_timeout(250)
    assert held, "the first search never left the page"
    name.fill("tide")
    expect(row(page, "tide table.txt")).to_have_count(1)
    for _ in range(240):
        if given_up:
            break
        page.wait_for_timeout(250)
    assert [url for url in given_up if "q=tid&" in url + "&"] != []
