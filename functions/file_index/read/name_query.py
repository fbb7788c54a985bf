"""A name list's query and page (`NameQuery`, `NamePage`), and the checks every name plan makes of an entry.

The plans that answer a `NameQuery` (`name_reader`, `term_reader`, `folder_reader`) share these.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from file_index.read.file_queries import BucketQuery, UserQuery
from file_index.rules import name_terms, schema
from file_index.rules.name_items import has_extension

# The orders a name list may have (the API's `orderedBy`).
ORDER_UPLOAD_DATE = "uploadDate"
ORDER_SIZE = "size"
ORDER_KEY = "objectKey"
DELIMITER = "/"


@dataclass(frozen=True)
class NameQuery:
    """A user's or a bucket's list (`scope`, with its bounds) narrowed by name, folder and extension."""

    listing: UserQuery | BucketQuery
    words: tuple[str, ...] = ()
    prefix: str | None = None
    delimiter: str | None = None
    ext: str | None = None
    order_by: str = ORDER_UPLOAD_DATE
    ascending: bool = False
    # Filters on what `enrich` stores (`file_index.store.enrich`): the content type (exact, or `major/*`), and
    # (name, value) pairs of user metadata and of tags, all of which must match.
    content_type: str | None = None
    meta: tuple[tuple[str, str], ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    # `q` as given: when given, its query words are `name_terms.query_words(q)` (else `words`).
    q: str | None = None

    @property
    def uses_keys(self) -> bool:
        return self.prefix is not None or self.delimiter is not None

    @property
    def filters_only(self) -> bool:
        """Narrowed only by enrichment filters: the list's own index, each entry checked."""
        return not (self.words or self.ext or self.uses_keys)

    @property
    def term_words(self) -> tuple[str, ...]:
        """The query words as every plan matches them (`name_terms.query_words`)."""
        return tuple(name_terms.query_words(self.q)) if self.q is not None else self.words

    @property
    def term_lookup_words(self) -> tuple[str, ...]:
        """The words the terms plan's one term is chosen from: the query's, and the extension's."""
        return self.term_words + (tuple(name_terms.query_words(self.ext)) if self.ext else ())


@dataclass(frozen=True)
class NamePage:
    """A page of a name list: items, sub-folders (a folder list), the next page's position, the read cost.

    `scanned_count`: items read (name items and entries); `request_count`: requests made; `round_trips`:
    how many of them ran one after the other (the terms plan's; 0 where a plan does not count them).
    """

    items: list[dict[str, Any]]
    next_position: dict[str, Any] | None
    common_prefixes: list[str] | None
    scanned_count: int
    request_count: int
    ordered_by: str
    round_trips: int = 0
    # The position just after the first `count` items (1 <= count <= len(items)).
    _after: Callable[[int], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    # A folder list's sub-folders answered before each item (in key order, they interleave).
    _folders_before: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def cursor_after(self, count: int) -> dict[str, Any]:
        """The position just after the page's first `count` items (at least one): the next page goes on
        from there. A folder list's sub-folders after that item come again on the next page (`cut`)."""
        if not 1 <= count <= len(self.items) or self._after is None:
            raise ValueError(f"a page of {len(self.items)} items has no cursor after {count}")
        return self._after(count)

    def cut(self, count: int) -> NamePage:
        """This page cut to its first `count` items (and the sub-folders answered before the last of them),
        with the position just after them."""
        folders = self.common_prefixes
        if folders is not None and self._folders_before:
            folders = folders[: self._folders_before[count - 1]]
        return replace(
            self,
            items=self.items[:count],
            next_position=self.cursor_after(count),
            common_prefixes=folders,
            _folders_before=self._folders_before[:count],
        )


def name_matches(query: NameQuery, name: str) -> bool:
    """`name` matches every query word (`name_terms.matches`) and has the query's extension."""
    if query.term_words and not name_terms.matches(name, query.term_words):
        return False
    return not (query.ext and not has_extension(name, query.ext))


def enrichment_matches(query: NameQuery, item: Mapping[str, Any]) -> bool:
    if query.content_type is not None:
        held = str(item.get(schema.CONTENT_TYPE) or "").split(";")[0].strip().casefold()
        wanted = query.content_type.casefold()
        if not (held.startswith(wanted[:-1]) if wanted.endswith("/*") else held == wanted):
            return False
    meta = item.get(schema.META) or {}
    tags = item.get(schema.TAGS) or {}
    return all(meta.get(name) == value for name, value in query.meta) and all(
        tags.get(name) == value for name, value in query.tags
    )


def folder_of(query: NameQuery, prefix: str, key: str) -> str | None:
    if query.delimiter is None:
        return None
    rest = key[len(prefix) :]
    cut = rest.find(query.delimiter)
    return None if cut < 0 else prefix + rest[: cut + 1]
