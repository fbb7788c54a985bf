"""Share links, previews, type icons and owners' names, as a person meets them: headless Chromium against
the local stack.

"Copy link" offers only the deployment's expiries (none above its cap), copies the link and shows it with
its expiry; the link downloads the file's bytes without signing in. "Preview" shows an image, a PDF (drawn
by Chromium's own viewer), text, audio and video in a dialog, without a download. Each dialog is axe-clean,
Escape closes it and focus goes back.
"""

from __future__ import annotations

import io
import re
import struct
import urllib.request
import wave
import zlib
from typing import Any

import boto3
import pytest

from tests.browser.helpers import axe_violations, fresh_person, row, shot, signed_in, upload

from playwright.sync_api import Frame, Page, expect  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")


def _png(width: int = 320, height: int = 200) -> bytes:
    """A small red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixels = b"".join(b"\x00" + b"\xcc\x22\x22" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixels))
        + chunk(b"IEND", b"")
    )


def _wav() -> bytes:
    """A tenth of a second of silence."""
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


def _pdf() -> bytes:
    """A one-page PDF saying "Quarterly report"."""
    stream = b"BT /F1 24 Tf 72 720 Td (Quarterly report) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    body = b"%PDF-1.4\n"
    offsets = []
    for number, content in enumerate(objects, start=1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % number + content + b"\nendobj\n"
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return body


def test_a_person_copies_a_link_that_downloads_the_file(page: Page, ready: dict[str, Any]) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ready["webUrl"])
    password = fresh_person(ready, "iris")
    signed_in(page, ready, "iris", password)
    content = b"shared with a link\n" * 50
    upload(page, ("notes.txt", "text/plain", content))

    # A type badge per row, kept out of the name read aloud.
    assert row(page, "notes.txt").locator("th").get_attribute("data-kind") == "text"

    opener = row(page, "notes.txt").get_by_role("button", name="Copy link to notes.txt")
    opener.click()
    dialog = page.get_by_role("dialog", name="Copy a link to notes.txt")
    expect(dialog).to_be_visible()
    expiry = dialog.get_by_label("The link works for")
    expect(expiry).to_be_focused()
    # The deployment's choices up to its cap (an hour here): nothing longer is offered.
    offered = expiry.locator("option").evaluate_all("options => options.map(o => [o.value, o.textContent])")
    config = page.evaluate("async () => (await fetch('config.json')).json()")
    assert [int(value) for value, _ in offered] == config["linkExpiries"]
    assert [text for _, text in offered] == ["5 minutes", "1 hour"]
    assert all(int(value) <= 3600 for value, _ in offered)

    expiry.select_option("5 minutes")
    dialog.get_by_role("button", name="Copy link").click()
    expect(dialog.get_by_role("status")).to_contain_text("Copied to the clipboard. It works until")
    link = dialog.get_by_label("Link", exact=True)
    url = link.input_value()
    assert url.startswith("http")
    assert page.evaluate("() => navigator.clipboard.readText()") == url
    # The link works without signing in: it downloads the file's bytes.
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (the presigned URL shown)
        assert response.read() == content
    assert axe_violations(page) == []
    shot(page, "share.png")

    # Escape closes it, and focus goes back to the button that opened it.
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()


def test_a_refused_clipboard_still_shows_the_link(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "ivan")
    signed_in(page, ready, "ivan", password)
    upload(page, ("plan.md", "text/markdown", b"# plan\n"))
    page.evaluate(
        "() => { navigator.clipboard.writeText = () => Promise.reject(new DOMException('denied')); }"
    )
    row(page, "plan.md").get_by_role("button", name="Copy link to plan.md").click()
    dialog = page.get_by_role("dialog", name="Copy a link to plan.md")
    dialog.get_by_role("button", name="Copy link").click()
    expect(dialog.get_by_role("status")).to_contain_text("did not let the page copy it")
    expect(dialog.get_by_label("Link", exact=True)).to_have_value(re.compile("^http"))


def test_a_person_previews_an_image_a_pdf_text_audio_and_video(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "jude")
    signed_in(page, ready, "jude", password)
    text = "first line\n<script>alert(1)</script>\n"
    upload(page, ("readme.txt", "text/plain", text.encode()))
    upload(
        page,
        ("beach.png", "image/png", _png()),
        ("report.pdf", "application/pdf", _pdf()),
        ("tone.wav", "audio/wav", _wav()),
        ("clip.webm", "video/webm", b"\x1aE\xdf\xa3" + b"\x00" * 60),
        ("archive.zip", "application/zip", b"PK\x05\x06" + b"\x00" * 18),
    )
    names = ("beach.png", "report.pdf", "readme.txt", "tone.wav", "clip.webm", "archive.zip")
    kinds = {name: row(page, name).locator("th").get_attribute("data-kind") for name in names}
    assert kinds == dict(zip(names, ("image", "pdf", "text", "audio", "video", "archive"), strict=True))
    # An archive is not previewed: no button for it.
    expect(row(page, "archive.zip").get_by_role("button", name="Preview archive.zip")).to_have_count(0)

    downloads: list[Any] = []
    page.on("download", lambda download: downloads.append(download))

    opener = row(page, "beach.png").get_by_role("button", name="Preview beach.png")
    opener.click()
    dialog = page.get_by_role("dialog", name="beach.png")
    image = dialog.get_by_role("img", name="beach.png")
    expect(image).to_be_visible()
    page.wait_for_function("() => document.querySelector('#preview-body img')?.naturalWidth === 320")
    assert axe_violations(page) == []
    shot(page, "preview.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()

    row(page, "readme.txt").get_by_role("button", name="Preview readme.txt").click()
    dialog = page.get_by_role("dialog", name="readme.txt")
    # Shown as text, never as markup.
    expect(dialog.locator("pre")).to_have_text(text)
    expect(dialog.locator("script")).to_have_count(0)
    page.keyboard.press("Escape")

    row(page, "tone.wav").get_by_role("button", name="Preview tone.wav").click()
    dialog = page.get_by_role("dialog", name="tone.wav")
    expect(dialog.locator("audio[controls]")).to_have_count(1)
    page.wait_for_function("() => document.querySelector('#preview-body audio')?.readyState >= 1")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # A video plays in the dialog from S3, served as the allowlisted type (these bytes are no real video:
    # the player is what is checked, not the playing).
    row(page, "clip.webm").get_by_role("button", name="Preview clip.webm").click()
    dialog = page.get_by_role("dialog", name="clip.webm")
    video = dialog.locator("video[controls]")
    expect(video).to_have_count(1)
    assert "response-content-type=video%2Fwebm" in (video.get_attribute("src") or "")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert downloads == []  # nothing was downloaded to preview it


def _pdf_viewer(page: Page, url: str) -> Frame:
    """Chromium's PDF viewer showing `url` in the page: the frame of the <object>'s address, and in it the
    viewer's own (its toolbar and the plugin that draws the pages). Neither exists when the CSP blocks the
    frame: the <object> then stays blank."""
    for _ in range(300):
        for frame in page.main_frame.child_frames:
            viewers = [child for child in frame.child_frames if child.url.startswith("chrome-extension://")]
            if frame.url == url and viewers:
                return viewers[0]
        page.wait_for_timeout(100)
    raise AssertionError(f"no PDF viewer showed {url}; frames: {[frame.url for frame in page.frames]}")


def test_a_pdf_renders_in_the_browsers_own_viewer(page: Page, ready: dict[str, Any]) -> None:
    """Not only the dialog: Chromium's viewer reads the PDF (its one page, its name in the toolbar)."""
    password = fresh_person(ready, "jill")
    signed_in(page, ready, "jill", password)
    upload(page, ("report.pdf", "application/pdf", _pdf()))
    downloads: list[Any] = []
    page.on("download", lambda download: downloads.append(download))
    opener = row(page, "report.pdf").get_by_role("button", name="Preview report.pdf")
    opener.click()
    dialog = page.get_by_role("dialog", name="report.pdf")
    shown = dialog.locator('object[type="application/pdf"]')
    expect(shown).to_have_count(1)
    viewer = _pdf_viewer(page, shown.get_attribute("data") or "")
    expect(viewer.locator("embed#plugin")).to_have_attribute("type", "application/x-google-chrome-pdf")
    expect(viewer.locator("#title")).to_have_text("report.pdf")
    expect(viewer.locator("#pagelength")).to_have_text("1")
    expect(viewer.get_by_label("Page number")).to_have_value("1")
    assert axe_violations(page) == []
    shot(page, "preview-pdf.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()
    assert downloads == []


def test_an_admins_view_names_people_never_their_ids(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "kira")
    signed_in(page, ready, "kira", password)
    upload(page, ("kira's.txt", "text/plain", b"mine\n"))
    sub = (row(page, "kira's.txt").get_attribute("data-key") or "").split("/")[0]
    page.get_by_role("button", name="Sign out").click()

    signed_in(page, ready, ready["adminUser"], ready["adminPassword"])
    expect(page.get_by_role("columnheader", name="Owner")).to_be_hidden()  # one's own files: no owner column
    page.get_by_label("Show", exact=True).select_option("One user's files")
    page.get_by_label("User", exact=True).fill(sub)
    page.get_by_role("button", name="Search").click()
    expect(row(page, "kira's.txt")).to_have_count(1)
    owner = row(page, "kira's.txt").locator("td.owner")
    expect(page.get_by_role("columnheader", name="Owner")).to_be_visible()
    expect(owner).to_have_text("kira")
    expect(page.locator("#results")).not_to_contain_text(sub)
    assert axe_violations(page) == []


def test_an_admin_finds_a_person_by_name(page: Page, ready: dict[str, Any]) -> None:
    password = fresh_person(ready, "lena")
    boto3.client(
        "cognito-idp", endpoint_url=ready["awsEndpoint"], region_name=ready["region"]
    ).admin_update_user_attributes(
        UserPoolId=ready["userPoolId"],
        Username="lena",
        UserAttributes=[{"Name": "name", "Value": "Lena Park"}],
    )
    signed_in(page, ready, "lena", password)
    upload(page, ("lena's plan.txt", "text/plain", b"the plan\n"))
    sub = (row(page, "lena's plan.txt").get_attribute("data-key") or "").split("/")[0]
    page.get_by_role("button", name="Sign out").click()

    signed_in(page, ready, ready["adminUser"], ready["adminPassword"])
    page.get_by_label("Show", exact=True).select_option("One user's files")
    user = page.get_by_label("User", exact=True)
    user.press_sequentially("Lena")
    # The pool's people whose name starts so are offered; the person's user value is never shown.
    expect(page.locator('#people-choices option[value="Lena Park"]')).to_have_count(1)
    user.fill("Lena Park")
    with page.expect_request(lambda request: f"user={sub}" in request.url):
        page.get_by_role("button", name="Search").click()
    expect(row(page, "lena's plan.txt")).to_have_count(1)
    expect(row(page, "lena's plan.txt").locator("td.owner")).to_have_text("Lena Park")
    expect(page.locator("#files-title")).to_have_text("Files of Lena Park")
    expect(page.locator("main")).not_to_contain_text(sub)
    assert axe_violations(page) == []
