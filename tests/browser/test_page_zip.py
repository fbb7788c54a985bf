"""The page's ZIP writer (web/zip.js) in Chromium, its archives opened with Python's zipfile.

Store-only entries with data descriptors, UTF-8 names, names that cannot leave the folder they are unpacked
in, an entry whose bytes are not its declared size refused, and ZIP64: past 65,535 entries (the end
records), and with every record in its 64-bit form (`zip64: "always"`, the form an entry past 4 GiB or an
offset past 4 GiB takes; a real 4 GiB archive is the bench's to make, not a test's).
"""

from __future__ import annotations

import base64
import io
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from local_stack.web import WebServer
from tests.browser.helpers import TIMEOUT_MS

from playwright.sync_api import Browser, Page  # isort: skip

pytestmark = pytest.mark.xdist_group("browser")

# Makes an archive of `files` ([name, text, repeat] each: the text `repeat` times) and answers it base64.
ZIP = """async ([files, options]) => {
    const { zipStream } = await import("./zip.js");
    const encoder = new TextEncoder();
    const entries = files.map(([name, text, repeat]) => ({
        name, size: encoder.encode(text).length * repeat, date: new Date(2024, 4, 2, 10, 30, 4), repeat, text,
    }));
    const open = async (entry) => new ReadableStream({
        start(controller) {
            for (let i = 0; i < entry.repeat; i += 1) controller.enqueue(encoder.encode(entry.text));
            controller.close();
        },
    });
    const { stream, size } = zipStream(entries, open, options);
    const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
        binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    }
    return [btoa(binary), size];
}"""


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    server = WebServer(host="127.0.0.1", port=0).start()
    server.configure({}, [])
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
def zip_page(browser: Browser, served: str) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"{served}/index.html")
    yield page
    context.close()


def _archive(page: Page, files: list[list[Any]], options: dict[str, str] | None = None) -> zipfile.ZipFile:
    encoded, size = page.evaluate(ZIP, [files, options or {}])
    data = base64.b64decode(encoded)
    assert len(data) == size  # the length the download announces is the archive's
    return zipfile.ZipFile(io.BytesIO(data))


def test_an_archive_holds_each_file_by_its_path_with_its_bytes(zip_page: Page) -> None:
    archive = _archive(
        zip_page,
        [
            ["reports/q1.txt", "first\n", 3],
            ["Café ünïcode.md", "é", 2],
            ["empty", "", 0],
            ["big.bin", "x" * 4096, 300],
        ],
    )
    assert archive.testzip() is None
    assert archive.namelist() == ["reports/q1.txt", "Café ünïcode.md", "empty", "big.bin"]
    assert archive.read("reports/q1.txt") == b"first\n" * 3
    assert archive.read("Café ünïcode.md") == "é".encode() * 2
    assert archive.read("big.bin") == b"x" * 4096 * 300
    info = archive.getinfo("reports/q1.txt")
    assert info.compress_type == zipfile.ZIP_STORED
    assert info.flag_bits & 0x08  # a data descriptor
    assert info.flag_bits & 0x800  # a UTF-8 name
    assert info.date_time == (2024, 5, 2, 10, 30, 4)


def test_names_stay_inside_the_folder_they_are_unpacked_in(zip_page: Page) -> None:
    archive = _archive(zip_page, [["../../etc/passwd", "a", 1], ["/abs/./x.txt", "b", 1], ["..", "c", 1]])
    assert archive.namelist() == ["etc/passwd", "abs/x.txt", "file"]


def test_zip64_past_65535_entries(zip_page: Page) -> None:
    count = 65_536
    archive = _archive(zip_page, [[f"f{index}", "", 0] for index in range(count)])
    assert len(archive.infolist()) == count
    assert archive.namelist()[-1] == f"f{count - 1}"


def test_zip64_records_as_written_for_a_file_past_4_gib(zip_page: Page) -> None:
    archive = _archive(zip_page, [["a.txt", "hello\n", 2], ["b/c.txt", "more", 5]], {"zip64": "always"})
    assert archive.testzip() is None
    assert archive.read("a.txt") == b"hello\n" * 2
    assert archive.read("b/c.txt") == b"more" * 5
    # Python reads the 64-bit sizes and offset from each entry's ZIP64 extra field.
    assert all(info.extract_version == 45 for info in archive.infolist())


def test_an_entry_that_is_not_its_declared_size_stops_the_archive(zip_page: Page) -> None:
    with pytest.raises(Exception, match="changed while it was being zipped"):
        zip_page.evaluate(
            """async () => {
                const { zipStream } = await import("./zip.js");
                const open = async () => new Response("longer than said").body;
                const { stream } = zipStream([{ name: "x", size: 3, date: new Date() }], open);
                const reader = stream.getReader(); // (a Response would say only "Failed to fetch")
                while (!(await reader.read()).done);
            }"""
        )
