"""The page's uploads in Chromium: large files in parts that resume after a dropped connection or a reload,
a question before leaving while a file is sent, Cancel and Retry, "replace or keep both" for a name already
taken, "Clear finished", the list on screen gaining an upload only when it belongs there, and no upload
offered while an admin looks at other people's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.browser.helpers import axe_violations, file_payload, fresh_person, listed, row, shot, signed_in

from playwright.sync_api import Dialog, Page, Route, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")

MiB = 1024**2
# Above the API's 16 MiB threshold: three parts of 8, 8 and 1 MiB.
LARGE = bytes(range(256)) * (17 * MiB // 256)
PICKER = "Upload files"


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
    # The upload is listed under the name the file got, not the one chosen.
    kept = page.locator("#uploads li").last
    expect(kept).to_contain_text("cv (1).txt")
    expect(kept.get_by_role("progressbar", name="Upload of cv (1).txt")).to_have_count(1)
    first_time = row(page, "cv.txt").locator("time").get_attribute("datetime") or ""

    # Escape keeps the file that is there, uploading nothing.
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"twelve bytes")])
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(page.locator("#uploads li").last).to_contain_text("Not uploaded: the file there is kept")

    # Replace: the 12 bytes take the name, and its row says so once indexed, without a reload.
    picker.set_input_files([file_payload("cv.txt", "text/plain", b"twelve bytes")])
    dialog.get_by_role("button", name="Replace").click()
    expect(page.locator("#uploads li").last).to_contain_text("Done")
    expect(row(page, "cv.txt")).to_contain_text("12 B")
    replaced_time = row(page, "cv.txt").locator("time").get_attribute("datetime") or ""
    assert replaced_time > first_time
    expect(page.locator("#rows tr")).to_have_count(2)
    page.reload()
    listed(page)
    expect(row(page, "cv.txt")).to_contain_text("12 B")
    expect(row(page, "cv.txt").locator("time")).to_have_attribute("datetime", replaced_time)
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


def test_an_admin_viewing_other_peoples_files_is_not_offered_an_upload(
    page: Page, ready: dict[str, Any]
) -> None:
    """Uploads go to one's own files (the API takes no other person): while an admin looks at another
    person's files or the whole bucket, the page offers none and says why, and a drop uploads nothing."""
    signed_in(page, ready, ready["adminUser"], ready["adminPassword"])
    listed(page)
    picker = page.get_by_label(PICKER)
    expect(picker).to_be_visible()
    elsewhere = page.get_by_text("These are not your files: uploads go to your own.")
    expect(elsewhere).to_be_hidden()
    page.get_by_label("Show", exact=True).select_option("One user's files")
    page.get_by_label("User", exact=True).fill("someone-else")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Files of someone-else")).to_be_visible()
    listed(page)
    expect(picker).to_be_hidden()
    expect(page.get_by_label("Upload a folder")).to_be_hidden()
    expect(elsewhere).to_be_visible()
    assert axe_violations(page) == []
    # A file dropped on the page there is not uploaded anywhere.
    drop = page.evaluate_handle(
        "() => { const data = new DataTransfer();"
        " data.items.add(new File(['mine'], 'admin note.txt', {type: 'text/plain'})); return data; }"
    )
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": drop})
    page.wait_for_timeout(1000)
    expect(page.locator("#uploads li")).to_have_count(0)

    page.get_by_label("Show", exact=True).select_option("The whole bucket")
    expect(page.get_by_role("heading", name="All files of the bucket")).to_be_visible()
    expect(picker).to_be_hidden()
    expect(elsewhere).to_be_visible()
    page.get_by_label("Show", exact=True).select_option("My files")
    expect(page.get_by_role("heading", name="Your files")).to_be_visible()
    expect(picker).to_be_visible()
    expect(elsewhere).to_be_hidden()


def test_leaving_during_an_upload_asks_first_and_one_in_parts_resumes_after_a_reload(
    page: Page, ready: dict[str, Any], tmp_path: Path
) -> None:
    """A reload while a file is sent asks first (the browser's own question); a large file's parts are in
    S3, so after the reload the page offers to resume it: the same file chosen again sends only the rest."""
    password = fresh_person(ready, "jon")
    signed_in(page, ready, "jon", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    page.get_by_label(PICKER).set_input_files([file_payload("notes.txt", "text/plain", b"notes\n")])
    expect(row(page, "notes.txt")).to_have_count(1)
    backup = tmp_path / "backup.bin"
    backup.write_bytes(LARGE)
    held: list[Route] = []

    def hold_the_last_part(route: Route) -> None:
        if route.request.method == "PUT" and "partNumber=3" in route.request.url:
            held.append(route)  # never answered: the reload comes first
            return
        route.fallback()

    page.route(f"{ready['awsEndpoint']}/**", hold_the_last_part)
    page.get_by_label(PICKER).set_input_files(backup)
    upload_id = _started_upload(ready, page, "backup.bin", parts=2)

    questions: list[str] = []

    def asked(dialog: Dialog) -> None:
        questions.append(dialog.type)
        dialog.accept()

    page.on("dialog", asked)
    # A download meanwhile leaves nothing: it is not asked about.
    with page.expect_download() as download:
        page.get_by_role("button", name="Download notes.txt").click()
    assert download.value.suggested_filename == "notes.txt"
    assert questions == []
    page.reload()
    assert questions == ["beforeunload"]
    assert held

    page.unroute(f"{ready['awsEndpoint']}/**")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "PUT" else None)
    listed(page)
    entry = upload_entry(page, "backup.bin")
    expect(entry).to_contain_text("Interrupted at 94%: choose the same file to resume")
    assert axe_violations(page) == []
    shot(page, "resume.png", docs=False)
    # Another file is not taken for it.
    other = tmp_path / "other.bin"
    other.write_bytes(b"not the backup")
    page.get_by_label("Resume the upload of backup.bin").set_input_files(other)
    expect(entry).to_contain_text("That is another file: choose “backup.bin”")
    page.get_by_label("Resume the upload of backup.bin").set_input_files(backup)
    expect(row(page, "backup.bin")).to_have_count(1)
    expect(upload_entry(page, "backup.bin")).to_contain_text("Done")
    # Only the part S3 did not hold was sent again.
    part_puts = [url for url in sent if "partNumber=" in url]
    assert len(part_puts) == 1, part_puts
    assert "partNumber=3" in part_puts[0]
    assert upload_id in part_puts[0]
    key = row(page, "backup.bin").get_attribute("data-key") or ""
    assert s3(ready).get_object(Bucket=ready["bucket"], Key=key)["Body"].read() == LARGE
    assert page.evaluate("() => localStorage.getItem('s3-file-search.uploads')") is None

    # Nothing is sent now: leaving asks nothing.
    page.reload()
    listed(page)
    assert questions == ["beforeunload"]
    expect(page.locator("#uploads li")).to_have_count(0)


def _started_upload(ready: dict[str, Any], page: Page, name: str, parts: int) -> str:
    """The uploadId of the multipart upload of a file `name` once S3 holds `parts` of its parts."""
    for _ in range(600):  # route handlers run while the page is waited on
        uploads = s3(ready).list_multipart_uploads(Bucket=ready["bucket"]).get("Uploads") or []
        for upload in uploads:
            if not upload["Key"].endswith(f"/{name}"):
                continue
            held = s3(ready).list_parts(
                Bucket=ready["bucket"], Key=upload["Key"], UploadId=upload["UploadId"]
            )
            if len(held.get("Parts") or []) >= parts:
                return str(upload["UploadId"])
        page.wait_for_timeout(100)
    raise AssertionError(f"no multipart upload of {name} held {parts} parts")


def test_an_unfinished_upload_is_discarded(page: Page, ready: dict[str, Any], tmp_path: Path) -> None:
    """ "Discard" aborts an upload left unfinished: S3 drops its parts, the page forgets it."""
    password = fresh_person(ready, "kate")
    signed_in(page, ready, "kate", password)
    expect(page.get_by_text("No files yet.")).to_be_visible()
    archive = tmp_path / "archive.bin"
    archive.write_bytes(LARGE)
    page.route(
        f"{ready['awsEndpoint']}/**",
        lambda route: None if "partNumber=3" in route.request.url else route.fallback(),
    )
    page.get_by_label(PICKER).set_input_files(archive)
    upload_id = _started_upload(ready, page, "archive.bin", parts=2)
    page.once("dialog", lambda dialog: dialog.accept())
    page.reload()
    page.unroute(f"{ready['awsEndpoint']}/**")
    listed(page)
    expect(upload_entry(page, "archive.bin")).to_contain_text("Interrupted at")
    page.get_by_role("button", name="Discard the upload of archive.bin").click()
    expect(upload_entry(page, "archive.bin")).to_have_count(0)
    page.wait_for_timeout(500)
    uploads = s3(ready).list_multipart_uploads(Bucket=ready["bucket"]).get("Uploads") or []
    assert upload_id not in [upload["UploadId"] for upload in uploads]
    assert page.evaluate("() => localStorage.getItem('s3-file-search.uploads')") is None
