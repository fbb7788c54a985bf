"""The browser tests' fixtures: `make serve`'s stack once per module, one Chromium, a fresh page per test.

Playwright is imported in the fixtures, not here: without a browser the test modules skip on importing
tests/browser/helpers.py, and this file must still import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.local_stack.conftest import serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


@pytest.fixture(scope="module")
def ready() -> Iterator[dict[str, Any]]:
    with serving() as started:
        yield started


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    from local_stack.browser import launch

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    from tests.browser.helpers import TIMEOUT_MS

    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    yield page
    context.close()
