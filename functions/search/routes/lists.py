"""What the list routes `GET /files` and `GET /me/files` share: the checks of their query and the page.

Their query parameters are one model, `search.queries.ListQuery`, which Powertools validates; the checks
it does not make (repeated and unknown parameters, whole numbers, `meta.`/`tag.` filters) run in
`check_list_query` and `list_page`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, get_args

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from file_index.read.reader import PAGE_ROUNDS
from file_index.read.shard_reader import MAX_QUERY_ITEMS
from search.composition import file_search
from search.observability import ListFigures, logger, query_shape, record_list, record_shape
from search.queries import ListParameters, ListQuery, build_query
from search.routes.query_string import check_whole_numbers, named_filters, refuse_repeated, refuse_unknown

if TYPE_CHECKING:
    from search import models
else:
    from search.routes import models

# ListQuery's parameters (their names on the wire), as a refusal of an unknown one lists them; any other is
# refused, so that a misspelling is not ignored.
LIST_PARAMETERS = tuple(field.alias or name for name, field in ListQuery.model_fields.items())
# Filters on enriched user metadata and tags: `meta.NAME=VALUE`, `tag.NAME=VALUE` (any NAME).
FILTER_PREFIXES = ("meta.", "tag.")
INTEGER_PARAMETERS = tuple(
    field.alias or name
    for name, field in ListQuery.model_fields.items()
    if int in (field.annotation, *get_args(field.annotation))
)

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
    """One page of a list route: `query` with `chosen` in place of its fields of the same names;
    `commonPrefixes` are answered relative to `folder` (whose prefix the list's prefix starts with);
    `owner_names` gives each item with an uploadUser its `ownerName`."""
    given = event.multi_value_query_string_parameters or {}
    refuse_unknown(given, route, LIST_PARAMETERS, FILTER_PREFIXES)
    check_whole_numbers(event.query_string_parameters or {}, INTEGER_PARAMETERS)
    filters = {"meta": named_filters(given, "meta."), "tags": named_filters(given, "tag.")}
    # Not validated again: `chosen` are the route's own (a person's user name, a prefix in their folder).
    params = ListParameters.model_construct(**(query.model_dump() | chosen | filters))
    record_shape(query_shape(params))
    result = file_search().list_files(
        build_query(params), limit=params.limit, cursor=params.cursor, owner_names=owner_names
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
