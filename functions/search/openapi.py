"""The API's OpenAPI document: its info, its server, its answers, and what corrects Powertools' document.

The info names the security schemes; the server is the base URL a request came in on; the documented
answers refer to the response models; the resolver corrects what Powertools generates (`corrected`).

What only the document needs (Powertools' OpenAPI models, the response models of `search.models`) is
imported when a document is built: it is most of what importing the handler would otherwise cost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
    from pydantic import BaseModel

API_TITLE = "S3 File Search"
API_VERSION = "1.0.0"
# The status of an answer that fails its route's response model (a fault of the function, logged).
RESPONSE_VALIDATION_STATUS = 500
# The documented answers' models (search.models), by name: the routes refer to them by `$ref`, and the
# document gets their schemas when it is built, so that importing the handler builds no response model.
RESPONSE_MODELS = ("FileListPage", "FileItem", "IndexStatus", "ErrorMessage")

# The base URL the request being answered came in on, for the document's `servers`.
_request_base_url: ContextVar[str | None] = ContextVar("request_base_url", default=None)
_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")


def openapi_info() -> dict[str, Any]:
    """The document's metadata, built when the document is (its models cost most of an import)."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey

    sigv4 = APIKey.model_validate(
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": "AWS Signature Version 4 (IAM authorization of API Gateway)",
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    )
    cognito = APIKey.model_validate(
        {
            "type": "apiKey",
            "name": "Authorization",
            "in": "header",
            "description": (
                "The ID token of a person signed in at the stack's Cognito user pool (raw, or after "
                "`Bearer `); access tokens are refused"
            ),
            "x-amazon-apigateway-authtype": "cognito_user_pools",
        }
    )
    return {
        "title": API_TITLE,
        "version": API_VERSION,
        "description": (
            "Find files uploaded to S3 by key, by uploader and time, or by bucket and size. "
            "Errors are JSON objects with a `message` and a 4xx status."
        ),
        "security_schemes": {"sigv4": sigv4, "cognito": cognito},
        "security": [{"sigv4": []}],
    }


def json_answer(description: str, model: str) -> OpenAPIResponse:
    """A documented JSON answer whose body is the response model `model` (one of RESPONSE_MODELS)."""
    schema = {"$ref": f"#/components/schemas/{model}"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


# The documented errors most routes may answer.
ERRORS: dict[int, OpenAPIResponse] = {400: json_answer("Invalid request", "ErrorMessage")}
NOT_FOUND: dict[int, OpenAPIResponse] = {404: json_answer("No such file", "ErrorMessage")}


def response_schemas() -> dict[str, Any]:
    """The JSON schemas of RESPONSE_MODELS and of the models they use, by name.

    The validation schemas: an answer is written as it was validated (`search.models.Answer`).
    """
    from search import models

    schemas: dict[str, Any] = {}
    for name in RESPONSE_MODELS:
        schema = getattr(models, name).model_json_schema(
            ref_template="#/components/schemas/{model}", mode="validation"
        )
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    return schemas


def query_parameter_schemas(query_models: Iterable[type[BaseModel]]) -> dict[str, Any]:
    """The JSON schema of each field of `query_models`, by its name in the query string.

    Powertools documents a query model's fields with their basic type only (a string, an integer);
    the field's own schema also has its bounds, its choices, its default and its title. A default of
    None is left out, as Powertools leaves it out for a parameter of a route's signature.
    """
    schemas: dict[str, Any] = {}
    for model in query_models:
        for name, schema in model.model_json_schema(by_alias=True)["properties"].items():
            schemas[name] = {
                key: value for key, value in schema.items() if key != "default" or value is not None
            }
    return schemas


def corrected(document: dict[str, Any], query_models: Iterable[type[BaseModel]]) -> dict[str, Any]:
    """Powertools' `document` (a dict, by alias) with what this API answers and takes, in place.

    Powertools documents a 422 with its own error shape on every route, but invalid input is answered
    400 with `{"message"}` here, and a redirect has no JSON body; nor is an answer that fails its response
    model answered in Powertools' shape (`RESPONSE_VALIDATION_STATUS`): it is a 500 like any other fault.
    The response models' schemas are added, after Powertools' own.
    The query parameters of `query_models` get their fields' schemas (`query_parameter_schemas`), and the
    models themselves, which Powertools adds as schemas of their own, are left out.
    """
    from aws_lambda_powertools.event_handler.openapi.models import ParameterInType

    query_models = tuple(query_models)
    parameter_schemas = query_parameter_schemas(query_models)
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.get("responses", {})
            responses.pop(422, None)
            responses.pop(RESPONSE_VALIDATION_STATUS, None)
            for status, response in responses.items():
                if 300 <= int(status) < 400:
                    response.pop("content", None)
            for parameter in operation.get("parameters", ()):
                if (
                    parameter.get("in") == ParameterInType.query
                    and parameter.get("name") in parameter_schemas
                ):
                    parameter["schema"] = parameter_schemas[parameter["name"]]
    components = document.setdefault("components", {})
    # Powertools' 422 answer, and the query models (parameters, not bodies): no answer or body has them.
    # The response models' schemas are ours (Powertools writes the empty serialization schema of some).
    response = response_schemas()
    unused = {
        "HTTPValidationError",
        "ValidationError",
        *(model.__name__ for model in query_models),
        *response,
    }
    schemas = {name: schema for name, schema in components.get("schemas", {}).items() if name not in unused}
    components["schemas"] = schemas | response
    return document


def request_base_url(event: Mapping[str, Any]) -> str:
    """The URL the API was called at, before the route: scheme, host and API Gateway's stage or base path.

    API Gateway names the domain the client called (`requestContext.domainName`) and the full path of the
    request (`requestContext.path`: the stage on an execute-api domain, the base path mapping on a custom
    domain, then the route). An event without a domain name reached the function some other way (the
    local stack's stand-in, whose stage is in no URL): its base is the bare host. The scheme is
    X-Forwarded-Proto's (API Gateway's is https), http without one; without a usable Host header the
    base is the path alone.
    """
    headers = {str(name).lower(): str(value) for name, value in (event.get("headers") or {}).items()}
    context = event.get("requestContext") or {}
    prefix = ""
    route_path = str(event.get("path") or "")
    full_path = str(context.get("path") or "")
    if context.get("domainName") and route_path and full_path.endswith(route_path):
        prefix = full_path[: len(full_path) - len(route_path)].rstrip("/")
    host = headers.get("host", "").strip()
    if not _HOST.fullmatch(host):
        return prefix or "/"
    scheme = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    if scheme not in ("http", "https"):
        scheme = "http"
    return f"{scheme}://{host}{prefix}"


def serve_from(event: Mapping[str, Any]) -> Token[str | None]:
    """While the request `event` is answered, documents name its base URL as their server; the token
    goes back to `stop_serving`."""
    return _request_base_url.set(request_base_url(event))


def stop_serving(token: Token[str | None]) -> None:
    _request_base_url.reset(token)


def request_server() -> str | None:
    """The base URL of the request being answered (`serve_from`), or None outside a request."""
    return _request_base_url.get()
