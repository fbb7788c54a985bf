"""The `FileMetaData` table: names, keys and attributes, defined once.

The CDK stack, the local stack and every test build the table from these definitions, so a test table
cannot drift from the deployed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

AttributeType = Literal["S", "N"]

TABLE_NAME = "FileMetaData"

# Attributes of an indexed file (the README's attribute table).
OBJECT_KEY = "objectKey"  # partition key: the S3 key, URL-decoded
BUCKET_NAME = "bucketName"
FILE_ID = "fileId"
SIZE = "size"
UPLOAD_USER = "uploadUser"
UPLOAD_DATE = "uploadDate"  # ISO-8601 UTC timestamp of the event, e.g. 2017-08-20T09:15:02.113Z
SEQUENCER = "sequencer"  # S3's sequencer of the event that wrote the item, as S3 sent it
E_TAG = "eTag"
VERSION_ID = "versionId"

# What an entry says about its object (besides its key): what a search answers with, and what a repair
# rewrites.
OBJECT_ATTRIBUTES = (BUCKET_NAME, FILE_ID, SIZE, UPLOAD_USER, UPLOAD_DATE, SEQUENCER, E_TAG, VERSION_ID)

# Bookkeeping attributes.
ORDER_KEY = "orderKey"  # the event's position in the key's history, comparable as a plain string
DELETED = "deleted"  # true on a tombstone: the object is gone; never returned by a search
EXPIRES_AT = "expiresAt"  # epoch seconds; DynamoDB TTL removes a tombstone after this
# String set on a tombstone: versions deleted for good (permanent deletes of one versionId) while the item
# held them or held no position yet; a late create of one of them changes nothing.
DELETED_VERSIONS = "deletedVersions"
# The position of the latest permanent delete of the "null" version recorded while the entry held another
# version: a "null" create older than it is one of the purged nulls (S3 re-creates "null" in place).
NULL_PURGED_AT = "nullPurgedAt"
# At least the position of every version delete recorded in deletedVersions / nullPurgedAt.
PURGED_UNTIL = "purgedUntil"
# The entry's Z-order address of (upload time, size) (`file_index.rules.zorder`); only when the third index
# is on.
Z_ADDRESS = "zAddress"
# On an entry of a hot user's shard k > 0 (`file_index.rules.placement`): k, so `uploadUser` = "user#k" is
# told apart from a user whose own name is "user#k" (who never has it).
USER_SHARD = "userShard"

# Read from S3 when the deployment's `enrich` names them (`file_index.store.enrich`): the object's content
# type, its user metadata (a map, names lower case) and its tags (a map).
CONTENT_TYPE = "contentType"
META = "meta"
TAGS = "tags"
ENRICHMENT_ATTRIBUTES = (CONTENT_TYPE, META, TAGS)

TTL_ATTRIBUTE = EXPIRES_AT


@dataclass(frozen=True)
class KeyAttribute:
    name: str
    type: AttributeType


@dataclass(frozen=True)
class GlobalIndex:
    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute


PARTITION_KEY = KeyAttribute(OBJECT_KEY, "S")

USER_DATE_INDEX = GlobalIndex(
    name="uploadUser-uploadDate-index",
    partition_key=KeyAttribute(UPLOAD_USER, "S"),
    sort_key=KeyAttribute(UPLOAD_DATE, "S"),
)
BUCKET_SIZE_INDEX = GlobalIndex(
    name="bucketName-size-index",
    partition_key=KeyAttribute(BUCKET_NAME, "S"),
    sort_key=KeyAttribute(SIZE, "N"),
)
GLOBAL_INDEXES = (USER_DATE_INDEX, BUCKET_SIZE_INDEX)
# The bucket's time-ordered index (`bucketTimeIndex`, on by default): the same sharded bucket value, sorted
# by upload time, so a bucket's newest files and a time range of a bucket are read as key ranges (the size
# index could only filter them). It needs no attribute of its own: every entry has both keys, a tombstone
# neither. One more write unit per new entry (two when an overwrite changes the upload time).
BUCKET_DATE_INDEX = GlobalIndex(
    name="bucketName-uploadDate-index",
    partition_key=KeyAttribute(BUCKET_NAME, "S"),
    sort_key=KeyAttribute(UPLOAD_DATE, "S"),
)
# A person's files by size (`uploadUser-size-index`, always on): the same sharded user value as the user
# index, sorted by size, so a user's list by size (both directions) reads a key range instead of the whole
# list. It needs no attribute of its own (every entry has both keys, a tombstone neither). Its copy costs
# one more write unit per new entry, one per overwrite (the copy's upload time changes), two when the
# overwrite changes the size (its sort key), and one per delete (the tombstone leaves the index).
USER_SIZE_INDEX = GlobalIndex(
    name="uploadUser-size-index",
    partition_key=KeyAttribute(UPLOAD_USER, "S"),
    sort_key=KeyAttribute(SIZE, "N"),
)
# The optional third index (`multiAttributeIndex: true`): the same sharded bucket value as the bucket index,
# sorted by Z-order address. Sparse: an entry without `zAddress` (a tombstone, or one written before the
# index was switched on and not yet migrated) is not in it.
Z_ORDER_INDEX = GlobalIndex(
    name="bucketName-zAddress-index",
    partition_key=KeyAttribute(BUCKET_NAME, "S"),
    sort_key=KeyAttribute(Z_ADDRESS, "S"),
)


def global_indexes(
    multi_attribute_index: bool = False, *, bucket_time_index: bool = True
) -> tuple[GlobalIndex, ...]:
    """The table's GSIs: the design's two, the user's size index, the bucket's time index and the
    Z-order index when on."""
    return (
        *GLOBAL_INDEXES,
        USER_SIZE_INDEX,
        *((BUCKET_DATE_INDEX,) if bucket_time_index else ()),
        *((Z_ORDER_INDEX,) if multi_attribute_index else ()),
    )


# A tombstone carries none of these, so it never appears in either index.
GSI_KEY_ATTRIBUTES = frozenset(
    attr.name for index in global_indexes(True) for attr in (index.partition_key, index.sort_key)
)


def create_table_request(
    table_name: str = TABLE_NAME, *, multi_attribute_index: bool = False, bucket_time_index: bool = True
) -> dict[str, Any]:
    """Keyword arguments for boto3's `create_table`, on-demand, as the CDK stack deploys it."""
    indexes = global_indexes(multi_attribute_index, bucket_time_index=bucket_time_index)
    key_attributes = {PARTITION_KEY}
    for index in indexes:
        key_attributes |= {index.partition_key, index.sort_key}
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": PARTITION_KEY.name, "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": attr.name, "AttributeType": attr.type}
            for attr in sorted(key_attributes, key=lambda a: a.name)
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index.name,
                "KeySchema": [
                    {"AttributeName": index.partition_key.name, "KeyType": "HASH"},
                    {"AttributeName": index.sort_key.name, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index in indexes
        ],
    }


# The name index (`file_index.write.names`): a table of its own beside FileMetaData, so that every scan of the
# entries (backfill, reconcile, migrate) sees entries only. Per indexed key (`file_index.rules.name_items`):
# one term item per distinct term of its name, holding its upload time (an overwrite moves them), and one
# item of the key itself (folders, `prefix`), holding only what never changes while the key exists.
NAME_TABLE_NAME = "FileNameIndex"
# Partition key: "{bucket partition}|:{term}", or "{bucket partition}|/" for keys.
NAME_SCOPE = "nameScope"
NAME_SORT = "nameSort"  # sort key: "{uploadDate} {key digest}", or the key itself
NAME_USER = "nameUser"  # the same as NAME_SCOPE with the user's partition value; absent without a user
FILE_NAME = "fileName"  # the name (last "/" segment of the file id), for checking every word of a query
# The orderKey of the entry that wrote the item ("" for a backfill's or repair's): `index-names` removes an
# item only when it is unchanged since it read it (the writer's removals check the entry afterwards).
NAME_SINCE = "since"

NAME_PARTITION_KEY = KeyAttribute(NAME_SCOPE, "S")
NAME_SORT_KEY = KeyAttribute(NAME_SORT, "S")
NAME_USER_INDEX = GlobalIndex(
    name="nameUser-nameSort-index",
    partition_key=KeyAttribute(NAME_USER, "S"),
    sort_key=KeyAttribute(NAME_SORT, "S"),
)


def create_name_table_request(table_name: str = NAME_TABLE_NAME) -> dict[str, Any]:
    """Keyword arguments for boto3's `create_table` of the name index, on-demand, as the stack deploys it."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": NAME_SCOPE, "KeyType": "HASH"},
            {"AttributeName": NAME_SORT, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"} for name in (NAME_SCOPE, NAME_SORT, NAME_USER)
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": NAME_USER_INDEX.name,
                "KeySchema": [
                    {"AttributeName": NAME_USER, "KeyType": "HASH"},
                    {"AttributeName": NAME_SORT, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    }
