"""The docs router: `GET /openapi.json` (the OpenAPI document) and `GET /docs` (the Swagger UI).

The Swagger UI is registered on the first request for it: what it needs is imported then.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router

from search.openapi import openapi_info

DOCS_PATH = "/docs"

router = Router()

_docs_lock = threading.Lock()
_docs_enabled = False


def openapi_json(resolver: APIGatewayRestResolver) -> str:
    """The API's OpenAPI document, naming the server of the request being answered (else "/")."""
    from aws_lambda_powertools.event_handler.openapi.models import Server

    return resolver.get_openapi_json_schema(servers=[Server(url="/")], **openapi_info())


def is_docs_request(event: Mapping[str, Any]) -> bool:
    """Whether `event` asks for the Swagger UI."""
    return str(event.get("path") or "").rstrip("/") == DOCS_PATH


def enable_docs(resolver: APIGatewayRestResolver) -> None:
    """Serve `GET /docs` (the Swagger UI) on `resolver`, registering it on first use; safe from several
    threads."""
    global _docs_enabled
    with _docs_lock:
        if not _docs_enabled:
            resolver.enable_swagger(path=DOCS_PATH, **openapi_info())
            _docs_enabled = True


@router.get("/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    # The server is the URL this request came in on, so "Try it out" in /docs and generated clients
    # reach this API (its stage when deployed, the bare host on the local stack).
    resolver = router.api_resolver
    assert isinstance(resolver, APIGatewayRestResolver)  # set when the resolver includes this router
    body = openapi_json(resolver)
    return Response(status_code=HTTPStatus.OK, content_type=content_types.APPLICATION_JSON, body=body)
