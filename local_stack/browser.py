"""Debian's Chromium, driven by Playwright, for the page's browser tests and its benchmark.

Playwright never downloads a browser here: it launches the executable at `CHROMIUM` (default
/usr/bin/chromium, Debian's package, which `make setup` installs when it can). The flags keep a headless
Chromium off the network it has no business with (a closed network refuses those connections noisily).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container has no user namespace for the sandbox
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> Path:
    return Path(os.environ.get("CHROMIUM") or DEFAULT_CHROMIUM)


def missing_browser() -> str | None:
    """Why the browser cannot run here, in one line; None when it can."""
    path = chromium_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        return f"no Chromium at {path} (apt-get install chromium, or set CHROMIUM=/path/to/chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (make setup installs it)"
    return None


def launch(playwright: Any) -> Any:
    """A headless Chromium browser from `sync_playwright()`'s object."""
    return playwright.chromium.launch(executable_path=str(chromium_path()), args=list(CHROMIUM_ARGS))
