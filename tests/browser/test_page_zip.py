"""The page's ZIP writer (web/zip.js) in Chromium, its archives opened with Python's zipfile.

Store-only entries with data descriptors, UTF-8 names, names that cannot leave the folder they are unpacked
in (on Windows either: "\\" splits, drives go) and are unique within the archive, made on Unix (so Debian's
`unzip` reads UTF-8 names as UTF-8: unpacked with it when it is installed), an entry whose bytes are not its
declared size refused, and ZIP64: past 65,535 entries (the end records), and with every record in its 64-bit
form (`zip64: "always"`, the form an entry past 4 GiB or an offset past 4 GiB takes; a real 4 GiB archive is
the bench's to make, not a test's).
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
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

# safeName's answer for each of `names`.
SAFE_NAMES = """async (names) => {
    const { safeName } = await import("./zip.js");
    return names.map(safeName);
}"""
# The names zipLayout gives the entries of each list of `lists` (each list one archive).
PLACEMENT_NAMES = """async (lists) => {
    const { zipLayout } = await import("./zip.js");
    const paths = (names) => zipLayout(names.map((name) => ({ name, size: 0 }))).planned.map((e) => e.path);
    return lists.map(paths);
}"""
# Keys whoever may upload to the bucket can write, each as an archive names it.
HOSTILE_NAMES = {
    "..\\..\\x.bat": "x.bat",
    "a\\b\\c.txt": "a/b/c.txt",
    "C:/x.txt": "x.txt",
    "C:\\x.txt": "x.txt",
    "C:x.txt": "x.txt",  # relative to drive C's current folder, on Windows
    "c:\\Windows\\..\\..\\x.ini": "Windows/x.ini",
    "\\\\server\\share\\x.txt": "server/share/x.txt",  # a UNC path
    "../C:/x.txt": "x.txt",  # a drive that comes first once ".." is gone
    ".. /x.txt": "x.txt",  # Windows trims a segment's trailing spaces: ".."
    "a//b": "a/b",
    "a/./b/../c": "a/b/c",
    "会議資料.pptx": "会議資料.pptx",
}


def _inside(name: str) -> bool:
    """Whether an archive's `name` unpacks inside the folder it is unpacked in, on Unix and on Windows."""
    parts = name.split("/")
    return (
        "\\" not in name
        and all(parts)
        and not any(part.strip(". ") == "" for part in parts)
        and not any(len(part) >= 2 and part[1] == ":" and part[0].isalpha() for part in parts)
    )


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


def test_a_name_never_leaves_its_folder_on_windows_either(zip_page: Page) -> None:
    names = zip_page.evaluate(SAFE_NAMES, list(HOSTILE_NAMES))
    assert dict(zip(HOSTILE_NAMES, names, strict=True)) == HOSTILE_NAMES
    assert all(_inside(name) for name in names)


def test_names_are_unique_within_an_archive_and_keep_their_extension(zip_page: Page) -> None:
    cafe, cafe_decomposed = "caf\u00e9.txt", "cafe\u0301.txt"  # one name on macOS
    cases = [
        (["a//b", "a/b"], ["a/b", "a/b (2)"]),
        (["x.txt", "x.txt", "x.txt"], ["x.txt", "x (2).txt", "x (3).txt"]),
        # A key that is already "x (2).txt" keeps its name: the duplicate goes past it.
        (["x.txt", "x.txt", "x (2).txt"], ["x.txt", "x (3).txt", "x (2).txt"]),
        (["d\\x.txt", "d/x.txt", "/d/x.txt"], ["d/x.txt", "d/x (2).txt", "d/x (3).txt"]),
        (["C:/x.txt", "C:\\x.txt", "x.txt"], ["x.txt", "x (2).txt", "x (3).txt"]),
        # One file on Windows and macOS: case, Unicode's two "é"s, a trailing dot.
        (["Report.PDF", "report.pdf"], ["Report.PDF", "report (2).pdf"]),
        ([cafe, cafe_decomposed], [cafe, "cafe\u0301 (2).txt"]),
        (["n.txt.", "n.txt"], ["n.txt.", "n (2).txt"]),
        # A file named as a folder the archive holds: the folder keeps its name, its files with it.
        (["a", "a/b", "A/c"], ["a (2)", "a/b", "A/c"]),
        (
            [".env", ".env", "archive.tar.gz", "archive.tar.gz"],
            [".env", ".env (2)", "archive.tar.gz", "archive.tar (2).gz"],
        ),
        (["..", "/", "file"], ["file", "file (2)", "file (3)"]),
    ]
    names = zip_page.evaluate(PLACEMENT_NAMES, [keys for keys, _ in cases])
    assert [(keys, got) for (keys, _), got in zip(cases, names, strict=True)] == cases


def test_an_archive_is_made_on_unix_its_entries_regular_files(zip_page: Page) -> None:
    archive = _archive(zip_page, [["会議資料.pptx", "slides", 1], ["a/b.txt", "b", 1]], {})
    for info in archive.infolist():
        assert info.create_system == 3  # Unix: unzip reads the names as UTF-8, not a DOS code page
        assert info.create_version == 45
        assert info.external_attr >> 16 == 0o100644  # a regular file, rw-r--r--
        assert not info.is_dir()
    big = _archive(zip_page, [["x", "x", 1]], {"zip64": "always"})
    assert big.infolist()[0].create_system == 3
    assert big.infolist()[0].external_attr >> 16 == 0o100644


def test_a_hostile_bucket_makes_an_archive_that_stays_in_its_folder(zip_page: Page, tmp_path: Path) -> None:
    files = [[name, f"{index}", 1] for index, name in enumerate(HOSTILE_NAMES)] + [["a/b", "again", 1]]
    archive = _archive(zip_page, files)
    assert archive.testzip() is None
    names = archive.namelist()
    # "a/b" is a folder here ("a/./b/../c" is in it): the files named so are numbered.
    assert names == [
        "x.bat", "a/b/c.txt", "x.txt", "x (2).txt", "x (3).txt", "Windows/x.ini", "server/share/x.txt",
        "x (4).txt", "x (5).txt", "a/b (2)", "a/b/c", "会議資料.pptx", "a/b (3)",
    ]  # fmt: skip
    assert all(_inside(name) for name in names)
    folder = tmp_path / "unpacked"
    archive.extractall(folder)
    unpacked = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    assert unpacked == set(names)
    assert [path.name for path in tmp_path.iterdir()] == ["unpacked"]


def test_debian_unzip_unpacks_utf8_names_inside_the_folder(zip_page: Page, tmp_path: Path) -> None:
    unzip = shutil.which("unzip")
    if unzip is None:
        reason = "no unzip (apt-get install unzip): Debian's unzip is not tried on the page's archives"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    files = [
        ["会議資料.pptx", "slides", 1],
        ["Café/ünïcode.md", "é", 1],
        ["..\\..\\x.bat", "bat", 1],
        ["C:/x.txt", "c", 1],
        ["C:\\y.txt", "y", 1],
        ["a//b", "first", 1],
        ["a/b", "second", 1],
    ]
    encoded, _ = zip_page.evaluate(ZIP, [files, {}])
    (tmp_path / "files.zip").write_bytes(base64.b64decode(encoded))
    folder = tmp_path / "unpacked"
    # A UTF-8 locale, as an admin's terminal has: unzip writes names in the locale's character set. `-o`
    # overwrites without asking, as "A" answers: an entry that lands on another's name is then one file short.
    environment = {**os.environ, "LC_ALL": "C.UTF-8"}
    result = subprocess.run(
        [unzip, "-q", "-o", "files.zip", "-d", "unpacked"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    unpacked = {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8")
        for path in folder.rglob("*")
        if path.is_file()
    }
    assert unpacked == {
        "会議資料.pptx": "slides",
        "Café/ünïcode.md": "é",
        "x.bat": "bat",
        "x.txt": "c",
        "y.txt": "y",
        "a/b": "first",
        "a/b (2)": "second",
    }, result.stderr
    assert result.returncode == 0, result.stdout + result.stderr  # not even a warning
    assert sorted(path.name for path in tmp_path.iterdir()) == ["files.zip", "unpacked"]
    assert all(path.stat().st_mode & 0o170000 == 0o100000 for path in folder.rglob("*") if path.is_file())


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
