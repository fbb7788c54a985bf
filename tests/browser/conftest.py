"""The browser tests' fixtures: `make serve`'s stack once per module, one Chromium, a fresh page per test.

Playwright is imported in the fixtures, not here: without a browser the test modules skip on importing
tests/browser/helpers.py, and this file must still import.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.local_stack.conftest import ServeProcess, serving_process

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# The lines of serve's stderr a failing test reports (the indexer's and the API's warnings and errors).
STDERR_LINES = 200


@pytest.fixture(scope="module")
def serve_process() -> Iterator[tuple[ServeProcess, dict[str, Any]]]:
    with serving_process() as started:
        yield started


@pytest.fixture(scope="module")
def ready(serve_process: tuple[ServeProcess, dict[str, Any]]) -> dict[str, Any]:
    return serve_process[1]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test reports the stack behind the page: the queues' counts and the end of serve's stderr
    (an upload the page never lists is either the indexer's or the page's doing: this tells which)."""
    report = yield
    started = getattr(item, "funcargs", {}).get("serve_process")
    if report.when == "call" and report.failed and started is not None:
        serve, ready = started
        page = item.funcargs.get("page")  # type: ignore[attr-defined]
        if page is not None:
            report.sections.append(("page: uploads and list", _page_state(page)))
        report.sections.append(("serve stack: queues", _queue_counts(ready)))
        stderr = serve.stderr().splitlines()[-STDERR_LINES:]
        report.sections.append(("serve stack: stderr", "\n".join(stderr)))
    return report


def _page_state(page: Page) -> str:
    """What the page said of its uploads and its list (an upload's "Failed: ..." shows only there)."""
    lines = []
    for selector in ("#uploads", "#list-error", "#rows"):
        try:
            lines.append(f"{selector}: {page.locator(selector).inner_text(timeout=2000)!r}")
        except Exception as error:  # a report of a failure must not fail itself
            lines.append(f"{selector}: not read ({error})")
    return "\n".join(lines)


def _queue_counts(ready: dict[str, Any]) -> str:
    import boto3

    sqs = boto3.client("sqs", endpoint_url=ready["awsEndpoint"], region_name=ready["region"])
    counts = []
    for name in ("queueUrl", "dlqUrl"):
        try:
            attributes = sqs.get_queue_attributes(QueueUrl=ready[name], AttributeNames=["All"])["Attributes"]
        except Exception as error:  # a report of a failure must not fail itself
            counts.append(f"{name}: not read ({error})")
            continue
        shown = {key: value for key, value in attributes.items() if key.startswith("ApproximateNumber")}
        counts.append(f"{name}: {shown}")
    return "\n".join(counts)


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
