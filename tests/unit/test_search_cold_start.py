"""Importing the search handler leaves out what only some requests need (the OpenAPI document's models,
the response models, the upload routes' body models, Swagger, Secrets Manager parameters, difflib) and
builds no validator the routes never use: a cold start pays for them only when asked."""

from __future__ import annotations

import json
import subprocess
import sys

DEFERRED = (
    "aws_lambda_powertools.event_handler.openapi.models",
    "aws_lambda_powertools.event_handler.openapi.swagger_ui",
    "aws_lambda_powertools.utilities.parameters",
    "search.models",
    "search.upload_bodies",
    "difflib",
)
PROBE = (
    "import json, sys\n"
    "import search.handler\n"
    f"print(json.dumps([name for name in {DEFERRED!r} if name in sys.modules]))\n"
)
# ListParameters is only made with `model_construct` (from a ListQuery Powertools validated).
UNBUILT_PROBE = (
    "import search.handler\n"
    "from search.queries import ListParameters\n"
    "print(ListParameters.__pydantic_complete__)\n"
)


def test_importing_the_handler_defers_what_only_some_requests_need() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == []


def test_importing_the_handler_builds_no_validator_of_the_list_parameters() -> None:
    result = subprocess.run([sys.executable, "-c", UNBUILT_PROBE], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_document_and_the_ui_are_still_served() -> None:
    probe = (
        "import json\n"
        "from local_stack.api_gateway import to_rest_event\n"
        "from search import handler\n"
        "docs = handler.lambda_handler(to_rest_event('GET', '/docs'), None)\n"
        "document = handler.lambda_handler(to_rest_event('GET', '/openapi.json'), None)\n"
        "print(json.dumps([docs['statusCode'], 'swagger' in docs['body'].lower(),\n"
        "    sorted(json.loads(document['body'])['components']['schemas'])]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    status, has_ui, schemas = json.loads(result.stdout.strip().splitlines()[-1])
    assert (status, has_ui) == (200, True)
    assert {"FileListPage", "FileItem", "IndexStatus", "ErrorMessage", "QueueBacklog"} <= set(schemas)
