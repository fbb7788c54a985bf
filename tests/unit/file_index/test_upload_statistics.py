"""The indexer's sample of uploads (`file_index.rules.upload_statistics`): its share, its spread over the
statistics items, what it writes, and what it costs next to the entries' own writes."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace

from bench import models
from bench.entries import create_event
from file_index.read.file_queries import BucketQuery, Plan, UserQuery
from file_index.read.reader import FileReader
from file_index.rules import cost, upload_statistics
from file_index.rules.objects import MAX_KEY_BYTES, ObjectEvent, is_record_key
from file_index.write.entry_items import entry_item

# A new upload's write units in the entry table today (the entry and its GSI copies), as the issue states.
ENTRY_WRITE_UNITS = 4
WRITE_UNIT_BYTES = 1024


def upload(key: str, size: int = 5000) -> ObjectEvent:
    return create_event(
        bucket="fileupload.a",
        key=key,
        user="U",
        size=size,
        moment=datetime(2017, 3, 9, tzinfo=UTC),
        sequence=1,
    )


KEYS = [f"USER{n % 97:03d}/file-{n:06d}.bin" for n in range(200_000)]


def test_about_one_upload_in_a_hundred_is_sampled_spread_evenly_over_the_items() -> None:
    shards = Counter(shard for key in KEYS if (shard := upload_statistics.sampled(key)) is not None)
    sampled = shards.total()
    assert 0.009 * len(KEYS) <= sampled <= 0.011 * len(KEYS)
    assert set(shards) == set(range(upload_statistics.STATISTICS_SHARDS))
    expected = sampled / upload_statistics.STATISTICS_SHARDS
    assert all(0.8 * expected <= count <= 1.2 * expected for count in shards.values())
    # The same key always lands the same way: a retried batch counts no other key.
    assert [upload_statistics.sampled(key) for key in KEYS[:500]] == [
        upload_statistics.sampled(key) for key in KEYS[:500]
    ]


def test_a_sample_counts_for_the_uploads_it_stands_for() -> None:
    key = next(key for key in KEYS if upload_statistics.sampled(key) is not None)
    other = next(key for key in KEYS if upload_statistics.sampled(key) is None)
    tally = upload_statistics.StatisticsTally()
    for event in (upload(key, size=5000), upload(other)):
        tally.added(entry_item(event, event.order_key), event.bucket)
    ((shard, counted),) = tally.drain().items()
    assert shard == upload_statistics.sampled(key)
    weight = upload_statistics.SAMPLE_ONE_IN
    assert counted["entries"] == weight
    assert counted[f"size{cost.size_bin(5000)}"] == weight
    assert counted["month2017-03"] == weight
    statistics = cost.statistics_from_counts(counted)
    assert statistics is not None
    assert statistics.count == weight


def test_the_statistics_keys_are_records_no_event_can_write() -> None:
    keys = upload_statistics.statistics_keys("fileupload.a")
    assert len(set(keys)) == upload_statistics.STATISTICS_SHARDS
    assert all(is_record_key(key) and len(key.encode()) == MAX_KEY_BYTES + 1 for key in keys)


def test_the_sample_costs_under_one_percent_of_the_entries_write_units() -> None:
    """An item after four years of months and every size octave stays under 2 KB (2 write units per
    UpdateItem); one upload in a hundred writes one: 0.5% of 4 write units per upload."""
    counters: dict[str, int] = {"entries": 10**9, "bytes": 300 * 10**9}
    counters |= {f"size{number}": 10**7 for number in range(36)}
    counters |= {f"month{2017 + m // 12}-{m % 12 + 1:02d}": 10**7 for m in range(48)}
    item = {
        "objectKey": upload_statistics.statistics_key("a-bucket-name-of-thirty-chars.x", 7),
        upload_statistics.STATISTICS_OF: "a-bucket-name-of-thirty-chars.x",
        **counters,
    }
    units_per_update = math.ceil(models.item_bytes(item) / WRITE_UNIT_BYTES)
    assert units_per_update == 2
    million = 1_000_000
    updates = sum(1 for key in KEYS if upload_statistics.sampled(key) is not None) * million / len(KEYS)
    extra = updates * units_per_update
    assert extra <= 0.01 * ENTRY_WRITE_UNITS * million  # ~20,000 of 4,000,000: 0.5%


def test_a_smallest_size_of_zero_is_no_bound() -> None:
    """`minSize=0` with a time range: the time index reads what it returns; the size index would read
    the whole bucket (every size is at least 0)."""
    reader = FileReader(SimpleNamespace(meta=SimpleNamespace(client=None), name="t"))
    last_hour = BucketQuery("b", min_size=0, start="2026-11-25T20:00:00.000Z")
    assert not last_hour.has_size_bounds
    assert last_hour == BucketQuery("b", start="2026-11-25T20:00:00.000Z")
    assert reader.plan(last_hour) is Plan.UPLOAD_DATE
    assert UserQuery("u", min_size=0).min_size is None
    # Any other bound stays a bound.
    assert BucketQuery("b", min_size=1, start="2026-11-25T20:00:00.000Z").has_size_bounds


def test_a_tally_takes_off_what_it_added_for_the_same_entry() -> None:
    key = next(key for key in KEYS if upload_statistics.sampled(key) is not None)
    entry = {"objectKey": key, "size": 5000, "uploadDate": "2017-03-09T00:00:00.000Z"}
    newer = entry | {"size": 10**9, "uploadDate": "2017-12-01T00:00:00.000Z"}
    tally = upload_statistics.StatisticsTally()
    tally.added(entry, "fileupload.a")
    tally.added({**entry, "objectKey": next(k for k in KEYS if upload_statistics.sampled(k) is None)}, "b")
    ((shard, counted),) = tally.drain().items()
    assert shard == upload_statistics.sampled(key)
    assert counted["month2017-03"] == upload_statistics.SAMPLE_ONE_IN
    assert tally.drain() == {}  # drained
    # An overwrite: the old entry off, the new one on, in the same item; then its delete.
    tally.removed(entry, "fileupload.a")
    tally.added(newer, "fileupload.a")
    moved = tally.drain()[shard]
    assert moved["month2017-03"] == -upload_statistics.SAMPLE_ONE_IN
    assert moved["month2017-12"] == upload_statistics.SAMPLE_ONE_IN
    assert "entries" not in moved  # one off, one on
    tally.removed(newer, "fileupload.a")
    summed = upload_statistics.counts_of(
        [
            {name: Decimal(value) for name, value in counts.items()}
            for counts in (counted, moved, tally.drain()[shard])
        ]
    )
    assert summed == {}  # nothing left: the bucket holds none of them
