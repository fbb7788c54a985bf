"""The search function's logger and metrics, and what each request records for its metrics.

A route records the request's query shape (`record_shape`) and, for a list, what reading the page took
(`record_list`); `search.handler.lambda_handler` emits one set of metrics per request that recorded a
shape, whatever its answer (the metric names and dimension are written there).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, replace

from aws_lambda_powertools import Logger, Metrics

from search.queries import ListParameters

DEFAULT_METRICS_NAMESPACE = "S3FileSearch"
DEFAULT_SERVICE_NAME = "search"

logger = Logger(service="file-search")
metrics = Metrics(namespace=DEFAULT_METRICS_NAMESPACE)


@dataclass(frozen=True)
class ListFigures:
    """What reading one page of a list took and gave."""

    items_read: int  # DynamoDB's ScannedCount: filtered items and read-ahead included
    items_returned: int
    queries: int  # DynamoDB Query calls


@dataclass(frozen=True)
class RequestFigures:
    """What the request being answered recorded: its query shape, and a list's figures."""

    shape: str | None = None
    list_figures: ListFigures | None = None


# None outside a request (`start_request`).
_request_figures: ContextVar[RequestFigures | None] = ContextVar("request_figures", default=None)


def record_shape(shape: str) -> None:
    """Name the query shape of the request being answered: it gets metrics, with this dimension."""
    _request_figures.set(replace(_request_figures.get() or RequestFigures(), shape=shape))


def record_list(figures: ListFigures) -> None:
    """Keep what reading the request's page took, for its metrics."""
    _request_figures.set(replace(_request_figures.get() or RequestFigures(), list_figures=figures))


def start_request() -> Token[RequestFigures | None]:
    """Start recording a new request's figures; the token goes back to `end_request`."""
    return _request_figures.set(RequestFigures())


def end_request(token: Token[RequestFigures | None]) -> RequestFigures:
    """What the request recorded since `start_request` returned `token`; the recording ends."""
    figures = _request_figures.get() or RequestFigures()
    _request_figures.reset(token)
    return figures


def query_shape(params: ListParameters) -> str:
    """The shape of a list request for the metrics: what it selects by and which bounds it has.

    `user`, `user+date`, `user+range`, `bucket`, `bucket+size`, and the box queries `user+size`,
    `user+date+size`, `user+range+size`, `bucket+time` (a date or a range) and `bucket+size+time`. A
    list by name is its scope and what narrows it: `+q`, `+prefix`, `+ext`, `+enriched`.
    """
    sized = params.min_size is not None or params.max_size is not None
    ranged = params.from_ is not None or params.to is not None
    if params.narrows_by_name:
        scope = "user" if params.user is not None else "bucket" if params.bucket is not None else "invalid"
        by = "+q" if params.q is not None else ""
        by += "+prefix" if params.prefix is not None or params.delimiter is not None else ""
        by += "+ext" if params.ext is not None else ""
        enriched = params.content_type is not None or params.meta or params.tags
        by += "+enriched" if enriched else ""
        return f"{scope}{by}"
    if params.user is not None:
        shape = "user+date" if params.date is not None else "user+range" if ranged else "user"
        return f"{shape}+size" if sized else shape
    if params.bucket is not None:
        shape = "bucket+size" if sized else "bucket"
        return f"{shape}+time" if params.date is not None or ranged else shape
    return "invalid"
