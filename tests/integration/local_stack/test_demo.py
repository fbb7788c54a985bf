"""`make demo` is part of CI; this runs the same entry point and holds it to its promises."""

from __future__ import annotations

import subprocess
import sys

from tests.integration.local_stack.conftest import REPO_ROOT


def test_the_demo_verifies_the_four_searches_and_exits_0():
    result = subprocess.run(
        [sys.executable, "-m", "local_stack.demo"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    for heading in (
        "1. A file by its exact key",
        "2. USER001's files uploaded on 2017-08-20",
        "3. USER001's files in upload order",
        "4. The files of bucket fileupload.a, largest first",
    ):
        assert heading in result.stdout
    assert "GET /files/USER001_FILE003.txt -> 404" in result.stdout
    assert "identical to what was uploaded" in result.stdout
    assert "Demo passed" in result.stdout
