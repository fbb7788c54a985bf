"""The page's Content-Security-Policy as deployed: it lets the page upload to the bucket's presigned
address, whatever the bucket's name, and nowhere else.

botocore presigns a bucket whose name has dots (`fileupload.a`) in the path style
(`https://s3.<region>.amazonaws.com/fileupload.a`), because no wildcard certificate of S3 covers a host
with more dots; the CSP's `connect-src` must allow exactly that address, and stay narrow.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config

from infra.web_page import content_security_policy
from tests.infra.conftest import Synth, synthesize

pytestmark = pytest.mark.xdist_group("infra")

DOTTED_BUCKET = "fileupload.a"
REGIONS = ("us-east-1", "eu-west-1")


@pytest.fixture(scope="module")
def dotted_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """People upload to an existing bucket whose name has dots."""
    return synthesize(tmp_path_factory.mktemp("cdk-dotted"), {"existingBucketName": DOTTED_BUCKET})


def _deployed_csp(synth: Synth, region: str) -> dict[str, list[str]]:
    """The deployed CSP, directive -> sources, with the stack's region as `region`."""
    (policy,) = synth.resources("AWS::CloudFront::ResponseHeadersPolicy").values()
    csp = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"][
        "ContentSecurityPolicy"
    ]["ContentSecurityPolicy"]
    parts = csp["Fn::Join"][1] if isinstance(csp, dict) else [csp]
    assert all(isinstance(part, str) or part == {"Ref": "AWS::Region"} for part in parts), parts
    text = "".join(part if isinstance(part, str) else region for part in parts)
    return {name: sources for name, *sources in (directive.split() for directive in text.split("; "))}


def _connect_sources(synth: Synth, region: str) -> list[str]:
    """The deployed CSP's connect-src sources, with the stack's region as `region`."""
    return _deployed_csp(synth, region)["connect-src"]


def _allows(source: str, url: str) -> bool:
    """Whether a CSP host-source (`https://host[/path]`, `*.` only at the host's start) matches `url`."""
    if source == "'self'":
        return False
    wanted, address = urlsplit(source), urlsplit(url)
    if wanted.scheme != address.scheme or wanted.port != address.port or wanted.hostname is None:
        return False
    host = address.hostname or ""
    if wanted.hostname.startswith("*."):
        if not host.endswith(wanted.hostname[1:]):
            return False
    elif host != wanted.hostname:
        return False
    # CSP: no path matches any; a path ending in / matches as a prefix; any other path matches exactly.
    if not wanted.path:
        return True
    path = address.path or "/"
    return path.startswith(wanted.path) if wanted.path.endswith("/") else path == wanted.path


def _presigned_upload_url(bucket: str, region: str) -> str:
    """The address of the form the search function presigns for an upload (s3v4, as in Lambda)."""
    s3 = boto3.client(
        "s3",
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4"),
    )
    return str(s3.generate_presigned_post(Bucket=bucket, Key="person/report.pdf")["url"])


def _presigned_download_url(bucket: str, region: str, key: str = "person/reports/q1 report.pdf") -> str:
    """The address `GET /me/download/{key}` presigns, which the page fetches to make a zip."""
    s3 = boto3.client(
        "s3",
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4"),
    )
    return str(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}))


def _is_narrow(source: str) -> bool:
    """A scheme and an AWS host, never a bare scheme or a wildcard that covers more than one service."""
    if source == "'self'":
        return True
    address = urlsplit(source)
    host = address.hostname or ""
    return (
        address.scheme == "https"
        and host.endswith(".amazonaws.com")
        and host != "*.amazonaws.com"
        and host.count("*") <= 1
        and (not host.startswith("*") or host.startswith(("*.s3.", "*.execute-api.")))
    )


@pytest.mark.parametrize("region", REGIONS)
def test_the_page_may_upload_to_a_bucket_whose_name_has_dots(dotted_synth: Synth, region: str) -> None:
    url = _presigned_upload_url(DOTTED_BUCKET, region)
    assert urlsplit(url).path == f"/{DOTTED_BUCKET}"  # path style, as botocore presigns it
    sources = _connect_sources(dotted_synth, region)
    assert any(_allows(source, url) for source in sources), (url, sources)
    # ... that bucket only: neither another bucket at the same address nor a longer name.
    for other in ("fileupload.b", "fileupload.ab"):
        assert not any(_allows(source, _presigned_upload_url(other, region)) for source in sources)


@pytest.mark.parametrize("region", REGIONS)
def test_the_page_may_fetch_that_buckets_files_for_a_zip_and_no_other_buckets(
    dotted_synth: Synth, region: str
) -> None:
    url = _presigned_download_url(DOTTED_BUCKET, region)
    assert urlsplit(url).path.startswith(f"/{DOTTED_BUCKET}/")
    sources = _connect_sources(dotted_synth, region)
    assert any(_allows(source, url) for source in sources), (url, sources)
    for other in ("fileupload.b", "fileupload.ab"):
        assert not any(_allows(source, _presigned_download_url(other, region)) for source in sources)


@pytest.mark.parametrize("region", REGIONS)
def test_a_created_buckets_files_are_fetched_at_its_virtual_host(default_synth: Synth, region: str) -> None:
    url = _presigned_download_url("s3filesearch-uploadbucket-1a2b3c", region)
    assert any(_allows(source, url) for source in _connect_sources(default_synth, region))


def test_the_service_worker_is_the_pages_own() -> None:
    """The zip's service worker (web/sw.js) is allowed from the page's origin only, and nothing may frame."""
    csp = dict(directive.split(" ", 1) for directive in content_security_policy([]).split("; "))
    worker = csp.get("worker-src", csp.get("child-src", csp["script-src"]))
    assert worker == "'self'"
    assert csp["frame-ancestors"] == "'none'"


@pytest.mark.parametrize("region", REGIONS)
def test_a_created_bucket_is_reached_at_its_virtual_host(default_synth: Synth, region: str) -> None:
    # The stack names a bucket it creates without dots: botocore presigns it virtual-hosted.
    url = _presigned_upload_url("s3filesearch-uploadbucket-1a2b3c", region)
    assert any(_allows(source, url) for source in _connect_sources(default_synth, region))


@pytest.mark.parametrize("synth_name", ["default_synth", "dotted_synth", "imported_synth"])
def test_the_connect_sources_stay_narrow(synth_name: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue(synth_name)
    sources = _connect_sources(synth, "eu-west-1")
    assert "'self'" in sources
    assert [source for source in sources if not _is_narrow(source)] == []
    # Path-style S3 sources always name the bucket: `https://s3.<region>.amazonaws.com` alone would
    # let the page send files to any bucket of the region.
    for source in sources:
        if urlsplit(source).hostname in ("s3.amazonaws.com", "s3.eu-west-1.amazonaws.com"):
            assert urlsplit(source).path not in ("", "/"), source


def test_the_narrowness_check_refuses_what_it_must() -> None:
    for wide in ("*", "https:", "https://*", "https://*.amazonaws.com", "https://s3.amazonaws.com.evil"):
        assert not _is_narrow(wide), wide
    assert _allows(
        "https://s3.eu-west-1.amazonaws.com/fileupload.a", "https://s3.eu-west-1.amazonaws.com/fileupload.a"
    )
    assert not _allows(
        "https://s3.eu-west-1.amazonaws.com/fileupload.a", "https://s3.eu-west-1.amazonaws.com/fileupload.a/x"
    )
    assert _allows("https://*.s3.amazonaws.com", "https://a.b.s3.amazonaws.com/")


# What previews load from the bucket: <img> (img-src), <audio>/<video> (media-src), a PDF's <object>
# (object-src, and frame-src: Chromium's PDF viewer shows it in a frame of the PDF's address). Text is
# fetched (connect-src, above).
PREVIEW_DIRECTIVES = ("img-src", "media-src", "object-src", "frame-src")


@pytest.mark.parametrize("region", REGIONS)
def test_previews_load_the_buckets_files_and_nothing_else(dotted_synth: Synth, region: str) -> None:
    csp = _deployed_csp(dotted_synth, region)
    url = _presigned_download_url(DOTTED_BUCKET, region, "person/photos/beach.jpg")
    for directive in PREVIEW_DIRECTIVES:
        sources = csp[directive]
        assert any(_allows(source, url) for source in sources), (directive, sources)
        for other in ("fileupload.b", "fileupload.ab"):
            assert not any(_allows(source, _presigned_download_url(other, region)) for source in sources)
        # Neither the API nor Cognito, nor the bucket itself as an address (the upload form's).
        assert not any(
            _allows(source, f"https://abc123.execute-api.{region}.amazonaws.com/v1/me/files")
            for source in sources
        )
        assert not any(_allows(source, f"https://cognito-idp.{region}.amazonaws.com/") for source in sources)
        assert [
            source for source in sources if source not in ("'self'", "data:") and not _is_narrow(source)
        ] == []
    # Only images may come from the page itself (its icon) or data: URLs; media, objects and frames only
    # from S3.
    assert csp["img-src"][:2] == ["'self'", "data:"]
    for directive in ("media-src", "object-src", "frame-src"):
        assert "'self'" not in csp[directive]
        assert "data:" not in csp[directive]


@pytest.mark.parametrize("region", REGIONS)
def test_previews_of_a_created_bucket_load_at_its_virtual_host(default_synth: Synth, region: str) -> None:
    csp = _deployed_csp(default_synth, region)
    url = _presigned_download_url("s3filesearch-uploadbucket-1a2b3c", region, "person/clip.mp4")
    for directive in PREVIEW_DIRECTIVES:
        assert any(_allows(source, url) for source in csp[directive]), (directive, csp[directive])
        assert [
            source
            for source in csp[directive]
            if source not in ("'self'", "data:") and not _is_narrow(source)
        ] == []


def test_nothing_runs_what_is_previewed_and_only_the_buckets_pdfs_are_framed() -> None:
    """Previews add no script or worker source: a preview is shown, never run. The one frame source is the
    bucket's keys, as for objects: Chromium shows a PDF's <object> in a frame of the PDF's own address (its
    viewer's), which `default-src 'none'` would block, leaving the preview blank."""
    bucket = "https://*.s3.amazonaws.com"
    csp = dict(directive.split(" ", 1) for directive in content_security_policy([], [bucket]).split("; "))
    assert csp["script-src"] == "'self'"
    assert csp["default-src"] == "'none'"
    assert csp["frame-src"] == csp["object-src"] == bucket
    assert "child-src" not in csp
    assert "worker-src" not in csp
    # Nothing may frame the page itself.
    assert csp["frame-ancestors"] == "'none'"
    # Without previews' sources, media, objects and frames fall back to default-src 'none'.
    plain = dict(directive.split(" ", 1) for directive in content_security_policy([]).split("; "))
    assert "media-src" not in plain
    assert "object-src" not in plain
    assert "frame-src" not in plain
    assert plain["img-src"] == "'self' data:"


def test_the_local_page_previews_the_local_buckets_keys_only() -> None:
    from local_stack.web import WebServer

    server = WebServer(host="127.0.0.1", port=0)
    try:
        server.configure(
            {"cognitoEndpoint": "http://127.0.0.1:5000", "bucket": "uploads"}, ["http://127.0.0.1:5000"]
        )
        csp = dict(
            directive.split(" ", 1) for directive in server.headers["Content-Security-Policy"].split("; ")
        )
    finally:
        server.server_close()
    for directive in ("media-src", "object-src", "frame-src"):
        assert csp[directive] == "http://127.0.0.1:5000/uploads/"
    assert csp["img-src"] == "'self' data: http://127.0.0.1:5000/uploads/"
