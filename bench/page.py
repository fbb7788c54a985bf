"""Measure 18: the page on the local stack, in headless Chromium, as a person uses it.

Three figures, each beside what it cannot beat: from the sign-in click to the first results on screen, and
from an upload finished (its progress bar full) to the file listed, each against one `GET /me/files`
round trip made by the page itself (the floor: nothing shows before one list answers); and the bytes the
first load transfers (the page, its script modules, its styles, its configuration) against the 100 KB budget.
Median and p95 over `runs` runs; each run is a fresh browser context (nothing cached, nobody signed in).

What this does not model: CloudFront's and the regions' network round trips (the local stack answers on
loopback), and Cognito's own latency (moto's answers in a millisecond or two).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.freshness import percentile
from bench.report import Measured, Row, progress

FIRST_LOAD_BUDGET_BYTES = 100 * 1024
TIMEOUT_MS = 30_000
# What the page's first load transferred: the document and every resource it fetched.
TRANSFERRED_BYTES = (
    "() => performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
    ".reduce((sum, entry) => sum + entry.transferSize, 0)"
)
# Already there when people sign in, so that the first results are a real page of files.
EXISTING_FILES = 25


def _list_round_trip_ms(page: Any) -> float:
    """One GET /me/files made by the page with its own token: the floor of anything the page shows."""
    milliseconds: float = page.evaluate(
        """async () => {
            const session = JSON.parse(sessionStorage.getItem('s3-file-search.session'));
            const config = await (await fetch('config.json')).json();
            const started = performance.now();
            const response = await fetch(config.apiUrl.replace(/\\/+$/, '') + '/me/files?limit=50',
                {headers: {Authorization: session.idToken}});
            await response.json();
            return performance.now() - started;
        }"""
    )
    return milliseconds


def _rows(label: str, samples: list[float], floor: list[float], note: str) -> list[Row]:
    floor_ms = statistics.median(floor)
    return [
        Row(
            f"18. page: {label} p{name}",
            "ms",
            percentile(samples, fraction),
            floor_ms,
            "one GET /me/files by the page",
            percentile(samples, fraction) / floor_ms,
            note,
        )
        for name, fraction in (("50", 0.5), ("95", 0.95))
    ]


def run(*, runs: int) -> Measured:
    from local_stack.browser import launch, missing_browser
    from local_stack.stack import LocalFileSearch
    from local_stack.web import post_form

    reason = missing_browser()
    if reason is not None:
        progress(f"page: skipped, {reason}")
        return Measured([Row("18. page", "ms", None, None, "", note=f"skipped: {reason}")])
    from playwright.sync_api import sync_playwright

    sign_in_ms: list[float] = []
    listed_ms: list[float] = []
    floor_ms: list[float] = []
    first_load_bytes: list[float] = []
    with (
        LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack,
        sync_playwright() as playwright,
    ):
        ready = stack.describe()
        cognito = stack.client("cognito-idp")
        token = cognito.initiate_auth(
            AuthFlow="USER_PASSWORD_AUTH",
            ClientId=ready["userPoolClientId"],
            AuthParameters={"USERNAME": ready["demoUser"], "PASSWORD": ready["demoPassword"]},
        )["AuthenticationResult"]["IdToken"]
        for index in range(EXISTING_FILES):
            form = _upload_form(stack.api_url, token, f"existing {index:03d}.txt")
            post_form(form["url"], form["fields"], b"existing file")
        stack.wait_until_indexed(timeout=60)
        browser = launch(playwright)
        progress(f"page: {runs} runs of sign-in, upload and first load in headless Chromium")
        for run_index in range(runs + 1):  # the first run warms the handlers up: not a sample
            context = browser.new_context()
            context.set_default_timeout(TIMEOUT_MS)
            page = context.new_page()
            page.goto(ready["webUrl"])
            page.get_by_role("heading", name="Sign in").wait_for()
            page.wait_for_load_state("networkidle")
            loaded = page.evaluate(TRANSFERRED_BYTES)
            page.get_by_label("User name", exact=True).fill(ready["demoUser"])
            page.get_by_label("Password", exact=True).fill(ready["demoPassword"])
            started = time.perf_counter()
            page.get_by_role("button", name="Sign in").click()
            page.locator("#rows tr").first.wait_for()
            signed_in = (time.perf_counter() - started) * 1000
            name = f"upload {run_index:03d}.txt"
            page.get_by_label("Choose files to upload, or drop them here").set_input_files(
                [{"name": name, "mimeType": "text/plain", "buffer": b"measured upload\n" * 64}]
            )
            page.wait_for_function(
                "name => [...document.querySelectorAll('progress')].some("
                "bar => bar.getAttribute('aria-label') === 'Upload of ' + name && bar.value === 100)",
                arg=name,
                polling="raf",
            )
            uploaded = time.perf_counter()
            page.locator("#rows tr th", has_text=name).wait_for()
            listed = (time.perf_counter() - uploaded) * 1000
            round_trip = _list_round_trip_ms(page)
            context.close()
            if run_index == 0:
                continue
            sign_in_ms.append(signed_in)
            listed_ms.append(listed)
            floor_ms.append(round_trip)
            first_load_bytes.append(float(loaded))
            if run_index % 5 == 0:
                progress(f"page: {run_index}/{runs}")
        browser.close()
    note = f"{runs} runs, each a fresh browser context; local stack on moto, headless Chromium"
    rows = [
        *_rows("sign-in click to first results", sign_in_ms, floor_ms, note),
        *_rows("upload finished to file listed", listed_ms, floor_ms, note + "; includes indexing"),
        Row(
            "18. page: first load transferred",
            "KB",
            statistics.median(first_load_bytes) / 1024,
            FIRST_LOAD_BUDGET_BYTES / 1024,
            "the 100 KB budget",
            FIRST_LOAD_BUDGET_BYTES / statistics.median(first_load_bytes),
            "HTML, script modules, styles and config.json; no library, no build step",
        ),
    ]
    return Measured(rows)


def _upload_form(api_url: str, token: str, name: str) -> dict[str, Any]:
    import json
    import urllib.request

    body = json.dumps({"name": name, "contentType": "text/plain", "size": 13}).encode()
    request = urllib.request.Request(  # noqa: S310 (the local stack's API)
        f"{api_url}/me/uploads",
        data=body,
        method="POST",
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        form: dict[str, Any] = json.loads(response.read())
        return form
