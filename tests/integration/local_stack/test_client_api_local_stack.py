"""`FileSearch`, the client's Python API, against the local stack (uploads indexed by the real indexer, the
search API behind the API Gateway stand-in): a folder's files and sub-folders, one page with its cursor and
the index state, and `search` still giving the files alone."""

from __future__ import annotations

from file_search_client import FileSearch, Page
from local_stack.stack import LocalFileSearch

KEYS = (
    "USER004/reports/2024/q1.pdf",
    "USER004/reports/2024/q2.pdf",
    "USER004/reports/summary.txt",
    "USER004/reports/archive/old.txt",
    "USER004/reports/notes.txt",
    "USER004/photos/cat.png",
)


def test_a_folders_files_and_sub_folders_across_pages(running_stack: LocalFileSearch) -> None:
    stack = running_stack
    s3 = stack.client("s3")
    for key in KEYS:
        s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x")
    stack.wait_until_indexed()
    files = FileSearch(stack.api_url)

    pages = list(files.pages(bucket=stack.bucket, prefix="USER004/reports/", delimiter="/", limit=1))

    assert all(isinstance(page, Page) for page in pages)
    assert [folder for page in pages for folder in page.common_prefixes] == [
        "USER004/reports/2024/",
        "USER004/reports/archive/",
    ]
    assert [item["objectKey"] for page in pages for item in page.items] == [
        "USER004/reports/notes.txt",
        "USER004/reports/summary.txt",
    ]
    assert pages[-1].next_cursor is None
    assert all(page.next_cursor for page in pages[:-1])
    assert {page.index_state for page in pages} == {"READY"}
    assert {page.ordered_by for page in pages} == {"objectKey"}
    # `search` keeps giving the files alone, across the same pages.
    assert [
        item["objectKey"]
        for item in files.search(bucket=stack.bucket, prefix="USER004/reports/", delimiter="/", limit=1)
    ] == ["USER004/reports/notes.txt", "USER004/reports/summary.txt"]


def test_one_page_then_the_next_by_its_cursor(running_stack: LocalFileSearch) -> None:
    stack = running_stack
    s3 = stack.client("s3")
    for key in KEYS:
        s3.put_object(Bucket=stack.bucket, Key=key, Body=b"x" * len(key))
    stack.wait_until_indexed()
    files = FileSearch(stack.api_url)

    first = files.page(user="USER004", limit=4)
    second = files.page(user="USER004", limit=4, cursor=first.next_cursor)

    assert len(first.items) == 4
    assert first.next_cursor is not None
    assert first.index_state == "READY"
    assert first.ordered_by == "uploadDate"
    assert first.common_prefixes == []
    assert second.next_cursor is None
    assert sorted(item["objectKey"] for item in first.items + second.items) == sorted(KEYS)
