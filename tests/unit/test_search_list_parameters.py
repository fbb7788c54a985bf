"""The list routes' one query model: the parameters it takes and names, and the checks request validation
does not make, refused before anything else the routes do (no configuration is needed to be refused)."""

from __future__ import annotations

import json

import pytest

from local_stack.api_gateway import to_rest_event
from search import handler
from search.routes.lists import LIST_PARAMETERS, ListQuery


def test_a_refusal_names_exactly_the_parameters_of_the_model() -> None:
    aliases = [field.alias or name for name, field in ListQuery.model_fields.items()]
    assert sorted(LIST_PARAMETERS) == sorted(aliases)
    assert len(set(LIST_PARAMETERS)) == len(LIST_PARAMETERS)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/files?user=a&user=b", "query parameter user is given 2 times: give each once"),
        ("/files?bucket=B&limit=1&limit=2", "query parameter limit is given 2 times: give each once"),
        # Refused as repeated before an unknown parameter is: as request validation refused it.
        ("/files?user=a&user=b&foo=1", "query parameter user is given 2 times: give each once"),
        (
            "/files?user=a&user=b&meta.x=1&meta.x=2",
            "query parameter meta.x is given 2 times; user is given 2 times: give each once",
        ),
        # Before the ID token is looked at: the request is refused for its parameters first.
        (
            "/me/files?from=2024-01-01&from=2024-01-02",
            "query parameter from is given 2 times: give each once",
        ),
    ],
)
def test_a_list_parameter_given_twice_is_refused_first(path: str, message: str) -> None:
    answer = handler.lambda_handler(to_rest_event("GET", path), None)

    assert answer["statusCode"] == 400
    assert json.loads(answer["body"]) == {"message": message}


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/files?user=a&limit=0", "query parameter limit: Input should be greater than or equal to 1"),
        (
            "/files?user=a&minSize=x",
            "query parameter minSize: Input should be a valid integer, unable to parse string as an integer",
        ),
        ("/me/files?order=up", "query parameter order: Input should be 'asc' or 'desc'"),
        ("/files?user=a&limit=0&limit=x", "query parameter limit is given 2 times: give each once"),
    ],
)
def test_an_invalid_list_parameter_is_named_by_its_name_on_the_wire(path: str, message: str) -> None:
    answer = handler.lambda_handler(to_rest_event("GET", path), None)

    assert answer["statusCode"] == 400
    assert json.loads(answer["body"]) == {"message": message}
