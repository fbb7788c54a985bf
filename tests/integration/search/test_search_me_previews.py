"""`GET /me/previews/{objectKey}`: an inline URL of an allowlisted type, never one a browser would run."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from search.errors import NoPreview
from search.previews import PREVIEW_MAX_BYTES, TEXT_TYPE, preview_of
from tests.integration.search.conftest import BUCKET, SearchApi
from tests.integration.search.people import ADMIN, call, me_api

__all__ = ["me_api"]


def preview(api: SearchApi, key: str, caller: Any = None) -> tuple[int, Any]:
    status, body, _ = call(api, "GET", f"/me/previews/{quote(key)}", *([caller] if caller else []))
    return status, body


@pytest.mark.parametrize(
    ("key", "kind", "content_type"),
    [
        ("USER001/cat.JPG", "image", "image/jpeg"),
        ("USER001/plan.pdf", "pdf", "application/pdf"),
        ("USER001/notes.md", "text", TEXT_TYPE),
        ("USER001/data.json", "text", TEXT_TYPE),
        ("USER001/song.mp3", "audio", "audio/mpeg"),
        ("USER001/clip.webm", "video", "video/webm"),
    ],
)
def test_an_allowlisted_file_is_shown_inline_as_its_type(
    me_api: SearchApi, key: str, kind: str, content_type: str
) -> None:
    # Stored as HTML: the preview is served as the extension's type all the same.
    me_api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"<script>alert(1)</script>", ContentType="text/html")
    me_api.put_file(key, size=25)
    status, body = preview(me_api, key)
    assert status == 200, body
    assert {name: body[name] for name in ("kind", "contentType", "size")} == {
        "kind": kind,
        "contentType": content_type,
        "size": 25,
    }
    query = parse_qs(urlsplit(body["url"]).query)
    assert query["response-content-type"] == [content_type]
    assert query["response-content-disposition"][0].startswith("inline;")
    assert query["X-Amz-Expires"] == ["3600"]
    fetched = requests.get(body["url"], timeout=10)
    assert fetched.status_code == 200
    assert fetched.headers["Content-Type"] == content_type
    assert fetched.headers["Content-Disposition"].startswith("inline;")


@pytest.mark.parametrize(
    "key", ["USER001/page.html", "USER001/logo.svg", "USER001/run.js", "USER001/feed.xml", "USER001/README"]
)
def test_a_type_a_browser_could_run_or_render_has_no_preview(me_api: SearchApi, key: str) -> None:
    me_api.put_file(key, size=10)
    status, body = preview(me_api, key)
    assert status == 415
    assert "has no preview: only images, PDF, plain text, audio and video" in body["message"]


def test_a_file_over_its_kinds_cap_is_a_413(me_api: SearchApi) -> None:
    me_api.put_file("USER001/big.txt", size=PREVIEW_MAX_BYTES["text"] + 1)
    status, body = preview(me_api, "USER001/big.txt")
    assert status == 413
    assert f"a text preview shows files up to {PREVIEW_MAX_BYTES['text']} bytes" in body["message"]
    me_api.put_file("USER001/long.mp4", size=PREVIEW_MAX_BYTES["text"] + 1)
    assert preview(me_api, "USER001/long.mp4")[0] == 200


def test_another_persons_file_is_a_404_but_an_admin_may_preview_it(me_api: SearchApi) -> None:
    me_api.put_file("USER002/photo.png", user="USER002")
    status, body = preview(me_api, "USER002/photo.png")
    assert status == 404
    assert "USER002/photo.png" in body["message"]
    assert preview(me_api, "USER002/photo.png", ADMIN)[0] == 200


def test_the_extension_is_the_names_last_one() -> None:
    assert preview_of("USER001/reports.v2/scan.PDF", 1).kind == "pdf"
    with pytest.raises(NoPreview, match=r"'photo.png.html' \(.html\) has no preview"):
        preview_of("USER001/photo.png.html", 1)
    with pytest.raises(NoPreview, match="without an extension"):
        preview_of("USER001/.png", 1)
