"""Measure 18: the page on the local stack, in headless Chromium, as a person uses it.

Five figures, each beside what it cannot beat: from the sign-in click to the first results on screen; from
an upload finished (its progress bar full) to the file listed; from the click on a folder of 10,000 files
to its first page shown; and from the click on a 1,000-file folder's "Download" to the first byte of the
zip's download stream (the first chunk the page hands the service worker, which the worker answers the
download with at once: the page's `zip:first-byte` performance mark, against the click's time on the
page's own clock). Each against one `GET /me/files` round trip made by the page itself (the floor: nothing
shows before one list answers). And the bytes the first load transfers (the page, its script modules, its
styles, its configuration) against the 100 KB budget. Median and p95 over `runs` runs; each run is a fresh
browser context (nothing cached, nobody signed in).

The two folders are seeded fast: their objects are put straight into the local stack's moto S3 (in this
process), whose events the stack's own indexer indexes as any upload's; then the runs start. A quick run
(at most `QUICK_RUNS` runs, the smoke test's) seeds smaller folders, and the rows say how many files.

The stack is `make serve`'s: the table in DynamoDB Local (moto's where there is no Java), moto for the
rest, in this process. What this does not model: CloudFront's and the regions' network round trips (the
local stack answers on loopback), and Cognito's own latency (moto's answers in a millisecond or two).
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
# The person's two seeded folders: one of many files to open, one of small files to zip.
BIG_FOLDER, BIG_FOLDER_FILES = "many", 10_000
ZIP_FOLDER, ZIP_FOLDER_FILES = "to zip", 1_000
SMALL_FILE = b"a small file of the zip\n" * 8
QUICK_RUNS = 2
QUICK_FOLDER_FILES = (120, 20)
# Records the next click's time on the page's clock (capturing, before the page's own handler runs; once:
# the page's own click on the worker's download link comes later).
MARK_CLICKS = (
    "() => document.addEventListener('click', () => { window.clickedAt = performance.now(); },"
    " {capture: true, once: true})"
)
FIRST_BYTE_AFTER_CLICK = (
    "() => { const [mark] = performance.getEntriesByName('zip:first-byte');"
    " return mark ? mark.startTime - window.clickedAt : null; }"
)


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
    from local_stack.stack import AUTO, LocalFileSearch
    from local_stack.web import post_form

    reason = missing_browser()
    if reason is not None:
        progress(f"page: skipped, {reason}")
        return Measured([Row("18. page", "ms", None, None, "", note=f"skipped: {reason}")])
    from playwright.sync_api import sync_playwright

    big_files, zip_files = QUICK_FOLDER_FILES if runs <= QUICK_RUNS else (BIG_FOLDER_FILES, ZIP_FOLDER_FILES)
    sign_in_ms: list[float] = []
    listed_ms: list[float] = []
    folder_ms: list[float] = []
    first_byte_ms: list[float] = []
    floor_ms: list[float] = []
    first_load_bytes: list[float] = []
    with (
        # serve's table engine: DynamoDB Local where there is Java (moto's Query reads its whole table,
        # so on moto a folder's page would cost the 11,000 seeded files' time, which DynamoDB never does).
        LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING", table_engine=AUTO) as stack,
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
        user = form["key"].split("/")[0]
        progress(f"page: seeding folders of {big_files:,} and {zip_files:,} files, indexed by the stack")
        started = time.perf_counter()
        _seed_folders(stack.bucket, user, big_files, zip_files)
        stack.wait_until_indexed(timeout=60 + (big_files + zip_files) / 10)
        progress(f"page: seeded and indexed in {time.perf_counter() - started:.0f} s")
        browser = launch(playwright)
        progress(f"page: {runs} runs of sign-in, upload, folder, zip and first load in headless Chromium")
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
            _wait_for_rows(page)
            signed_in = (time.perf_counter() - started) * 1000
            name = f"upload {run_index:03d}.txt"
            page.get_by_label("Upload files").set_input_files(
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
            opened = _open_folder_ms(page, BIG_FOLDER)
            first_byte = _zip_first_byte_ms(page, ZIP_FOLDER)
            round_trip = _list_round_trip_ms(page)
            context.close()
            if run_index == 0:
                continue
            sign_in_ms.append(signed_in)
            listed_ms.append(listed)
            folder_ms.append(opened)
            first_byte_ms.append(first_byte)
            floor_ms.append(round_trip)
            first_load_bytes.append(float(loaded))
            if run_index % 5 == 0:
                progress(f"page: {run_index}/{runs}")
        browser.close()
    engine = "moto (no Java)" if stack.table_engine_note else "DynamoDB Local"
    note = f"{runs} runs, each a fresh browser context; local stack, table on {engine}; headless Chromium"
    rows = [
        *_rows("sign-in click to first results", sign_in_ms, floor_ms, note),
        *_rows("upload finished to file listed", listed_ms, floor_ms, note + "; includes indexing"),
        *_rows(
            f"folder of {big_files:,} files: click to first page shown",
            folder_ms,
            floor_ms,
            note + "; the folder's first page by name (prefix, delimiter)",
        ),
        *_rows(
            f"zip of {zip_files:,} files: click to first byte",
            first_byte_ms,
            floor_ms,
            note + "; the folder's list, the service worker, the first chunk it is handed",
        ),
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


def _wait_for_rows(page: Any) -> None:
    """The first rows on screen; else what the page says instead."""
    try:
        page.locator("#rows tr").first.wait_for()
    except Exception as error:
        said = page.evaluate(
            "() => [...document.querySelectorAll('.error, #notice, #empty')].map(e => e.textContent)"
        )
        raise RuntimeError(f"no rows after signing in; the page says {said}") from error


def _seed_folders(bucket: str, user: str, big_files: int, zip_files: int) -> None:
    """The person's two folders, put into the stack's moto S3 in this process; their events index them."""
    from moto.backends import get_backend
    from moto.core import DEFAULT_ACCOUNT_ID

    backend = get_backend("s3")[DEFAULT_ACCOUNT_ID]["aws"]
    for index in range(big_files):
        backend.put_object(bucket, f"{user}/{BIG_FOLDER}/file {index:05d}.txt", b"x" * (1 + index % 997))
    for index in range(zip_files):
        backend.put_object(bucket, f"{user}/{ZIP_FOLDER}/part {index:04d}.txt", SMALL_FILE)


def _open_folder_ms(page: Any, folder: str) -> float:
    """From the click on the folder's row to the first file of its first page on screen."""
    started = time.perf_counter()
    page.get_by_role("button", name=f"Open folder {folder}", exact=True).click()
    page.locator("#rows tr th", has_text="file 00000.txt").wait_for()
    milliseconds = (time.perf_counter() - started) * 1000
    page.get_by_role("button", name="Up", exact=True).click()
    page.get_by_role("button", name=f"Open folder {ZIP_FOLDER}", exact=True).wait_for()
    return milliseconds


def _zip_first_byte_ms(page: Any, folder: str) -> float:
    """From the click on the folder's Download to the first byte of the zip's download stream."""
    page.evaluate(MARK_CLICKS)
    with page.expect_download() as started:
        page.get_by_role("button", name=f"Download folder {folder} as a zip", exact=True).click()
    page.wait_for_function(FIRST_BYTE_AFTER_CLICK)
    milliseconds: float = page.evaluate(FIRST_BYTE_AFTER_CLICK)
    # The rest of the zip is not measured: cancelled, so that nothing of it is in flight in the next run.
    started.value.cancel()
    page.get_by_text("The zip could not be made").wait_for()
    return milliseconds


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
