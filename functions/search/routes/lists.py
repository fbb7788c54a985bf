"""What the list routes `GET /files` and `GET /me/files` share: their query model and the page they answer.

The query parameters are one model, `ListQuery`, which Powertools validates; the checks it does not make
(repeated and unknown parameters, whole numbers, `meta.`/`tag.` filters) run in `list_page` and
`check_list_query`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent
from pydantic import BaseModel, Field

from file_index.read.reader import PAGE_ROUNDS
from file_index.read.shard_reader import MAX_QUERY_ITEMS
from search.composition import file_search
from search.cursor import MAX_CURSOR_LENGTH
from search.observability import ListFigures, logger, query_shape, record_list, record_shape
from search.queries import MAX_KEY_BYTES, MAX_PREFIX_BYTES, ListParameters, build_query
from search.routes.query_string import check_whole_numbers, named_filters, refuse_repeated, refuse_unknown

if TYPE_CHECKING:
    from search import models
else:
    from search.routes import models

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# Sizes are int64 to clients; a larger bound would not survive DynamoDB's 38-digit numbers anyway.
MAX_SIZE = 2**63 - 1
# Bucket names are at most 63 characters; user names are parts of keys (at most 1024 bytes).
MAX_NAME_LENGTH = MAX_KEY_BYTES


class ListQuery(BaseModel):
    """The query parameters of both list routes (on the wire, the aliases), validated by Powertools.

    Each field is documented as a query parameter with its JSON schema (`search.openapi`). A parameter
    given twice reaches the model as its first value: `check_list_query` refuses it.
    """

    user: str | None = Field(None, description="Uploader whose files to list", max_length=MAX_NAME_LENGTH)
    bucket: str | None = Field(None, description="Bucket whose files to list", max_length=MAX_NAME_LENGTH)
    date: str | None = Field(None, description="One UTC day, YYYY-MM-DD; not with from or to")
    from_: str | None = Field(
        None, alias="from", description="Earliest upload time, inclusive (a day or a timestamp)"
    )
    to: str | None = Field(None, description="Latest upload time, inclusive (a day: up to its end)")
    min_size: int | None = Field(
        None, alias="minSize", ge=0, le=MAX_SIZE, description="Smallest size in bytes, inclusive"
    )
    max_size: int | None = Field(
        None, alias="maxSize", ge=0, le=MAX_SIZE, description="Largest size in bytes, inclusive"
    )
    order: Literal["asc", "desc"] | None = Field(
        None, description="Direction of the order the answer's `orderedBy` names"
    )
    sort: Literal["uploadDate", "size"] | None = Field(
        None,
        description=(
            "The order of the list: `uploadDate` (a bucket's newest first unless `order=asc`; needs the "
            "bucket's time index, `bucketTimeIndex`) or `size` (largest first unless `order=asc`); "
            "without it the plan's (see the table above)"
        ),
    )
    limit: int = Field(
        DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description=(
            "Most items per page; a page may hold fewer and still have a nextCursor (its keys are very "
            "long and it stays under Lambda's 6 MB response limit, or a filtered page reached its "
            "read bound)"
        ),
    )
    q: str | None = Field(
        None,
        description=(
            "Words of the file's name: each must start a word of the name (case and accents ignored); "
            "newest first unless `order=asc`"
        ),
    )
    prefix: str | None = Field(
        None,
        description=(
            f"Only keys that start with this (a folder, e.g. `USER001/reports/`); at most {MAX_PREFIX_BYTES} "
            "bytes of UTF-8, the longest the name index's key condition takes (its 1,024-byte key less 4)"
        ),
    )
    delimiter: str | None = Field(
        None, description="`/`: answer the sub-folders of `prefix` in `commonPrefixes`"
    )
    ext: str | None = Field(
        None, description="The name's extension, case-insensitive (`pdf`, `.PDF`, `tar.gz`)"
    )
    content_type: str | None = Field(
        None,
        alias="contentType",
        description=(
            "The object's content type, exact (`image/png`) or any of a major type (`image/*`); with "
            "`enrich` naming contentType. Also `meta.NAME=VALUE` (user metadata) and `tag.NAME=VALUE` "
            "(tags), with `enrich` naming metadata or tags: every one given must match"
        ),
    )
    cursor: str | None = Field(
        None, max_length=MAX_CURSOR_LENGTH, description="nextCursor of the previous page"
    )


# ListQuery's parameters as a refusal of an unknown one lists them; any other is refused, so that a
# misspelling is not ignored.
LIST_PARAMETERS = (
    "user",
    "bucket",
    "date",
    "from",
    "to",
    "minSize",
    "maxSize",
    "q",
    "prefix",
    "delimiter",
    "ext",
    "contentType",
    "order",
    "sort",
    "limit",
    "cursor",
)
# Filters on enriched user metadata and tags: `meta.NAME=VALUE`, `tag.NAME=VALUE` (any NAME).
FILTER_PREFIXES = ("meta.", "tag.")
INTEGER_PARAMETERS = ("minSize", "maxSize", "limit")

LIST_DESCRIPTION = f"""\
Give exactly one of `user` or `bucket`, and any of `minSize`/`maxSize` (bytes) and `from`/`to` or
`date` (upload time): a box, every bound inclusive. `from`/`to` take a day or an ISO-8601 timestamp (UTC
if no offset); `date` is one UTC day.

**Order.** `orderedBy` in the answer names it; `order=desc`/`asc` flips it:

| request | read from | `orderedBy` | default |
|---|---|---|---|
| `user`, any bounds | upload-time index; size bounds filter | `uploadDate` | ascending |
| `user`, `sort=size` | the user's size index; time bounds filter | `size` | descending |
| `bucket`, size bounds or none | size index | `size` | descending |
| `bucket`, time bounds and no size bounds | the bucket's time index | `uploadDate` | descending |
| `bucket`, time and size bounds | the cheapest plan (below) | `uploadDate`, `size`, `zAddress` | descending |
| `bucket`, `sort=uploadDate` | the bucket's time index; size bounds filter | `uploadDate` | descending |
| `bucket`, `sort=size` | size index; time bounds filter | `size` | descending |

The bucket's time index exists unless the deployment switched it off (`bucketTimeIndex: false`; then
time bounds without size bounds read as time and size bounds do, and `sort=uploadDate` is a 400). The
Z-order index answers once it is switched on (`multiAttributeIndex`) and every entry has its address.
With time and size bounds the plans (the bucket's time index filtering size, the size index filtering
time, the Z-order index of (time, size) when on) are weighed with the statistics of the last backfill or
reconcile, else with those the indexer keeps of a sample of uploads (`statistics` in `GET /status`);
without any the Z-order index is taken when it can answer, else the size index. `minSize=0` is no bound.

Ties come in a fixed order. A `zAddress` answer is neither by size nor by time: Z-order interleaves both,
so a box reads little outside itself. A cursor keeps the order its list started with.

**Cost.** Without a filter a page reads the items it returns (one query per shard of the bucket, or
of a hot user). A filtered page reads what its key range holds and keeps what matches; the Z-order
index's walk jumps over the stretches of its range outside the box. A page
makes at most {PAGE_ROUNDS} rounds of DynamoDB queries, one after the other (a round queries the shards
that need it in parallel, one query each, reading at most {MAX_QUERY_ITEMS} items), so it waits for at
most {PAGE_ROUNDS} query latencies; then it ends with what it found and a `nextCursor`: **a page may hold
fewer than `limit` items, even none, and still have a `nextCursor`**. Keep following `nextCursor` until
it is null; a page may also be empty when the previous one ended the list.

`indexState` BUILDING says the index is being built, so the answer may miss files.
"""


def check_list_query(event: BaseProxyEvent) -> None:
    """BadRequest if a parameter of ListQuery is given more than once (naming every repeated one), as
    request validation answers for a route's own parameters; a list route checks this first."""
    refuse_repeated(event.multi_value_query_string_parameters or {}, LIST_PARAMETERS)


def list_page(
    route: str,
    event: BaseProxyEvent,
    query: ListQuery,
    *,
    folder: str = "",
    owner_names: Callable[[Iterable[str]], dict[str, str]] | None = None,
    **chosen: Any,
) -> Response[models.FileListPage]:
    """One page of a list route: `query` with `chosen` in place of its fields of the same names (as
    ListParameters names them); `commonPrefixes` are answered relative to `folder` (whose prefix the
    list's prefix starts with); `owner_names` gives each item with an uploadUser its `ownerName`."""
    given = event.multi_value_query_string_parameters or {}
    refuse_unknown(given, route, LIST_PARAMETERS, FILTER_PREFIXES)
    check_whole_numbers(event.query_string_parameters or {}, INTEGER_PARAMETERS)
    fields = query.model_dump(exclude={"limit", "cursor"}) | chosen
    params = ListParameters(**fields, meta=named_filters(given, "meta."), tags=named_filters(given, "tag."))
    record_shape(query_shape(params))
    result = file_search().list_files(
        build_query(params), limit=query.limit, cursor=query.cursor, owner_names=owner_names
    )
    record_list(
        ListFigures(
            items_read=result.scanned_count, items_returned=len(result.items), queries=result.request_count
        )
    )
    logger.info(
        "listed",
        extra={
            "orderedBy": str(result.ordered_by),
            "count": len(result.items),
            "scanned": result.scanned_count,
            "queries": result.request_count,
            "indexState": result.index_state.value,
        },
    )
    body: dict[str, Any] = {
        "items": result.items,
        "nextCursor": result.next_cursor,
        "orderedBy": str(result.ordered_by),
        "indexState": result.index_state.value,
    }
    if result.common_prefixes is not None:
        body["commonPrefixes"] = [common.removeprefix(folder) for common in result.common_prefixes]
    page = models.FileListPage.model_validate(body)
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=page)
