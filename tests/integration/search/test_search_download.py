"""GET /download/{objectKey}: a redirect to a presigned GET of the indexed object, with a short expiry."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from search import composition
from tests.integration.search.conftest import BUCKET, SearchApi


def test_download_redirects_to_a_presigned_url_that_fetches_the_object(api: SearchApi) -> None:
    key = "USER001/report 2017+final.txt"
    api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"the report")
    api.put_file(key)

    response = api.get(f"/download/{quote(key)}")

    assert response.status == 302
    location = response.headers["Location"]
    query = parse_qs(urlsplit(location).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["300"]
    assert response.headers["Cache-Control"] == "no-store"
    # moto answers presigned URLs sent with `requests` inside mock_aws.
    fetched = requests.get(location, timeout=10)
    assert fetched.status_code == 200
    assert fetched.content == b"the report"


def test_download_presigns_the_keys_current_version_not_the_indexed_one(api: SearchApi) -> None:
    """So that a delete ends it in a versioned bucket too (test_search_versioned_links.py)."""
    api.put_file("USER001_v.txt", versionId="3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY")
    location = api.get("/download/USER001_v.txt").headers["Location"]
    assert "versionId" not in parse_qs(urlsplit(location).query)


def test_download_expiry_comes_from_the_environment(api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOWNLOAD_URL_EXPIRY_SECONDS", "60")
    composition.file_search.cache_clear()
    try:
        api.put_file("USER001_a.txt")
        location = api.get("/download/USER001_a.txt").headers["Location"]
    finally:
        composition.file_search.cache_clear()
    assert parse_qs(urlsplit(location).query)["X-Amz-Expires"] == ["60"]


def test_download_of_an_unindexed_or_deleted_file_is_404(api: SearchApi) -> None:
    api.put_tombstone("USER001_gone.txt")
    for key in ("USER001_never.txt", "USER001_gone.txt"):
        response = api.get(f"/download/{key}")
        assert response.status == 404
        assert key in response.json["message"]
        assert "Location" not in response.headers


def test_download_is_limited_to_the_configured_bucket(api: SearchApi) -> None:
    api.put_file("USER001_elsewhere.txt", bucket="fileupload.b")
    assert api.get("/files/USER001_elsewhere.txt").status == 200
    response = api.get("/download/USER001_elsewhere.txt")
    assert response.status == 404
    assert "Location" not in response.headers


def test_a_missing_variable_fails_with_its_name_and_no_detail_to_the_client(
    api: SearchApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("CURSOR_SECRET_ARN")
    composition.file_search.cache_clear()
    try:
        response = api.get("/files?user=U")
    finally:
        composition.file_search.cache_clear()
    assert response.status == 500
    assert response.json == {"message": "internal error"}
    logged = [str(record.exc_info[1]) for record in caplog.records if record.exc_info]
    assert "environment variable CURSOR_SECRET_ARN is required" in logged


@pytest.mark.parametrize("stored_type", ["text/html", "image/svg+xml", "application/xhtml+xml", "text/plain"])
def test_a_download_is_an_attachment_that_no_browser_renders(api: SearchApi, stored_type: str) -> None:
    key = "USER001/page <1>.html"
    api.s3.put_object(Bucket=BUCKET, Key=key, Body=b"<script>alert(1)</script>", ContentType=stored_type)
    api.put_file(key)

    location = api.get(f"/download/{quote(key)}").headers["Location"]

    query = parse_qs(urlsplit(location).query)
    assert query["response-content-disposition"] == [
        "attachment; filename=\"page _1_.html\"; filename*=UTF-8''page%20%3C1%3E.html"
    ]
    assert query["response-content-type"] == ["application/octet-stream"]
    fetched = requests.get(location, timeout=10)
    assert fetched.status_code == 200
    assert fetched.headers["Content-Type"] == "application/octet-stream"
    assert fetched.headers["Content-Disposition"].startswith("attachment;")
