"""The package's build backend: setuptools' own (`setuptools.build_meta`), building outside the source tree.

pip builds a local project where it lies, and setuptools writes its `build/` folder and its
`<name>.egg-info` beside pyproject.toml, so every `pip install ./<project>` would leave both in the
checkout. Each hook here runs setuptools' hook of the same name with both pointed into a temporary folder,
removed when the hook returns: through `DIST_EXTRA_CONFIG`, the extra configuration file setuptools reads
after setup.cfg (a value the caller set is restored afterwards). A strict editable install
(`--config-settings editable_mode=strict`) links into its build folder for good, so it builds in place.

One file serves file_search_client and file_search_admin: a backend must lie inside its project's folder,
so file_search_admin/_backend/out_of_tree.py is a link to this one.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

# The build environment's setuptools (pyproject.toml's build-system requires); it is not installed where
# the project's own tests and type checks run.
_setuptools: Any = importlib.import_module("setuptools.build_meta")


@contextlib.contextmanager
def _scratch_build_folders() -> Iterator[None]:
    """setuptools' build folder and egg-info in a temporary folder while the block runs."""
    with tempfile.TemporaryDirectory(prefix="s3-file-search-build-") as scratch:
        # "%" starts an interpolation in setuptools' configuration files: doubled, it stays as it is.
        folder = scratch.replace("%", "%%")
        config = Path(scratch, "build.cfg")
        config.write_text(
            f"[build]\nbuild_base = {Path(folder, 'build')}\n[egg_info]\negg_base = {folder}\n",
            encoding="utf-8",
        )
        given = os.environ.get("DIST_EXTRA_CONFIG")
        os.environ["DIST_EXTRA_CONFIG"] = str(config)
        try:
            yield
        finally:
            if given is None:
                del os.environ["DIST_EXTRA_CONFIG"]
            else:
                os.environ["DIST_EXTRA_CONFIG"] = given


def _strict_editable(config_settings: Mapping[str, Any] | None) -> bool:
    return str((config_settings or {}).get("editable_mode", "")).lower() == "strict"


def _outside_the_tree(name: str) -> Callable[..., Any]:
    """setuptools' hook `name`, run with its build folders outside the source tree."""
    hook = getattr(_setuptools, name)
    signature = inspect.signature(hook)

    @functools.wraps(hook)
    def run(*args: Any, **kwargs: Any) -> Any:
        if _strict_editable(signature.bind(*args, **kwargs).arguments.get("config_settings")):
            return hook(*args, **kwargs)
        with _scratch_build_folders():
            return hook(*args, **kwargs)

    return run


get_requires_for_build_wheel = _outside_the_tree("get_requires_for_build_wheel")
prepare_metadata_for_build_wheel = _outside_the_tree("prepare_metadata_for_build_wheel")
build_wheel = _outside_the_tree("build_wheel")
get_requires_for_build_sdist = _outside_the_tree("get_requires_for_build_sdist")
build_sdist = _outside_the_tree("build_sdist")
get_requires_for_build_editable = _outside_the_tree("get_requires_for_build_editable")
prepare_metadata_for_build_editable = _outside_the_tree("prepare_metadata_for_build_editable")
build_editable = _outside_the_tree("build_editable")
