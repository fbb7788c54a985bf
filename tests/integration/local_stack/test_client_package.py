"""The client as a package: the wheel `make dist` builds installs into a fresh venv on Python 3.11 and 3.13,
gives the `s3-file-search` command, and its Python API (`FileSearch`) searches the local stack."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from local_stack.stack import LocalFileSearch
from tests.integration.local_stack.conftest import REPO_ROOT

PYTHONS = ("3.11", "3.13")


def python_of(version: str) -> str | None:
    """pyenv's interpreter of `version` (the machines' Pythons), else one on PATH."""
    pyenv = shutil.which("pyenv")
    if pyenv is not None:
        found = subprocess.run([pyenv, "prefix", version], capture_output=True, text=True, check=False)
        candidate = Path(found.stdout.strip()) / "bin" / "python3"
        if found.returncode == 0 and candidate.exists():
            return str(candidate)
    return shutil.which(f"python{version}")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--wheel-dir",
            str(out),
            "./file_search_client",
        ],
        cwd=REPO_ROOT,
        check=True,
        timeout=300,
    )
    shutil.rmtree(REPO_ROOT / "file_search_client" / "build", ignore_errors=True)
    for info in (REPO_ROOT / "file_search_client").glob("*.egg-info"):
        shutil.rmtree(info)
    (built,) = out.glob("s3_file_search-*.whl")
    return built


SCRIPT = """
import json, sys
from file_search_client import FileSearch, NotFoundError, BadRequestError
files = FileSearch(sys.argv[1])
found = [item["objectKey"] for item in files.search(bucket=sys.argv[2], q="invoice", limit=1)]
try:
    files.get("USER009_missing.txt")
except NotFoundError as error:
    missing = error.status
try:
    list(files.search(bucket=sys.argv[2], q="__"))
except BadRequestError as error:
    refused = [error.status, error.message]
state = files.status()["indexState"]
print(json.dumps({"found": found, "missing": missing, "refused": refused, "state": state}))
"""


@pytest.mark.parametrize("version", PYTHONS)
def test_the_wheel_installs_and_searches(
    version: str, wheel: Path, tmp_path: Path, running_stack: LocalFileSearch
) -> None:
    python = python_of(version)
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Python {version} is needed to test the client's package")
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        timeout=600,
    )
    command = venv / "bin" / "s3-file-search"
    version_line = subprocess.run([str(command), "--version"], capture_output=True, text=True, check=True)
    assert version_line.stdout.startswith("s3-file-search 0.")
    stack = running_stack
    s3 = stack.client("s3")
    for key in ("USER001_Invoice_March.pdf", "USER002/invoice-april.pdf", "USER002/notes.txt"):
        s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x")
    stack.wait_until_indexed()
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    listed = subprocess.run(
        [
            str(command),
            "--api-url",
            stack.api_url,
            "search",
            "--bucket",
            stack.bucket,
            "--q",
            "inv",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert sorted(item["objectKey"] for item in json.loads(listed.stdout)["items"]) == [
        "USER001_Invoice_March.pdf",
        "USER002/invoice-april.pdf",
    ]
    api = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SCRIPT, stack.api_url, stack.bucket],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert api.returncode == 0, api.stderr
    answer = json.loads(api.stdout)
    assert sorted(answer["found"]) == ["USER001_Invoice_March.pdf", "USER002/invoice-april.pdf"]
    assert answer["missing"] == 404
    assert answer["refused"][0] == 400
    assert "q has no word in it" in answer["refused"][1]
    assert answer["state"] == "READY"
