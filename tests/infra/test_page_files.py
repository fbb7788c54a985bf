"""The page's files as the stack deploys them: every file of `web/` in the site's asset, each stored with
the content type of its name.

CDK's BucketDeployment copies its sources with `aws s3 sync`, which sets each object's Content-Type from
the file's name (Python's `mimetypes`) unless the deployment names one type for every file; CloudFront
serves that type. A browser runs an ES module only when it comes with a JavaScript type (the page is also
served with `X-Content-Type-Options: nosniff`).
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

import pytest

from infra.web_page import CONFIG_FILE, WEB_ROOT
from tests.infra.conftest import Synth

pytestmark = pytest.mark.xdist_group("infra")

# The HTML standard's JavaScript MIME types that `mimetypes` may give for `.js`.
JAVASCRIPT_TYPES = {"text/javascript", "application/javascript", "application/x-javascript"}


def _deployment(synth: Synth) -> dict[str, Any]:
    (deployment,) = synth.resources("Custom::CDKBucketDeployment").values()
    properties: dict[str, Any] = deployment["Properties"]
    return properties


def _source_folders(synth: Synth) -> list[Path]:
    """The deployment's sources as synthesized: one folder in the cloud assembly per zipped asset."""
    keys = _deployment(synth)["SourceObjectKeys"]
    return [synth.outdir / f"asset.{key.removesuffix('.zip')}" for key in keys]


def test_every_file_of_the_page_is_deployed(default_synth: Synth) -> None:
    page, configuration = _source_folders(default_synth)
    deployed = {path.name for path in page.iterdir()}
    assert deployed == {path.name for path in WEB_ROOT.iterdir()} - {CONFIG_FILE}
    assert {name for name in deployed if name.endswith(".js")} >= {"app.js", "session.js", "list.js"}
    # The configuration is the stack's own, written at deploy, never a file of web/.
    assert {path.name for path in configuration.iterdir()} == {CONFIG_FILE}


def test_each_file_keeps_the_content_type_of_its_name(default_synth: Synth) -> None:
    properties = _deployment(default_synth)
    # No one type for every file (contentType / SystemMetadata): `aws s3 sync` types each by its name.
    assert "content-type" not in {key.lower() for key in properties.get("SystemMetadata", {})}
    (page, _) = _source_folders(default_synth)
    types = {path.name: mimetypes.guess_type(path.name)[0] for path in page.iterdir()}
    assert {name for name, kind in types.items() if kind in JAVASCRIPT_TYPES} == {
        path.name for path in WEB_ROOT.glob("*.js")
    }
    assert types["index.html"] == "text/html"
    assert types["style.css"] == "text/css"
