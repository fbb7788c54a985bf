"""The search API's REST resolver: path parameters over several segments, and the document corrected."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from search.openapi import corrected, request_server

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.models import OpenAPI
    from pydantic import BaseModel


class SearchResolver(APIGatewayRestResolver):
    """The REST resolver with path parameters that may span several segments, and its document corrected.

    Powertools' parameters stop at "/", and S3 keys contain it: a client may send it raw
    (`/files/a/b.txt`) or as `%2F`; both must reach the route. Static routes match exactly, so
    `/files/` (an empty key) reaches the key route and is refused with a message, not listed.

    Powertools has no public hook for this: `_compile_regex(rule, base_regex)` is the static method its
    `route()` calls once per rule; tests/unit/test_search_powertools_contract.py pins that contract.
    """

    def __init__(self, *, query_models: tuple[type[BaseModel], ...] = (), **kwargs: Any) -> None:
        """`query_models`: the models of query parameters (`Annotated[Model, Query()]`) the routes take,
        whose fields the document describes with their schemas; `kwargs` as APIGatewayRestResolver's."""
        super().__init__(**kwargs)
        self.query_models = query_models

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "^{}$") -> re.Pattern[str]:
        return re.compile(base_regex.format(re.sub(r"<(\w+)>", r"(?P<\1>.*)", rule)))

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPI:
        """Powertools' document, corrected (`search.openapi.corrected`), naming the server it is served from.

        `/docs` and `/openapi.json` both come through this method, so they show the same document; while
        a request is answered, its server is the base URL the request came in on.
        """
        from aws_lambda_powertools.event_handler.openapi.models import OpenAPI, Server

        base_url = request_server()
        if base_url is not None:
            kwargs["servers"] = [Server(url=base_url)]
        document = super().get_openapi_schema(**kwargs).model_dump(by_alias=True, exclude_none=True)
        return OpenAPI.model_validate(corrected(document, self.query_models))
