"""In a versioned bucket a delete ends every URL the API gave for the file: the share link, the download and
the preview are signed for the key's current version, so the delete marker makes S3 refuse them at once
(signed for the indexed `VersionId`, they served the deleted version until they expired).

A module of its own: it turns versioning on in its bucket, which no other test's bucket has.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from search import composition
from tests.integration.search.conftest import BUCKET, SearchApi
from tests.integration.search.people import ALICE, call, me_api

__all__ = ["me_api"]

KEY = "USER001/minutes.txt"


@pytest.fixture
def versioned(me_api: SearchApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[SearchApi]:
    monkeypatch.setenv("SHARE_LINK_MAX_SECONDS", "3600")
    composition.file_search.cache_clear()
    me_api.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    version = me_api.s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"the minutes")["VersionId"]
    me_api.put_file(KEY, versionId=version)
    yield me_api
    composition.file_search.cache_clear()


def urls(api: SearchApi) -> dict[str, str]:
    """The share link, the preview URL and the download redirect of KEY, as its owner gets them."""
    status, link, _ = call(api, "GET", f"/me/links/{quote(KEY)}?expiresIn=600", ALICE)
    assert status == 200, link
    status, preview, _ = call(api, "GET", f"/me/previews/{quote(KEY)}", ALICE)
    assert status == 200, preview
    download = api.get(f"/download/{quote(KEY)}")
    assert download.status == 302, download.body
    return {"link": link["url"], "preview": preview["url"], "download": download.headers["Location"]}


def test_a_delete_ends_the_link_the_download_and_the_preview(versioned: SearchApi) -> None:
    given = urls(versioned)
    for name, url in given.items():
        assert "versionId" not in parse_qs(urlsplit(url).query), name
        fetched = requests.get(url, timeout=10)
        assert (name, fetched.status_code, fetched.content) == (name, 200, b"the minutes")

    versioned.s3.delete_object(Bucket=BUCKET, Key=KEY)  # a delete marker; the version stays

    assert len(versioned.s3.list_object_versions(Bucket=BUCKET, Prefix=KEY)["Versions"]) == 1
    for name, url in given.items():
        # S3 answers a key whose current version is a delete marker with 404 (403 to a signer that may
        # not list the bucket, as the search function's role may not).
        assert (name, requests.get(url, timeout=10).status_code in (403, 404)) == (name, True)
