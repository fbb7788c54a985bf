"""`make demo` is part of CI; this runs the same entry point and holds it to its promises."""

from __future__ import annotations

import subprocess
import sys

import pytest

from local_stack import demo
from tests.integration.local_stack.conftest import REPO_ROOT

FILE1, FILE2, FILE3 = demo.SAMPLES[:3]


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
        "4a. Files by a word of their name",
        "4b. The folder USER002/",
    ):
        assert heading in result.stdout
    assert "sub-folders: USER002/photos/, USER002/reports/" in result.stdout
    assert "GET /files/USER001_FILE003.txt -> 404" in result.stdout
    assert "identical to what was uploaded" in result.stdout
    assert "GET /files?user=USER003 -> 0 items" in result.stdout
    assert "listed 9, written 3, skipped 6" in result.stdout
    assert "missing from the index     found      1, fixed      1: USER002/notes.md" in result.stdout
    assert "entry of another version   found      1, fixed      1: USER001_FILE002.csv" in result.stdout
    assert "found {'missing': 0, 'stale': 0, 'orphaned': 0}" in result.stdout
    assert "Demo passed" in result.stdout
    # The demo's stack is gone when it ends: it names no address or password of it, only how to get one.
    assert "`make serve` keeps a stack up and prints its address" in result.stdout
    assert "webUrl" not in result.stdout
    assert " / " not in result.stdout.split("the page:", 1)[1]


def item_of(sample: demo.SampleFile, **changes: object) -> dict[str, object]:
    item: dict[str, object] = {
        "objectKey": sample.key,
        "bucketName": "fileupload.a",
        "uploadUser": sample.user,
        "fileId": sample.file_id,
        "size": sample.size,
        "uploadDate": f"{sample.day:%Y-%m-%d}T09:15:00.123Z",
    }
    return {**item, **changes}


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param([item_of(FILE2), item_of(FILE1)], id="wrong order"),
        pytest.param([item_of(FILE1)], id="missing item"),
        pytest.param([item_of(FILE1), item_of(FILE2), item_of(FILE3)], id="deleted file listed"),
        pytest.param([item_of(FILE1), item_of(FILE2, size=1)], id="wrong size"),
        pytest.param([item_of(FILE1, uploadUser="USER002"), item_of(FILE2)], id="wrong user"),
        pytest.param([item_of(FILE1), item_of(FILE2, uploadDate="2017-08-21T00:00:00.000Z")], id="wrong day"),
    ],
)
def test_the_demo_rejects_an_answer_that_differs_from_the_uploads(answer):
    with pytest.raises(demo.DemoCheckFailed):
        demo.expect_items("user and day", answer, [FILE1, FILE2], "fileupload.a")


def test_the_demo_accepts_the_right_answer():
    demo.expect_items("user and day", [item_of(FILE1), item_of(FILE2)], [FILE1, FILE2], "fileupload.a")
