"""What a change of the shard placement may do to a deployed table, decided before anything else changes.

A shard count may only grow: an entry stays in the shard it was written to, and a reader queries the
shards of the count deployed now, so the entries of a dropped shard would vanish from every search
(docs/scaling.md, section 2). Switching the Z-order index on for a table that already holds entries
leaves those entries without `zAddress` until a migration fills it, so the index state record is
marked `zOrderPending` and searches keep to the two original indexes meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from file_index.rules import placement as placement_env
from file_index.rules import schema
from file_index.rules.objects import is_record_key
from file_index.rules.placement import ShardPlacement
from file_index.store import queries

# The custom resource's properties; CloudFormation hands every value over as a string.
TABLE_NAME = "TableName"
BUCKET_NAME = "BucketName"
BUCKET_INDEX_SHARDS = "BucketIndexShards"
HOT_USERS = "HotUsers"  # a JSON object: user -> shard count
MULTI_ATTRIBUTE_INDEX = "MultiAttributeIndex"  # "true" | "false"
# Pages of a Scan looked at to learn whether an existing table holds a live entry. Past them (a table of
# nothing but tombstones and state records so far) it is taken to hold one: marking is the safe side.
MAX_SCAN_PAGES = 20
SCAN_PAGE_SIZE = 100


class PlacementChangeRefusedError(Exception):
    """The new placement would hide entries from searches; the message names the old and new values."""


class InvalidPropertiesError(ValueError):
    """The resource's properties do not describe a placement (a template written by hand, say)."""


@dataclass(frozen=True)
class GuardedPlacement:
    """What the resource guards: the placement, the table it applies to and the indexed bucket."""

    placement: ShardPlacement
    table_name: str
    bucket_name: str

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> GuardedPlacement:
        """Read the resource properties; an absent placement key is the unsharded placement's value."""
        table, bucket = properties.get(TABLE_NAME), properties.get(BUCKET_NAME)
        if not isinstance(table, str) or not table or not isinstance(bucket, str) or not bucket:
            raise InvalidPropertiesError(f"the properties {TABLE_NAME} and {BUCKET_NAME} are required")
        env: dict[str, str] = {}
        for name, variable in (
            (BUCKET_INDEX_SHARDS, placement_env.BUCKET_INDEX_SHARDS),
            (HOT_USERS, placement_env.HOT_USERS),
            (MULTI_ATTRIBUTE_INDEX, placement_env.MULTI_ATTRIBUTE_INDEX),
        ):
            value = properties.get(name, "")
            if not isinstance(value, str):
                raise InvalidPropertiesError(f"the property {name} must be a string, got {value!r}")
            env[variable] = value
        return cls(ShardPlacement.from_env(env), table_name=table, bucket_name=bucket)


def to_properties(placement: ShardPlacement, *, table_name: str, bucket_name: str) -> dict[str, str]:
    """The resource properties of `placement` (what the CDK app writes into the template)."""
    env = placement.to_env()
    return {
        TABLE_NAME: table_name,
        BUCKET_NAME: bucket_name,
        BUCKET_INDEX_SHARDS: env[placement_env.BUCKET_INDEX_SHARDS],
        HOT_USERS: env[placement_env.HOT_USERS],
        MULTI_ATTRIBUTE_INDEX: env[placement_env.MULTI_ATTRIBUTE_INDEX],
    }


def refusals(old: ShardPlacement, new: ShardPlacement) -> list[str]:
    """Why `new` may not replace `old` (empty: it may). Each reason names both values."""
    reasons = []
    if new.bucket_shards < old.bucket_shards:
        reasons.append(
            f"bucketIndexShards cannot go from {old.bucket_shards} to {new.bucket_shards}: the entries of "
            f"{_shards(new.bucket_shards, old.bucket_shards)} would vanish from every search; raise it or "
            f"keep {old.bucket_shards}"
        )
    for user, count in sorted(old.hot_users.items()):
        now = new.user_shards(user)
        if now >= count:
            continue
        if user in new.hot_users:
            reasons.append(
                f"hotUsers[{user!r}] cannot go from {count} to {now}: the entries of "
                f"{_shards(now, count)} of {user!r} would vanish from every search; raise it or keep {count}"
            )
        else:
            reasons.append(
                f"hotUsers cannot drop {user!r} (from {count} shards to 1): the entries of "
                f"{_shards(now, count)} of {user!r} would vanish from every search; "
                f"keep it at {count} or more"
            )
    return reasons


def _shards(first: int, end: int) -> str:
    return f"shard {first}" if end - first == 1 else f"shards {first}-{end - 1}"


def check_change(old: ShardPlacement, new: ShardPlacement) -> None:
    """Raise PlacementChangeRefusedError naming every refused change."""
    reasons = refusals(old, new)
    if reasons:
        raise PlacementChangeRefusedError("; ".join(reasons))


def z_order_turns_on(old: ShardPlacement | None, new: ShardPlacement) -> bool:
    """The Z-order index is on now and was off (or unknown: a stack deployed without this guard)."""
    return new.multi_attribute_index and (old is None or not old.multi_attribute_index)


def holds_entries(dynamodb: Any, table_name: str) -> bool:
    """Whether `table_name` exists and holds a live entry (state records and tombstones do not count).

    A fresh stack's table does not exist yet when the guard runs (the table waits for it); a stack that
    is upgraded from a release without the guard has its table, usually full.
    """
    if not queries.table_exists(dynamodb, table_name):
        return False
    start_key: dict[str, object] | None = None
    for _ in range(MAX_SCAN_PAGES):
        page = queries.scan_page(
            dynamodb,
            dict(
                TableName=table_name,
                Limit=SCAN_PAGE_SIZE,
                ProjectionExpression="#key, #deleted",
                ExpressionAttributeNames={"#key": schema.OBJECT_KEY, "#deleted": schema.DELETED},
                **({"ExclusiveStartKey": start_key} if start_key else {}),
            ),
        )
        for item in page.items:
            deleted = item.get(schema.DELETED, {}).get("BOOL", False)
            if not is_record_key(item[schema.OBJECT_KEY]["S"]) and not deleted:
                return True
        start_key = page.last_key
        if not start_key:
            return False
    return True
