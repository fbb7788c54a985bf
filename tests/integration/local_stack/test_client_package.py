"""The client and the admin tools as packages: the wheels `make dist` builds install into fresh venvs (the
client on Python 3.11 and 3.13, the admin tools on 3.13, the functions' runtime), give the `s3-file-search`
and `s3-file-search-admin` commands, and work against the local stack (the client's Python API too).
Building them, as `pip install ./<folder>` does, leaves nothing behind in the checkout."""

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

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = [pytest.mark.xdist_group("client-package"), pytest.mark.slow]

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


def build_wheel(out: Path, project: str) -> Path:
    """The wheel of `project` (a folder of the repository), as `make dist` builds it; the build must leave
    the checkout as it was."""
    before = build_leftovers()
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
            f"./{project}",
        ],
        cwd=REPO_ROOT,
        check=True,
        timeout=300,
    )
    assert build_leftovers() - before == set()
    (built,) = out.glob("*.whl")
    return built


# Where a build of the packages could write: their folders and the functions' code the admin tools carry.
BUILT_FROM = ("file_search_client", "file_search_admin", "functions/file_index")


def build_leftovers() -> set[str]:
    """Files git does not track under the packages' folders, ignored ones included (a .gitignore entry
    must not hide a build's output), but for the bytecode any import of the code writes."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", *BUILT_FROM],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return {
        line[3:]
        for line in status.splitlines()
        if line[:2] in ("??", "!!") and "__pycache__/" not in line and not line.endswith(".pyc")
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"), "file_search_client")


def fresh_venv(version: str, where: Path, wheel: Path | str) -> Path:
    """A venv of Python `version` with `wheel` (or a project folder) installed, and what it declares; its
    bin folder."""
    python = python_of(version)
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Python {version} is needed to test the packages")
        pytest.skip(f"no Python {version} here (pyenv install {version})")
    subprocess.run([python, "-m", "venv", str(where)], check=True, timeout=120)
    subprocess.run(
        [str(where / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        timeout=600,
    )
    return where / "bin"


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
pages = list(files.pages(bucket=sys.argv[2], prefix="USER002/", delimiter="/"))
folders = [folder for page in pages for folder in page.common_prefixes]
answer = {"found": found, "missing": missing, "refused": refused, "state": state, "folders": folders}
print(json.dumps(answer))
"""


@pytest.mark.parametrize("version", PYTHONS)
def test_the_wheel_installs_and_searches(
    version: str, wheel: Path, tmp_path: Path, running_stack: LocalFileSearch
) -> None:
    bin_folder = fresh_venv(version, tmp_path / "venv", wheel)
    command = bin_folder / "s3-file-search"
    version_line = subprocess.run([str(command), "--version"], capture_output=True, text=True, check=True)
    assert version_line.stdout.startswith("s3-file-search 0.")
    usage = subprocess.run([str(command), "--help"], capture_output=True, text=True, check=True).stdout
    assert "  s3-file-search search --bucket my-bucket" in usage  # its examples name the installed command
    assert "python -m" not in usage
    stack = running_stack
    s3 = stack.client("s3")
    for key in ("USER001_Invoice_March.pdf", "USER002/invoice-april.pdf", "USER002/2024/notes.txt"):
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
        [str(bin_folder / "python"), "-c", SCRIPT, stack.api_url, stack.bucket],
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
    assert answer["folders"] == ["USER002/2024/"]


def test_the_admin_wheel_installs_and_backfills(tmp_path: Path, running_stack: LocalFileSearch) -> None:
    wheel = build_wheel(tmp_path / "dist", "file_search_admin")
    bin_folder = fresh_venv("3.13", tmp_path / "venv", wheel)
    command = str(bin_folder / "s3-file-search-admin")
    version_line = subprocess.run([command, "--version"], capture_output=True, text=True, check=True)
    assert version_line.stdout.startswith("s3-file-search-admin 0.")
    usage = subprocess.run([command, "--help"], capture_output=True, text=True, check=True).stdout
    assert "  s3-file-search-admin backfill --bucket my-bucket" in usage
    assert "python -m" not in usage
    stack = running_stack
    s3 = stack.client("s3")
    with stack.notifications_disabled():  # objects the index knows nothing of
        for key in ("USER007_before.txt", "USER007/old/report.pdf"):
            s3.put_object(Bucket=stack.bucket, Key=key, Body=b"there before")
    stack.wait_until_indexed()
    env = {**os.environ, "AWS_ENDPOINT_URL": stack.aws_endpoint}
    # From the repository, where the deployment's cdk.json names the placement it writes with.
    backfill = subprocess.run(
        [command, "backfill", "--bucket", stack.bucket, "--table", stack.table_name, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        check=False,
        timeout=120,
    )
    assert backfill.returncode == 0, backfill.stderr
    assert json.loads(backfill.stdout)["written"] == 2
    reader = stack.client("dynamodb")
    for key in ("USER007_before.txt", "USER007/old/report.pdf"):
        item = reader.get_item(TableName=stack.table_name, Key={"objectKey": {"S": key}})
        assert item["Item"]["uploadUser"] == {"S": "USER007"}


@pytest.mark.parametrize(
    ("project", "version", "command"),
    [
        ("file_search_client", "3.11", "s3-file-search"),
        ("file_search_admin", "3.13", "s3-file-search-admin"),
    ],
)
def test_pip_install_of_a_folder_leaves_the_checkout_clean(
    project: str, version: str, command: str, tmp_path: Path
) -> None:
    before = build_leftovers()

    bin_folder = fresh_venv(version, tmp_path / "venv", str(REPO_ROOT / project))

    assert build_leftovers() - before == set()  # no build/, no *.egg-info
    installed = subprocess.run(
        [str(bin_folder / command), "--version"], capture_output=True, text=True, check=True
    )
    assert installed.stdout.startswith(f"{command} 0.")
    # The build backend stays out of the installed package.
    packages = Path(
        subprocess.run(
            [str(bin_folder / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    assert (packages / project / "cli.py").is_file()
    assert not (packages / project / "_backend").exists()


def test_both_packages_build_with_the_same_backend() -> None:
    # A build backend must lie inside its project: the admin package's is a link to the client's file.
    client = REPO_ROOT / "file_search_client" / "_backend" / "out_of_tree.py"
    admin = REPO_ROOT / "file_search_admin" / "_backend" / "out_of_tree.py"
    assert admin.is_symlink()
    assert admin.resolve() == client.resolve()
