"""Measure 3: cold start, as the import time of each handler module in a fresh interpreter.

A Lambda cold start pays for importing the handler module before the first event. Each handler is
compared with its libraries' floor: the same interpreter importing only the third-party modules that
importing the handler loads (boto3, Powertools, pydantic, ...; every loaded module whose file lies in
site-packages, in the order the handler's import loaded them), none of the project's. What the handler
costs above that floor is the project's own modules: their code, the classes, routes and schemas they
build at import, and the standard-library modules only they import. Every Python Lambda that talks to
AWS imports boto3, so `import boto3` alone is shown too. Each figure is the median of several fresh
interpreters, run interleaved so a busy moment of the machine hits all alike.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Sequence

from bench.report import Row, progress

HANDLER_MODULES = ("indexer.handler", "search.handler")
BOTO3 = "boto3"

# Imports the modules named on the command line, in order, and prints the seconds it took.
_PROBE = (
    "import importlib, sys, time\n"
    "start = time.perf_counter()\n"
    "for name in sys.argv[1:]:\n"
    "    importlib.import_module(name)\n"
    "print(time.perf_counter() - start)\n"
)
# Imports a handler and prints, one a line, the library modules that import loaded, in loading order.
_LIBRARIES = (
    "import importlib, site, sys\n"
    "loaded = set(sys.modules)\n"
    "importlib.import_module(sys.argv[1])\n"
    "roots = tuple(site.getsitepackages())\n"
    "for name, module in list(sys.modules.items()):\n"
    "    path = getattr(module, '__file__', None) or ''\n"
    "    if name not in loaded and path.startswith(roots):\n"
    "        print(name)\n"
)


def _environment() -> dict[str, str]:
    # Bytecode is written (no PYTHONDONTWRITEBYTECODE) and the path is the venv's own.
    return {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}


def _run(code: str, arguments: Sequence[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        capture_output=True,
        text=True,
        env=_environment(),
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"importing {' '.join(arguments[:3])} failed:\n{result.stderr.strip()}")
    return result.stdout


def library_modules(handler: str) -> tuple[str, ...]:
    """The third-party modules importing `handler` loads, in the order it loaded them."""
    return tuple(_run(_LIBRARIES, [handler]).split())


def import_seconds(modules: Sequence[str]) -> float:
    """Seconds to import `modules` in a new interpreter, excluding the interpreter's own start-up."""
    return float(_run(_PROBE, modules).strip().splitlines()[-1])


def median_import_seconds(imports: dict[str, Sequence[str]], runs: int) -> dict[str, float]:
    """The median seconds of each named import (a list of modules) over `runs` fresh interpreters."""
    samples: dict[str, list[float]] = {name: [] for name in imports}
    if runs > 1:  # one unmeasured run compiles any stale bytecode; a smoke run skips it
        for modules in imports.values():
            import_seconds(modules)
    for _ in range(runs):
        for name, modules in imports.items():
            samples[name].append(import_seconds(modules))
    return {name: statistics.median(values) for name, values in samples.items()}


def run(*, runs: int) -> list[Row]:
    progress(
        f"cold start: importing {', '.join(HANDLER_MODULES)}, their libraries alone and boto3, "
        f"{runs} fresh interpreters each"
    )
    imports: dict[str, Sequence[str]] = {BOTO3: (BOTO3,)}
    for handler in HANDLER_MODULES:
        imports[handler] = (handler,)
        imports[f"{handler} libraries"] = library_modules(handler)
    medians_ms = {name: seconds * 1000 for name, seconds in median_import_seconds(imports, runs).items()}
    boto3_ms = medians_ms[BOTO3]
    rows = []
    for handler in HANDLER_MODULES:
        ours_ms, floor_ms = medians_ms[handler], medians_ms[f"{handler} libraries"]
        rows.append(
            Row(
                measure=f"3. cold start: import {handler}",
                unit="ms",
                ours=ours_ms,
                comparison=floor_ms,
                compared_with=f"its libraries alone, {len(imports[f'{handler} libraries'])} modules",
                ratio=ours_ms / floor_ms if floor_ms else None,
                note=(
                    f"ours ÷ libraries (floor 1×); import boto3 alone: {boto3_ms:,.0f} ms, ours ÷ boto3 "
                    f"{ours_ms / boto3_ms:.2f}×, libraries ÷ boto3 {floor_ms / boto3_ms:.2f}×; "
                    f"median of {runs} fresh interpreters"
                ),
            )
        )
    return rows
