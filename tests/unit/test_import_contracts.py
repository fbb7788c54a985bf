"""The import contracts `make lint` checks (pyproject.toml's `[tool.importlinter]`): a wrong import fails
them, naming the contract it breaks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'functions'}{os.pathsep}{root}"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The functions and the contracts, copied where a test may break them."""
    shutil.copytree(ROOT / "functions", tmp_path / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def add_import(module: Path, line: str) -> None:
    text = module.read_text()
    at = text.index("from __future__ import annotations\n") + len("from __future__ import annotations\n")
    module.write_text(f"{text[:at]}\n{line}\n{text[at:]}")


def test_the_code_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("file_index/rules/schema.py", "import boto3", "file_index.rules is pure"),
        (
            "file_index/read/reader.py",
            "from file_index.write import writer",
            "file_index: the write and read",
        ),
        (
            "file_index/rules/shards.py",
            "from file_index.store import unprocessed",
            "file_index: the write and read",
        ),
        ("file_index/rules/cost.py", "from search import errors", "Each function is its own"),
        ("search/errors.py", "from indexer import events", "Each function is its own"),
        ("file_index/rules/shards.py", "from file_index.rules import cost", "No import cycle"),
    ],
)
def test_a_wrong_import_breaks_the_contract_it_names(
    copy: Path, module: str, line: str, contract: str
) -> None:
    add_import(copy / "functions" / module, line)
    result = lint_imports(copy)
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, result.stdout
