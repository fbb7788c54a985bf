"""Statistics kept as uploads are indexed, so the planner knows every bucket, whatever wrote its entries.

The indexer counts one upload in `SAMPLE_ONE_IN`, chosen by a hash of its key (`sampled`), into one of
`STATISTICS_SHARDS` statistics items (chosen by the same hash), adding `SAMPLE_ONE_IN` times the upload's
`cost.entry_counts`: each counter is an estimate of the whole bucket's, and `cost.statistics_from_counts`
reads the sum of the items as it reads a listing's. A batch adds its samples with one UpdateItem per item
it touches (`ADD`, so any number of indexers add at once), and no item takes more than one write in
`SAMPLE_ONE_IN x STATISTICS_SHARDS` uploads: no hot item.

What it costs: an item is its key (longer than any S3 key, like the index state record's) and its
counters, under 2 KB for about four years of upload months, so an UpdateItem costs 2 write units (3
beyond that). Per million uploads: at most 10,000 UpdateItems, 20,000 write units, 0.5% of the entry
table's ~4,000,000 (0.75% at 3 units).

Each item's key is longer than S3 allows (`objects.is_record_key` holds), so no event writes it and every
scan of the table skips it; it carries no index key attribute, so no search returns it. Backfill and
reconcile neither read nor reset the items: a bucket keeps them through any run.

The counts follow the live entries, not only the uploads (`StatisticsTally`): a delete takes the entry it
removed off again (the tombstone's write returns the old entry, so this costs no read), and an overwrite
takes the old entry off as it adds the new one, in the same item (the key chooses it). A bucket with churn
(temporary files, logs under an expiry) then reads as what it holds: counted only on upload, a bucket that
keeps a week of files looked like years of them, and the planner sent "this week" boxes to the size index.
Counters are summed over the items before they are read, so one item's counter may go below zero (an entry
a backfill wrote and a delete took off) while the bucket's sum stays an estimate of what it holds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from file_index.rules import cost, schema, zorder
from file_index.rules.objects import RECORD_MARK, record_key

SAMPLE_ONE_IN = 100
STATISTICS_SHARDS = 4
STATISTICS_OF = "statisticsOf"  # the bucket a statistics item counts


def _hash(object_key: str) -> int:
    # Salted apart from `shards.shard_of`, so the sample is not one bucket shard's keys.
    digest = hashlib.blake2b(
        object_key.encode("utf-8", "surrogatepass"), digest_size=8, person=b"upload-stats"
    ).digest()
    return int.from_bytes(digest, "big")


def sampled(object_key: str) -> int | None:
    """The statistics item an upload of `object_key` is counted in, or None (not in the sample)."""
    value = _hash(object_key)
    if value % SAMPLE_ONE_IN:
        return None
    return (value // SAMPLE_ONE_IN) % STATISTICS_SHARDS


def statistics_key(bucket: str, shard: int) -> str:
    """The `objectKey` of `bucket`'s statistics item `shard`: one byte longer than the longest S3 key."""
    return record_key("upload-statistics", f"{bucket}{RECORD_MARK}{shard}")


def statistics_keys(bucket: str) -> list[str]:
    return [statistics_key(bucket, shard) for shard in range(STATISTICS_SHARDS)]


def upload_sample(
    object_key: str, bucket: str, size: int, upload_ms: int
) -> tuple[int, dict[str, int]] | None:
    """The statistics item an upload is counted in and what it adds there (its `cost.entry_counts`, each
    `SAMPLE_ONE_IN` times), or None when it is not in the sample."""
    shard = sampled(object_key)
    if shard is None:
        return None
    counts = cost.entry_counts(size, upload_ms, cost.estimated_entry_bytes(object_key, bucket))
    return shard, {name: value * SAMPLE_ONE_IN for name, value in counts.items()}


def entry_sample(entry: Mapping[str, Any], bucket: str) -> tuple[int, dict[str, int]] | None:
    """`upload_sample` of an entry as written or read (its key, size and upload date); None when it is not
    in the sample or lacks what the counters need (an entry damaged by hand)."""
    try:
        size = int(entry[schema.SIZE])
        upload_ms = zorder.epoch_millis(str(entry[schema.UPLOAD_DATE]))
    except (KeyError, TypeError, ValueError, zorder.ZOrderError):
        return None
    return upload_sample(str(entry[schema.OBJECT_KEY]), bucket, size, upload_ms)


class StatisticsTally:
    """What the writes of a batch add to and take from a bucket's statistics items, by item: each live
    entry a write made counts once, each live entry it removed (a delete's, an overwrite's old one) counts
    off. Thread-safe: the batch's writers tally at once; `drain` takes what the batch tallied. One bucket's:
    the indexer's (`bucket` only weighs the entries' estimated bytes)."""

    def __init__(self) -> None:
        self._counts: dict[int, Counter[str]] = {}
        self._lock = threading.Lock()

    def added(self, entry: Mapping[str, Any], bucket: str) -> None:
        self._tally(entry, bucket, 1)

    def removed(self, entry: Mapping[str, Any], bucket: str) -> None:
        self._tally(entry, bucket, -1)

    def _tally(self, entry: Mapping[str, Any], bucket: str, sign: int) -> None:
        sample = entry_sample(entry, bucket)
        if sample is None:
            return
        shard, counts = sample
        with self._lock:
            counter = self._counts.setdefault(shard, Counter())
            for name, value in counts.items():
                counter[name] += sign * value

    def drain(self) -> dict[int, Counter[str]]:
        """What was tallied since the last drain (counters that cancelled out left out), and a fresh start."""
        with self._lock:
            counts, self._counts = self._counts, {}
        kept = {shard: Counter({n: v for n, v in counter.items() if v}) for shard, counter in counts.items()}
        return {shard: counter for shard, counter in kept.items() if counter}


def counts_of(items: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The sum of the counters of statistics items as read (deserialized), those above zero; a damaged
    counter (not a whole number) is left out. One item's counter may be negative (module docstring)."""
    total: Counter[str] = Counter()
    for item in items:
        for name, value in item.items():
            if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral():
                total[name] += int(value)
    return {name: value for name, value in total.items() if value > 0}
