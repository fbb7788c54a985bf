"""What a terms-plan page costs where most names match: at most 4 round trips, at most 3 items read per item
returned (name items and entries, `scanned_count`), on moto and DynamoDB Local.

A bucket of 4 shards holds 2,000 `IMG_nnnn.jpg` files and 200 others, half of them a hot user's (3 shards);
`q=i` and `q=img` over the bucket and the user, newest first and ascending, with and without time bounds,
its first pages read at the API's default page of 100: every page is within both bounds and the pages
hold exactly the start of the answer. `python -m pytest <this file> -s` prints each list's worst ratio
and rounds.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.read.name_query import NameQuery
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement
from tests.integration.file_index.terms_world import Engine, World, engine, pages

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = [pytest.mark.xdist_group("name-terms-reader-bounds"), pytest.mark.slow]

__all__ = ["engine"]

IMAGES = 2000
OTHERS = 200
PAGE = 100
PAGES = 6  # pages read of each list (the first ones: the list goes on past them)
USERS = ("anna", "bot")
PLACEMENT = ShardPlacement(bucket_shards=4, hot_users={"bot": 3})


@pytest.fixture(scope="module")
def world(engine: Engine) -> World:
    world = World(engine, "bucket-bounds", PLACEMENT, users=USERS)
    files = []
    for index in range(IMAGES + OTHERS):
        user = USERS[index % 2]
        name = f"IMG_{index:04d}.jpg" if index < IMAGES else f"report_{index}.pdf"
        # Files in bursts: ten share each upload time.
        files.append((f"{user}/{name}", user, index, world.now(same=index % 10 != 0)))
    world.load(files)
    return world


def middle(world: World, fraction: float) -> str:
    dates = sorted(entry[schema.UPLOAD_DATE] for entry in world.entries.values())
    return dates[int(len(dates) * fraction)]


@pytest.mark.parametrize("ascending", [False, True], ids=["newest", "oldest"])
@pytest.mark.parametrize("word", ["i", "img"])
@pytest.mark.parametrize("scope", ["bucket", "user", "bucket+time", "user+time"])
def test_a_page_reads_at_most_3_items_per_item_and_4_round_trips(
    world: World, scope: str, word: str, ascending: bool
) -> None:
    bounds: dict[str, Any] = {}
    if scope.endswith("+time"):
        bounds = {"start": middle(world, 0.2), "end": middle(world, 0.8)}
    list_scope = (
        BucketQuery(bucket=world.bucket, **bounds)
        if scope.startswith("bucket")
        else UserQuery(user="bot", **bounds)
    )
    query = NameQuery(listing=list_scope, words=(word,), ascending=ascending)
    with ThreadPoolExecutor(max_workers=8) as executor:
        found = list(itertools.islice(pages(world.reader(executor=executor), query, limit=PAGE), PAGES))
    keys = [item[schema.OBJECT_KEY] for page in found for item in page.items]
    assert len(keys) == PAGES * PAGE
    assert keys == world.truth(query)[: len(keys)]
    ratios = [page.scanned_count / max(1, len(page.items)) for page in found]
    print(
        f"\n{scope} q={word} {'asc' if ascending else 'desc'}: {len(found)} pages, {len(keys)} items, "
        f"items read per returned <= {max(ratios):.2f}, rounds <= {max(page.round_trips for page in found)}"
    )
    for page in found:
        assert page.round_trips <= 4
        assert page.scanned_count <= 3 * len(page.items), (page.scanned_count, len(page.items))
