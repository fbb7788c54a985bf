"""What a name is found by: the terms a name is indexed under, and whether a query word matches it.

A **term** is a short string (at most `MAX_TERM` characters) under which the name index keeps one item per
file, ordered by upload time (`file_index.names`). `name_terms(name)` is every term of a name;
`lookup_term(word)` is the one term whose items hold every name `word` matches (so a search reads the
items of that term only), and `matches(name, query_words)` decides on the name itself.

The rule for a query word (`query_words` cuts a query into them): it matches where it is the start of a
word of the name (`words`), the name's letters and digits read on from there as typed.
"""

from __future__ import annotations

from collections.abc import Sequence

from file_index.names import words

# The longest term: a query word longer than this is looked up by its first MAX_TERM characters and
# checked whole on each item.
MAX_TERM = 8


def query_words(q: str) -> list[str]:
    """The words of a query as they are looked up and matched, in order, repeats dropped."""
    return list(dict.fromkeys(words(q)))


def name_terms(name: str) -> list[str]:
    """Every term `name` is indexed under, in a stable order, each once."""
    terms: dict[str, None] = {}
    for word in words(name):
        for length in range(1, min(len(word), MAX_TERM) + 1):
            terms.setdefault(word[:length])
    return list(terms)


def lookup_term(word: str) -> str:
    """The term whose items hold every name that `word` (one of `query_words`) matches."""
    return word[:MAX_TERM]


def matches(name: str, query: Sequence[str]) -> bool:
    """Every word of `query` (from `query_words`) matches `name`."""
    name_words = words(name)
    return all(any(word.startswith(part) for word in name_words) for part in query)
