"""Measure 11: partition heat, and the highest upload rate a bucket and a hot uploader sustain.

DynamoDB's per-partition limit (1,000 write units per second, for table and GSI partitions alike) is not
observable on moto or DynamoDB Local, so this is a model, built from the real entries. A stream of
uploads to one busy bucket (one hot uploader, `HOT_USER`, among `NORMAL_USERS` others; either every
upload a new object, or every upload an overwrite of an existing key with a new size) is turned into
entries by the writer's own `entry_item` under an `ShardPlacement`; each write is charged to the partition
key value it lands on in each index (`bench.entries.index_writes`: the table, `bucketName-size-index`,
`uploadUser-uploadDate-index`, and `bucketName-zAddress-index` when it is on). Per second of the
stream, the busiest value of each index is the one that meets the limit first.

The highest sustainable rate is where that busiest value reaches 1,000 write units per second: the
stream is simulated at a first guess, the rate scaled by 1,000 / busiest, and simulated again at the
scaled rate, whose own scaling is the answer (uploads arrive at an exact rate; which shard each one
hashes to is what varies, so the busiest shard of a second sits a few standard deviations above the
mean, as docs/scaling.md computes). The bucket's rate is limited by its values of the bucket-keyed
indexes; the hot uploader's by its values of the user index (a stream of that user alone). Before:
the 0.2.0 placement (one shard, no hot user); after: 16 bucket shards and the hot user on 8.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from bench import aws
from bench.entries import TABLE, create_event, entry, index_writes, item_bytes, log_uniform_size
from bench.report import Row, progress
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement

PARTITION_WRITE_UNITS_PER_SECOND = 1000  # DynamoDB's documented limit per partition
HOT_USER = "ingest-bot"
NORMAL_USERS = 1000
HOT_SHARE = 0.3  # of the bucket's uploads, in the bucket stream
# Existing keys an overwrite picks from, per user: a larger pool only makes repeats within a second rarer.
OVERWRITE_POOL = 100_000
BEFORE = ShardPlacement()
AFTER = ShardPlacement(bucket_shards=16, hot_users={HOT_USER: 8}, multi_attribute_index=True)
_START = datetime(2017, 8, 20, tzinfo=UTC)
BUCKET_KEYED = (schema.BUCKET_SIZE_INDEX.name, schema.Z_ORDER_INDEX.name)


class Kind(StrEnum):
    NEW = "new objects"
    OVERWRITE = "overwrites"


@dataclass
class Heat:
    """What one simulated stream wrote: the busiest value of each index in any one second."""

    rate: int
    seconds: int
    busiest: Counter[str] = field(default_factory=Counter)  # index -> write units/s
    busiest_bucket: int = 0  # busiest value of the bucket-keyed indexes
    busiest_hot_user: int = 0  # busiest of the hot user's values on the user index
    entry_bytes: int = 0
    entries: int = 0
    units: Counter[str] = field(default_factory=Counter)  # index -> write units of the whole stream

    @property
    def mean_entry_bytes(self) -> float:
        return self.entry_bytes / self.entries if self.entries else 0.0


def simulate(
    placement: ShardPlacement,
    kind: Kind,
    *,
    rate: int,
    seconds: int,
    hot_share: float,
    seed: int = 5,
    bucket_time_index: bool = True,
    user_size_index: bool = True,
) -> Heat:
    """`seconds` of uploads to one bucket at `rate` per second, charged to each index's key values
    (the table's indexes: `placement`'s, with the bucket's time index unless `bucket_time_index` is off and
    the user's size index unless `user_size_index` is off, as in 0.3.0 and before)."""
    rng = random.Random(seed)
    indexes = tuple(
        index
        for index in schema.global_indexes(
            placement.multi_attribute_index, bucket_time_index=bucket_time_index
        )
        if user_size_index or index is not schema.USER_SIZE_INDEX
    )
    hot_values = set(placement.user_partitions(HOT_USER))
    current: dict[str, dict[str, object]] = {}  # the entries an overwrite replaces
    heat = Heat(rate=rate, seconds=seconds)
    sequence = 0
    for second in range(seconds):
        units: Counter[tuple[str, str]] = Counter()
        for slot in range(rate):
            sequence += 1
            user = HOT_USER if rng.random() < hot_share else f"user{rng.randrange(NORMAL_USERS):04d}"
            moment = _START + timedelta(seconds=second + slot / rate)
            if kind is Kind.NEW:
                key = f"{user}/2017/08/20/upload-{sequence:09d}.bin"
                old = None
            else:
                key = f"{user}/library/object-{rng.randrange(OVERWRITE_POOL):06d}.bin"
                old = current.get(key) or entry(
                    create_event(
                        bucket=aws.BUCKET,
                        key=key,
                        user=user,
                        size=log_uniform_size(rng),
                        moment=moment - timedelta(days=30),
                        sequence=0,
                    ),
                    None,
                    placement,
                )
            new = entry(
                create_event(
                    bucket=aws.BUCKET,
                    key=key,
                    user=user,
                    size=log_uniform_size(rng),
                    moment=moment,
                    sequence=sequence,
                ),
                None,
                placement,
            )
            if kind is Kind.OVERWRITE:
                current[key] = new
            heat.entry_bytes += item_bytes(new)
            heat.entries += 1
            for write in index_writes(old, new, indexes):
                units[write.index, write.partition] += write.units
                heat.units[write.index] += write.units
        for (index, partition), total in units.items():
            heat.busiest[index] = max(heat.busiest[index], total)
            if index in BUCKET_KEYED:
                heat.busiest_bucket = max(heat.busiest_bucket, total)
            elif index == schema.USER_DATE_INDEX.name and partition in hot_values:
                heat.busiest_hot_user = max(heat.busiest_hot_user, total)
    return heat


@dataclass(frozen=True)
class Sustainable:
    rate: float  # uploads/s at which the busiest value reaches the partition limit
    heat: Heat  # the stream simulated at (about) that rate

    def busiest(self, hot_user: bool) -> int:
        return self.heat.busiest_hot_user if hot_user else self.heat.busiest_bucket


def sustainable(
    placement: ShardPlacement, kind: Kind, *, hot_user: bool, guess: int, seconds: int
) -> Sustainable:
    """The highest rate for the bucket (`hot_user` False) or for the hot uploader alone (True)."""
    share = 1.0 if hot_user else HOT_SHARE

    def busiest(heat: Heat) -> int:
        return heat.busiest_hot_user if hot_user else heat.busiest_bucket

    first = simulate(placement, kind, rate=guess, seconds=seconds, hot_share=share)
    rate = max(1, round(guess * PARTITION_WRITE_UNITS_PER_SECOND / busiest(first)))
    heat = simulate(placement, kind, rate=rate, seconds=seconds, hot_share=share)
    return Sustainable(rate * PARTITION_WRITE_UNITS_PER_SECOND / busiest(heat), heat)


def _guess(placement: ShardPlacement, kind: Kind, hot_user: bool) -> int:
    shards = placement.user_shards(HOT_USER) if hot_user else placement.bucket_shards
    per_upload = 1 if kind is Kind.NEW else 2  # an overwrite moves the entry: two index writes
    return int(PARTITION_WRITE_UNITS_PER_SECOND * shards * 0.9 / per_upload)


def _describe(placement: ShardPlacement) -> str:
    hot = placement.user_shards(HOT_USER)
    return f"{placement.bucket_shards} shard{'s' if placement.bucket_shards > 1 else ''}" + (
        f", {HOT_USER} on {hot}" if hot > 1 else ", no hot user"
    )


def run(*, seconds: int, rate: int) -> list[Row]:
    rows: list[Row] = []
    for hot_user in (False, True):
        who = f"hot uploader ({HOT_USER})" if hot_user else "bucket"
        for kind in Kind:
            progress(f"partition heat: sustainable {kind} per {who}, {seconds} s streams")
            before, after = (
                sustainable(
                    placement,
                    kind,
                    hot_user=hot_user,
                    guess=_guess(placement, kind, hot_user),
                    seconds=seconds,
                )
                for placement in (BEFORE, AFTER)
            )
            index = schema.USER_DATE_INDEX.name if hot_user else "bucket-keyed index"

            rows.append(
                Row(
                    f"11. sustainable {kind}/s per {who} (heat model)",
                    "uploads/s",
                    after.rate,
                    before.rate,
                    f"before: {_describe(BEFORE)}",
                    after.rate / before.rate,
                    f"after ÷ before (higher is better); after: {_describe(AFTER)}; busiest {index} value "
                    f"{after.busiest(hot_user)} WCU/s at {after.heat.rate:,}/s (before: "
                    f"{before.busiest(hot_user)} at {before.heat.rate:,}/s) in the busiest of {seconds} s; "
                    f"limit {PARTITION_WRITE_UNITS_PER_SECOND:,} WCU/s per partition; "
                    f"entries {after.heat.mean_entry_bytes:.0f} B on average (1 WCU)",
                )
            )
    progress(f"partition heat: busiest value of each index at {rate:,} uploads/s")
    before_heat = simulate(
        BEFORE, Kind.NEW, rate=rate, seconds=seconds, hot_share=HOT_SHARE, bucket_time_index=False
    )
    after_heat = simulate(AFTER, Kind.NEW, rate=rate, seconds=seconds, hot_share=HOT_SHARE)
    hot_rate = round(rate * HOT_SHARE)
    for index in (TABLE, *(index.name for index in schema.global_indexes(True))):
        theirs: int | None
        if index == schema.USER_DATE_INDEX.name:
            ours, theirs = after_heat.busiest_hot_user, before_heat.busiest_hot_user
            what = f"the hot uploader's busiest value ({hot_rate:,} of the uploads/s)"
        else:
            ours, theirs = after_heat.busiest[index], before_heat.busiest.get(index)
            what = "busiest key value" if index == TABLE else "the bucket's busiest value"
        if theirs is None:
            before_is = "the index did not exist in 0.2.0"
        elif theirs > PARTITION_WRITE_UNITS_PER_SECOND:
            before_is = f"before is over the {PARTITION_WRITE_UNITS_PER_SECOND:,} WCU/s limit: throttled"
        else:
            before_is = f"before is within the {PARTITION_WRITE_UNITS_PER_SECOND:,} WCU/s limit"
        rows.append(
            Row.versus(
                f"11. busiest partition at {rate:,} new uploads/s, {index}",
                "WCU/s",
                ours,
                theirs,
                f"before: {_describe(BEFORE)}",
                note=f"before ÷ after; {what}, busiest of {seconds} s; {before_is}",
            )
        )
    return rows
