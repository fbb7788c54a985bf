"""docs/openapi.json is exactly the document the search API generates and serves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from local_stack.api_gateway import to_rest_event
from search import handler, openapi

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_kept_document_equals_the_generated_one() -> None:
    generated = json.loads(handler.openapi_json())
    assert json.loads(DOCUMENT.read_text(encoding="utf-8")) == generated, (
        "docs/openapi.json is stale: regenerate with `python -m search.handler > docs/openapi.json`"
    )


def test_the_document_names_every_route_and_parameter() -> None:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    assert set(document["paths"]) == {
        "/files",
        "/files/{objectKey}",
        "/download/{objectKey}",
        "/status",
        "/me/files",
        "/me/files/{objectKey}",
        "/me/download/{objectKey}",
        "/me/links/{objectKey}",
        "/me/previews/{objectKey}",
        "/me/people",
        "/me/uploads",
        "/me/uploads/parts",
        "/me/uploads/complete",
        "/me/uploads/abort",
    }
    link = document["paths"]["/me/links/{objectKey}"]["get"]
    assert {parameter["name"] for parameter in link["parameters"]} == {"objectKey", "expiresIn"}
    assert "may stop working before `expiresAt`" in link["description"]
    me_names = {parameter["name"] for parameter in document["paths"]["/me/files"]["get"]["parameters"]}
    assert me_names == {parameter["name"] for parameter in document["paths"]["/files"]["get"]["parameters"]}
    names = {parameter["name"] for parameter in document["paths"]["/files"]["get"]["parameters"]}
    assert names == {
        "user",
        "bucket",
        "date",
        "from",
        "to",
        "minSize",
        "maxSize",
        "order",
        "sort",
        "limit",
        "cursor",
        "q",
        "prefix",
        "delimiter",
        "ext",
        "contentType",
    }
    for route, path in document["paths"].items():
        for method, operation in path.items():
            responses = operation["responses"]
            assert "422" not in responses  # invalid input is a 400 with {"message"}
            if route != "/status":  # takes no input
                schema = responses["400"]["content"]["application/json"]["schema"]
                assert schema["$ref"].endswith("/ErrorMessage")
            # The routes of signed-in people take the user pool's ID token; the others SigV4 (the default).
            if route.startswith("/me/"):
                assert operation["security"] == [{"cognito": []}], (method, route)
                assert "401" in responses
            else:
                assert "security" not in operation
    schemes = document["components"]["securitySchemes"]
    assert schemes["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    assert schemes["cognito"]["x-amazon-apigateway-authtype"] == "cognito_user_pools"


def test_the_document_describes_the_index_state_and_the_status() -> None:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    schemas = document["components"]["schemas"]
    page = schemas["FileListPage"]
    assert "indexState" in page["required"]
    assert page["properties"]["indexState"]["enum"] == ["READY", "BUILDING"]
    status = document["paths"]["/status"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert status["$ref"].endswith("/IndexStatus")
    assert set(schemas["IndexStatus"]["required"]) == {
        "indexState",
        "buckets",
        "queue",
        "deadLetterQueue",
        "unavailable",
    }
    assert set(schemas["QueueBacklog"]["properties"]) == {
        "messagesWaiting",
        "messagesInFlight",
        "messagesDelayed",
        "oldestMessageAgeSeconds",
    }
    assert (
        "ApproximateAgeOfOldestMessage"
        in schemas["QueueBacklog"]["properties"]["oldestMessageAgeSeconds"]["description"]
    )
    assert set(schemas["DeadLetterBacklog"]["properties"]) == {"messages"}
    assert {"bucket", "state", "operation", "runId", "progress", "lastError"} <= set(
        schemas["BucketIndexState"]["properties"]
    )


def test_the_api_serves_the_document_and_the_ui_without_any_configuration() -> None:
    served = handler.lambda_handler(to_rest_event("GET", "/openapi.json"), None)
    ui = handler.lambda_handler(to_rest_event("GET", "/docs"), None)

    assert served["statusCode"] == 200
    document = json.loads(served["body"])
    assert document["paths"] == json.loads(handler.openapi_json())["paths"]
    assert ui["statusCode"] == 200
    assert "swagger" in ui["body"].lower()


LOCAL = {"Host": "127.0.0.1:8000", "User-Agent": "curl/8"}


def test_on_the_local_stack_the_server_is_the_host_the_request_came_to_not_the_stage() -> None:
    # The stand-in sends requestContext.path "/local/..." but answers at the bare host.
    served = handler.lambda_handler(to_rest_event("GET", "/openapi.json", headers=LOCAL), None)
    ui = handler.lambda_handler(to_rest_event("GET", "/docs", headers=LOCAL), None)

    assert json.loads(served["body"])["servers"] == [{"url": "http://127.0.0.1:8000"}]
    assert '"url": "http://127.0.0.1:8000"' in ui["body"]
    assert "/local" not in ui["body"].split("swagger-ui-bundle")[0]


def _api_gateway_event(path: str, *, host: str, full_path: str, proto: str = "https") -> dict[str, Any]:
    event = to_rest_event("GET", path, headers={"Host": host, "X-Forwarded-Proto": proto})
    event["requestContext"].update({"domainName": host, "path": full_path, "stage": "v1"})
    return event


@pytest.mark.parametrize(
    ("event", "base_url"),
    [
        (
            _api_gateway_event(
                "/openapi.json",
                host="abc123.execute-api.eu-west-1.amazonaws.com",
                full_path="/v1/openapi.json",
            ),
            "https://abc123.execute-api.eu-west-1.amazonaws.com/v1",
        ),
        (  # a custom domain with the API mapped at base path "search"
            _api_gateway_event("/openapi.json", host="files.example.com", full_path="/search/openapi.json"),
            "https://files.example.com/search",
        ),
        (  # a custom domain mapped at its root: no stage in the URL
            _api_gateway_event("/openapi.json", host="files.example.com", full_path="/openapi.json"),
            "https://files.example.com",
        ),
        (to_rest_event("GET", "/openapi.json", headers=LOCAL), "http://127.0.0.1:8000"),
        (to_rest_event("GET", "/openapi.json", headers={"Host": "[::1]:8000"}), "http://[::1]:8000"),
        (to_rest_event("GET", "/openapi.json"), "/"),  # no Host: a relative server
        (to_rest_event("GET", "/openapi.json", headers={"Host": "evil.example/<script>"}), "/"),
    ],
    ids=[
        "execute-api",
        "custom-domain-base-path",
        "custom-domain-root",
        "local",
        "ipv6",
        "no-host",
        "bad-host",
    ],
)
def test_the_base_url_is_the_one_the_request_came_in_on(event: dict[str, Any], base_url: str) -> None:
    assert openapi.request_base_url(event) == base_url
    served = handler.lambda_handler(event, None)
    assert json.loads(served["body"])["servers"] == [{"url": base_url}]


def test_the_kept_document_names_a_relative_server() -> None:
    assert json.loads(handler.openapi_json())["servers"] == [{"url": "/"}]
