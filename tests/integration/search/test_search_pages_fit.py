"""Every list fits Lambda's 6 MB response: name, prefix, folder and extension lists of 1,000 long keys end
early with a cursor, as plain lists do, and following the cursors answers each file and sub-folder once.

The keys are about 900 bytes of `"` and `\\`, which take four bytes each once the body is a JSON string
inside the response: 1,000 items are about 8 MB. The handler runs over `indexed_api`'s tables (a sharded
bucket, a hot user, the name index) on moto and on DynamoDB Local.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest

from file_index.rules.objects import ObjectEvent
from search.payload import RESPONSE_LIMIT_BYTES, RUNTIME_ESCAPES_NON_ASCII
from tests.integration.search.conftest import BUCKET, SearchApi, both_engines, write_entries

pytestmark = [both_engines, pytest.mark.slow]

USER = "bot"  # a hot user: its entries are in 4 shards
LONG_FILES = 1000
FOLDERS = [f"{USER}/sub{n}/" for n in range(12)]
START = datetime(2024, 5, 1, tzinfo=UTC)


def _put_entries(api: SearchApi, keys: list[str]) -> None:
    events = [
        ObjectEvent(
            event_name="ObjectCreated:Put",
            bucket=BUCKET,
            key=key,
            event_time=START + timedelta(seconds=n % 97),  # many equal upload times
            sequencer=f"{n + 1:016X}",
            size=n % 10,
            e_tag=None,
            version_id=None,
            upload_user=USER,
            file_id=key.split("/", 1)[1],
        )
        for n, key in enumerate(keys)
    ]
    write_entries(api, events)


def _long_keys() -> list[str]:
    """LONG_FILES keys of about 900 bytes in USER's folder, each named `...-report-NNNN.txt`."""
    keys = []
    for n in range(LONG_FILES):
        head, tail = f"{USER}/", f"-report-{n:04d}.txt"
        keys.append(head + '"\\' * ((900 - len(head) - len(tail)) // 2) + tail)
    return keys


@pytest.fixture
def long_keys(indexed_api: SearchApi) -> list[str]:
    keys = _long_keys()
    # A few files in sub-folders too: a folder page answers them as its commonPrefixes.
    _put_entries(indexed_api, keys + [f"{folder}report-{n}.txt" for n, folder in enumerate(FOLDERS)])
    return keys


def _pages(api: SearchApi, path: str) -> Iterator[tuple[dict[str, Any], int]]:
    """Each page of `path` and the bytes of its whole response in the runtime's JSON, following cursors."""
    cursor = None
    for _ in range(200):
        response = api.get(path + (f"&cursor={quote(cursor)}" if cursor else ""))
        assert response.status == 200, response.body
        page = response.json
        whole = {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": response.body}
        yield page, len(json.dumps(whole, ensure_ascii=RUNTIME_ESCAPES_NON_ASCII).encode())
        cursor = page["nextCursor"]
        if cursor is None:
            return
    raise AssertionError("paging does not end")


LISTS = {
    "name": f"/files?bucket={BUCKET}&q=report&limit=1000",
    "prefix": f"/files?bucket={BUCKET}&prefix={USER}/&limit=1000",
    "folder": f"/files?bucket={BUCKET}&prefix={USER}/&delimiter=/&limit=1000",
    "folder, descending": f"/files?bucket={BUCKET}&prefix={USER}/&delimiter=/&order=desc&limit=1000",
    "extension": f"/files?bucket={BUCKET}&ext=txt&limit=1000",
}


@pytest.mark.parametrize("path", LISTS.values(), ids=LISTS.keys())
def test_a_list_of_long_keys_is_cut_to_the_response_limit_and_continues_exactly(
    indexed_api: SearchApi, long_keys: list[str], path: str
) -> None:
    pages = list(_pages(indexed_api, path))

    sizes = [size for _, size in pages]
    assert all(size < RESPONSE_LIMIT_BYTES for size in sizes), sizes
    assert max(sizes) > 4 * 1024 * 1024, sizes  # the pages were cut near the limit, not by the reader
    assert len(pages) >= 2
    seen = [item["objectKey"] for page, _ in pages for item in page["items"]]
    long = set(long_keys)
    in_folders = [key for key in seen if key not in long]
    long_seen = [key for key in seen if key in long]
    assert len(long_seen) == len(set(long_seen)) == LONG_FILES  # each file once: none lost, none repeated
    folders = [folder for page, _ in pages for folder in page.get("commonPrefixes") or ()]
    if "delimiter" in path:
        assert in_folders == []
        assert sorted(folders) == sorted(FOLDERS)  # each sub-folder once
    else:
        assert sorted(in_folders) == sorted(f"{folder}report-{n}.txt" for n, folder in enumerate(FOLDERS))
