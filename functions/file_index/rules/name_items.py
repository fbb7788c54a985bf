"""The name index's items: what a live entry's name is found by, and where each item lives.

A file's **name** is the last `/` segment of its file id. For each live entry the name index
(`schema.NAME_TABLE_NAME`) holds:

- one **term item** per distinct term of its name (`name_terms.name_terms`): `nameScope` (partition key)
  `{bucket partition}|:{term}`, `nameSort` (sort key) `{uploadDate} {key digest}` (so a term's items read
  newest first), `nameUser` (the GSI's partition key) `{user partition}|:{term}`, and the `objectKey`,
  `fileName`, `size`, `uploadDate` a search filters on before reading the entry;
- one **key item**: `nameScope` `{bucket partition}|/`, `nameSort` the key, `nameUser` `{user partition}|/`.

Pure: the items are built here, written by `file_index.write.names` and read by `file_index.read`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeGuard

from file_index.rules import schema
from file_index.rules.name_terms import name_terms

# The longest `ext` a list takes, in characters.
MAX_EXTENSION = 64
# `nameScope` suffix of the key items (no term starts with "/": a term is letters and digits).
KEY_SCOPE = "/"
SCOPE_SEPARATOR = "|"
# `nameScope` suffix mark of the term items (`{partition}|:{term}`).
TERM_MARK = ":"


def name_of(file_id: str) -> str:
    """A file's name: the last `/` segment of its file id."""
    return file_id.rsplit("/", 1)[-1]


def normalize_extension(ext: str) -> str:
    """An `ext` parameter as compared: without a leading dot, case-folded."""
    return ext.removeprefix(".").casefold()


def has_extension(name: str, ext: str) -> bool:
    """`name` ends with "." + `ext` (normalized), case-insensitively: `a.TAR.gz` has `gz` and `tar.gz`."""
    return bool(ext) and name.casefold().endswith("." + ext)


def key_scope(partition: str) -> str:
    return f"{partition}{SCOPE_SEPARATOR}{KEY_SCOPE}"


def key_digest(object_key: str) -> str:
    return hashlib.blake2b(object_key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def term_scope(partition: str, term: str) -> str:
    """`nameScope` (or `nameUser`, with a user partition) of the term items of `term`."""
    return f"{partition}{SCOPE_SEPARATOR}{TERM_MARK}{term}"


def time_term(upload_date: str, object_key: str) -> str:
    """`nameSort` of a term item: the entry's upload time, then its key's digest (newest last)."""
    return f"{upload_date} {key_digest(object_key)}"


def term_items(
    entry: Mapping[str, Any], since: str, terms: Callable[[str], Iterable[str]] = name_terms
) -> list[dict[str, Any]]:
    """The term items of a live entry: one per distinct term of its name (`terms`: `name_terms.name_terms`;
    the bench prices other term sets), in its stored `bucketName` (and `uploadUser`) partition, ordered by
    its `uploadDate`."""
    object_key = str(entry[schema.OBJECT_KEY])
    bucket_partition = str(entry[schema.BUCKET_NAME])
    user_partition = entry.get(schema.UPLOAD_USER)
    name = name_of(str(entry.get(schema.FILE_ID) or object_key))
    upload_date = str(entry[schema.UPLOAD_DATE])
    sort_key = time_term(upload_date, object_key)
    items: list[dict[str, Any]] = []
    for term in terms(name):
        item: dict[str, Any] = {
            schema.NAME_SCOPE: term_scope(bucket_partition, term),
            schema.NAME_SORT: sort_key,
            schema.OBJECT_KEY: object_key,
            schema.FILE_NAME: name,
            schema.SIZE: entry[schema.SIZE],
            schema.UPLOAD_DATE: upload_date,
            schema.NAME_SINCE: since,
        }
        if user_partition is not None:
            item[schema.NAME_USER] = term_scope(str(user_partition), term)
        items.append(item)
    return items


def key_item(entry: Mapping[str, Any], since: str) -> dict[str, Any]:
    """The key item of a live entry (its stored `bucketName` and `uploadUser` partition values)."""
    object_key = str(entry[schema.OBJECT_KEY])
    user_partition = entry.get(schema.UPLOAD_USER)
    item = {
        schema.OBJECT_KEY: object_key,
        schema.FILE_NAME: name_of(str(entry.get(schema.FILE_ID) or object_key)),
        schema.NAME_SINCE: since,
        schema.NAME_SCOPE: key_scope(str(entry[schema.BUCKET_NAME])),
        schema.NAME_SORT: object_key,
    }
    if user_partition is not None:
        item[schema.NAME_USER] = key_scope(str(user_partition))
    return item


def item_key(item: Mapping[str, Any]) -> dict[str, Any]:
    return {schema.NAME_SCOPE: item[schema.NAME_SCOPE], schema.NAME_SORT: item[schema.NAME_SORT]}


def entry_items(
    entry: Mapping[str, Any], since: str, terms: Callable[[str], Iterable[str]] = name_terms
) -> list[dict[str, Any]]:
    """Every item a live entry has: its key item and its term items (`terms`, as `term_items`)."""
    return [key_item(entry, since), *term_items(entry, since, terms)]


def is_live_entry(item: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """An entry in the indexes (not a tombstone, not a bare bookkeeping item)."""
    return item is not None and not item.get(schema.DELETED) and schema.BUCKET_NAME in item
