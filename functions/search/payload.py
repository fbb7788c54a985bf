"""The size of an answer in Lambda's response, so that a page of a list always fits.

Lambda refuses a response payload over 6 MB (`RESPONSE_LIMIT_BYTES`), and API Gateway turns that into a
502. The payload is the handler's return value as the runtime serializes it: the HTTP body is a JSON
string inside that object, so every `"` and `\\` of the body is escaped once more. The body itself is
written with non-ASCII text as UTF-8 (`dumps`): escaped as `\\uXXXX`, a character of two or three bytes
would take six, and twelve after the runtime's own escaping when it escapes too. Python runtimes before
3.12 do escape non-ASCII in their serialization of the return value; 3.12 and later write UTF-8.

A page of any list (entries, names, folders, filters) keeps its items, and a folder page its sub-folders,
within `PAGE_ITEMS_BUDGET_BYTES` of payload and ends early with a cursor when the next item would not fit;
the rest of the limit is left for the status line, headers, the cursor (at most
`search.cursor.MAX_CURSOR_LENGTH`) and the envelope.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

RESPONSE_LIMIT_BYTES = 6 * 1024 * 1024
PAGE_ITEMS_BUDGET_BYTES = 5 * 1024 * 1024
# How this interpreter's Lambda runtime writes non-ASCII text in the response payload.
RUNTIME_ESCAPES_NON_ASCII = sys.version_info < (3, 12)


def dumps(value: Any) -> str:
    """The body's JSON: compact, non-ASCII text as itself (the handler's serializer writes the same)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def payload_bytes(body: str, *, escapes_non_ascii: bool = RUNTIME_ESCAPES_NON_ASCII) -> int:
    """Bytes `body` takes inside the runtime's JSON of the response, quotes included."""
    return len(json.dumps(body, ensure_ascii=escapes_non_ascii).encode("utf-8"))


def items_within(
    items: Sequence[Any],
    budget_bytes: int = PAGE_ITEMS_BUDGET_BYTES,
    *,
    escapes_non_ascii: bool = RUNTIME_ESCAPES_NON_ASCII,
) -> int:
    """How many leading `items` fit in `budget_bytes` of payload, as elements of a JSON array.

    At least one, so that paging always moves on (an item is at most a few KiB: keys and names are
    at most 1 KiB each).
    """
    used = 1  # the brackets, less the comma the last item does not have
    for count, item in enumerate(items):
        # Less the quotes of a lone string, plus a comma.
        used += payload_bytes(dumps(item), escapes_non_ascii=escapes_non_ascii) - 2 + 1
        if used > budget_bytes:
            return max(count, 1)
    return len(items)


def array_payload_bytes(values: Sequence[Any], *, escapes_non_ascii: bool = RUNTIME_ESCAPES_NON_ASCII) -> int:
    """Bytes `values` take in the payload as a JSON array inside the body."""
    return payload_bytes(dumps(list(values)), escapes_non_ascii=escapes_non_ascii) - 2
