"""Measure 14: write units and dollars per million uploads, for each shard placement.

The same accounting as the heat model (`bench.entries.index_writes` over the writer's own entries): a
sample stream of uploads (every one a new object, or every one an overwrite of an existing key with a new
size and a new time) is charged per index, and the mean per upload scaled to a million. Four placements:
the 0.2.0 placement (one shard, two GSIs), 0.3.0's default (`cdk.json` context: the bucket index's shards and
hot users, two GSIs), today's default (the same and the bucket's time index) and the same with
`multiAttributeIndex` on. Sharding moves writes between partition key values but adds none; the bucket's
time index and the Z-order index each add one write per new object and two per overwrite (their keys,
the upload time and the z-address of time and size, move with every overwrite).

Dollars: DynamoDB on-demand write request units at the us-east-1 list price (`backfill_batch.PRICES`,
which names the date), no free tier, storage and reads left out.
"""

from __future__ import annotations

import dataclasses

from bench import deployment
from bench.backfill_batch import PRICES
from bench.partition_heat import HOT_SHARE, Kind, simulate
from bench.report import Row, progress
from file_index.rules.placement import ShardPlacement

PER_MILLION = 1_000_000


def write_units_per_upload(
    placement: ShardPlacement,
    kind: Kind,
    *,
    uploads: int,
    bucket_time_index: bool = True,
    user_size_index: bool = True,
) -> tuple[float, dict[str, float]]:
    """Mean write units per upload in total and per index, over a stream of `uploads` (the indexes as
    in `partition_heat.simulate`)."""
    heat = simulate(
        placement,
        kind,
        rate=uploads,
        seconds=1,
        hot_share=HOT_SHARE,
        seed=9,
        bucket_time_index=bucket_time_index,
        user_size_index=user_size_index,
    )
    per_index = {index: units / uploads for index, units in sorted(heat.units.items())}
    return sum(per_index.values()), per_index


def run(*, uploads: int) -> list[Row]:
    default = deployment.shard_placement()
    without_z = dataclasses.replace(default, multi_attribute_index=False)
    # name: (placement, the bucket's time index and the user's size index, both new since 0.3.0)
    placements = {
        "0.2.0 placement": (ShardPlacement(), False),
        f"0.3.0 default ({default.bucket_shards} shards)": (without_z, False),
        f"default ({default.bucket_shards} shards, time and user size indexes)": (without_z, True),
        "default + multiAttributeIndex": (dataclasses.replace(default, multi_attribute_index=True), True),
    }
    rows: list[Row] = []
    for kind in Kind:
        progress(f"write cost: {uploads} {kind} under each placement")
        base_units, _ = write_units_per_upload(
            ShardPlacement(), kind, uploads=uploads, bucket_time_index=False, user_size_index=False
        )
        for name, (placement, new_indexes) in placements.items():
            units, per_index = write_units_per_upload(
                placement, kind, uploads=uploads, bucket_time_index=new_indexes, user_size_index=new_indexes
            )
            dollars = units * PRICES.dynamodb_per_million_write_units
            split = ", ".join(f"{index} {value:.2f}" for index, value in per_index.items())
            rows.append(
                Row.versus(
                    f"14. write units per million {kind}, {name}",
                    "WCU/million",
                    units * PER_MILLION,
                    base_units * PER_MILLION,
                    "0.2.0 placement",
                    note=f"0.2.0 ÷ this (below 1: costs more); ${dollars:,.3f} per million uploads at "
                    f"${PRICES.dynamodb_per_million_write_units} per million write units (on-demand, "
                    f"us-east-1 list price as of {PRICES.as_of}); per upload: {split}",
                )
            )
    return rows
