"""The write of the upload statistics items (`file_index.rules.upload_statistics` says what they count)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from file_index.rules import schema
from file_index.rules.upload_statistics import STATISTICS_OF, statistics_key


def add_counts(dynamodb: Any, table_name: str, bucket: str, by_shard: Mapping[int, Counter[str]]) -> int:
    """Add `by_shard` (counters by statistics item, any sign) to `bucket`'s statistics items; the number
    of UpdateItems made (one per item)."""
    writes = 0
    for shard, counts in sorted(by_shard.items()):
        names = {"#of": STATISTICS_OF}
        values: dict[str, Any] = {":of": {"S": bucket}}
        adds = []
        for position, (name, value) in enumerate(sorted(counts.items())):
            names[f"#c{position}"] = name
            values[f":c{position}"] = {"N": str(value)}
            adds.append(f"#c{position} :c{position}")
        dynamodb.update_item(
            TableName=table_name,
            Key={schema.OBJECT_KEY: {"S": statistics_key(bucket, shard)}},
            UpdateExpression="SET #of = :of ADD " + ", ".join(adds),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        writes += 1
    return writes
