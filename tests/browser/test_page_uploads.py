"""The page's uploads in Chromium: large files in parts that resume after a dropped connection, Cancel and
Retry, "replace or keep both" for a name already taken, "Clear finished", and the list on screen gaining an
upload only when it belongs there."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.browser.helpers import axe_violations, file_payload, fresh_person, listed, row, signed_in

from playwright.sync_api import Page, Route, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")

MiB = 1024**2
# Above the API's 16 MiB threshold: three parts of 8, 8 and 1 MiB.
LARGE = bytes(range(256)) * (17 * MiB // 256)
PICKER = "Choose files to upload, or drop them here"


def s3(ready: dict[str, Any]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=ready["awsEndpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        aws_session_token="testing",
    )


def upload_entry(page: Page, name: str) -> Any:
    return page.locator("#uploads li").filter(has=page.get_by_role("progressbar", name=f"Upload of {name}"))


def test_a_large_file_goes_in_parts_and_resumes_after_a_dropped_connection(
    page: Page, ready: dict[str, Any]
) -> None:
    password = fresh_person(ready, "frank")
    signed_in(page, ready, "frank", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    dropped: list[str] = []

    def drop_part_two_once(route: Route) -> None:
        if route.request.method == "PUT" and "partNumber=2" in route.request.url and not dropped:
            dropped.append(route.request.url)
            route.abort("connectionreset")
            return
        route.fallback()

    page.route(f"{ready['awsEndpoint']}/**", drop_part_two_once)
    page.get_by_label(PICKER).set_input_files([file_payload("backup.bin", "application/octet-stream", LARGE)])
    expect(row(page, "backup.bin")).to_have_count(1)
    entry = upload_entry(page, "backup.bin")
    expect(entry).to_contain_text("Done")
    assert dropped, "the second part's connection was never dropped"
    # One progress bar for the whole file, full.
    assert page.get_by_role("progressbar", name="Upload of backup.bin").evaluate("bar => bar.value") == 100
    listing = s3(ready).list_objects_v2(Bucket=ready["bucket"])["Contents"]
    (key,) = [item["Key"] for item in listing if item["Key"].endswith("/backup.bin")]
    stored = s3(ready).get_object(Bucket=ready["bucket"], Key=key)
    assert stored["ContentLength"] == len(LARGE)
    assert stored["Body"].read() == LARGE
    assert not s3(ready).list_multipart_uploads(Bucket=ready["bucket"]).get("Uploads")


def test_an_upload_is_cancelled_and_retried(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "gwen")
    signed_in(page, ready, "gwen", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    held: list[Route] = []

    def hold_parts(route: Route) -> None:
        if route.request.method == "PUT":
            held.append(route)  # never answered: the upload is under way until cancelled
            return
        route.fallback()

    page.route(f"{ready['awsEndpoint']}/**", hold_parts)
    page.get_by_label(PICKER).set_input_files([file_payload("video.mp4", "video/mp4", LARGE)])
    cancel = page.get_by_role("button", name="Cancel the upload of video.mp4")
    expect(cancel).to_be_visible()
    for _ in range(600):  # route handlers run while the page is waited on
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "no part was sent"
    assert s3(ready).list_multipart_uploads(Bucket=ready["bucket"]).get("Uploads")
    cancel.click()
    entry = upload_entry(page, "video.mp4")
    expect(entry).to_contain_text("Cancelled")
    # S3 dropped the parts: the multipart upload is aborted.
    page.wait_for_timeout(500)
    assert not s3(ready).list_multipart_uploads(Bucket=ready["bucket"]).get("Uploads")
    page.unroute(f"{ready['awsEndpoint']}/**")
    page.get_by_role("button", name="Retry the upload of video.mp4").click()
    expect(row(page, "video.mp4")).to_have_count(1)
    expect(entry).to_contain_text("Done")
    # Finished uploads leave the list of uploads.
    page.get_by_role("button", name="Clear finished").click()
    expect(page.locator("#uploads li")).to_have_count(0)
    expect(page.get_by_role("button", name="Clear finished")).to_be_hidden()


def test_a_name_already_taken_asks_replace_or_keep_both(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "hana")
    signed_in(page, ready, "hana", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    picker = page.get_by_label(PICKER)
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"x" * 39_000)])
    expect(row(page, "cv.txt")).to_have_count(1)
    expect(row(page, "cv.txt")).to_contain_text("38 KB")

    # The same name again: the page asks first, in a labelled modal dialog; keeping both adds "cv (1).txt".
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"twelve bytes")])
    dialog = page.get_by_role("dialog", name='"cv.txt" already exists')
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Replace it with the one you chose (12 B)")
    expect(dialog.get_by_role("button", name="Keep both")).to_be_focused()
    assert axe_violations(page) == []
    dialog.get_by_role("button", name="Keep both").click()
    expect(row(page, "cv (1).txt")).to_have_count(1)
    expect(row(page, "cv.txt")).to_contain_text("38 KB")

    # Escape keeps the file that is there, uploading nothing.
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"twelve bytes")])
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(page.locator("#uploads li").last).to_contain_text("Not uploaded: the file there is kept")

    # Replace: the 12 bytes take the name.
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"twelve bytes")])
    dialog.get_by_role("button", name="Replace").click()
    expect(page.locator("#uploads li").last).to_contain_text("Done")
    page.reload()
    listed(page)
    expect(row(page, "cv.txt")).to_contain_text("12 B")
    expect(page.locator("#rows tr")).to_have_count(2)


def test_the_list_gains_only_an_upload_that_belongs_to_it(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "ivan")
    signed_in(page, ready, "ivan", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    picker = page.get_by_label(PICKER)
    picker.set_input_files([file_payload("resume.pdf", "application/pdf", b"%PDF resume")])
    expect(row(page, "resume.pdf")).to_have_count(1)
    page.get_by_label("Name", exact=True).fill("resume")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#rows tr")).to_have_count(1)

    # With "resume" shown, cat.jpg is uploaded, and the list stays the list of "resume".
    picker.set_input_files([file_payload("cat.jpg", "image/jpeg", b"\xff\xd8 a cat")])
    expect(upload_entry(page, "cat.jpg")).to_contain_text("Done")
    page.wait_for_timeout(1000)  # the list asked again, if at all
    expect(page.locator("#rows tr")).to_have_count(1)
    expect(row(page, "cat.jpg")).to_have_count(0)
    # A file that matches joins it.
    picker.set_input_files([file_payload("resume 2026.pdf", "application/pdf", b"%PDF resume")])
    expect(row(page, "resume 2026.pdf")).to_have_count(1)


def test_an_admin_looking_at_another_persons_files_does_not_see_their_own_upload_there(
    page: Page, ready: dict[str, Any]
) -> None:
    signed_in(page, ready, ready["adminUser"], ready["adminPassword"])
    listed(page)
    page.get_by_label("Show", exact=True).select_option("One user's files")
    page.get_by_label("User", exact=True).fill("someone-else")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Files of someone-else")).to_be_visible()
    listed(page)
    before = page.locator("#rows tr").count()
    page.get_by_label(PICKER).set_input_files([file_payload("admin note.txt", "text/plain", b"mine")])
    expect(upload_entry(page, "admin note.txt")).to_contain_text("Done")
    page.wait_for_timeout(1000)
    expect(page.locator("#rows tr")).to_have_count(before)
    expect(row(page, "admin note.txt")).to_have_count(0)
