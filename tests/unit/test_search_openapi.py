"""docs/openapi.json is exactly the document the search API generates and serves."""

from __future__ import annotations

import json
from pathlib import Path

from local_stack.api_gateway import to_rest_event
from search import handler

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_kept_document_equals_the_generated_one() -> None:
    generated = json.loads(handler.openapi_json())
    assert json.loads(DOCUMENT.read_text(encoding="utf-8")) == generated, (
        "docs/openapi.json is stale: regenerate with `python -m search.handler > docs/openapi.json`"
    )


def test_the_document_names_every_route_and_parameter() -> None:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    assert set(document["paths"]) == {"/files", "/files/{objectKey}", "/download/{objectKey}", "/status"}
    names = {parameter["name"] for parameter in document["paths"]["/files"]["get"]["parameters"]}
    assert names == {"user", "bucket", "date", "from", "to", "minSize", "maxSize", "order", "limit", "cursor"}
    for route, path in document["paths"].items():
        responses = path["get"]["responses"]
        assert "422" not in responses  # invalid input is a 400 with {"message"}
        if route != "/status":  # takes no input
            assert responses["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorMessage")
    assert document["components"]["securitySchemes"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"


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
    assert document["servers"] == [{"url": "/local"}]  # the stage, so "Try it out" reaches it
    assert document["paths"] == json.loads(handler.openapi_json())["paths"]
    assert ui["statusCode"] == 200
    assert "swagger" in ui["body"].lower()
