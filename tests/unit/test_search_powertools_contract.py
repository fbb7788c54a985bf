"""What the search handler relies on in Powertools beyond its public API, named so an upgrade that
changes it fails here, not in production.

One thing: `ApiGatewayResolver.route()` compiles each rule with the static method
`_compile_regex(rule, base_regex)` looked up on the resolver, which `search.resolver` overrides so that a
path parameter may span several segments (S3 keys contain "/"). Nothing else private is used: the base
URL of the OpenAPI document comes from the event itself (`search.openapi.request_base_url`).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver

from local_stack.api_gateway import to_rest_event
from search import handler

SEARCH = Path(inspect.getfile(handler)).parent
# The modules that use Powertools' event handler: the handler, its resolver and document, the routers.
SOURCES = {
    path.relative_to(SEARCH).as_posix(): path.read_text(encoding="utf-8")
    for path in [
        *(SEARCH / name for name in ("handler.py", "resolver.py", "openapi.py")),
        *(SEARCH / "routes").glob("*.py"),
    ]
}


def test_compile_regex_is_a_static_method_taking_the_rule_and_a_base_regex() -> None:
    method = inspect.getattr_static(APIGatewayRestResolver, "_compile_regex")
    assert isinstance(method, staticmethod)
    assert list(inspect.signature(method.__func__).parameters) == ["rule", "base_regex"]


def test_route_compiles_each_rule_through_the_resolvers_compile_regex() -> None:
    assert "self._compile_regex(rule)" in inspect.getsource(ApiGatewayResolver.route)


def test_the_override_lets_a_key_route_take_several_segments() -> None:
    pattern = handler.app._compile_regex("/files/<objectKey>")
    match = pattern.match("/files/USER001/dir/a b.txt")
    assert match is not None
    assert match.group("objectKey") == "USER001/dir/a b.txt"
    assert pattern.match("/files/") is not None  # an empty key reaches the route, which refuses it


def test_a_raw_slash_in_a_key_reaches_the_key_route() -> None:
    # Without configuration the route fails inside (500), but it is the key route that answered, not
    # the 404 of an unmatched path.
    answer = handler.lambda_handler(to_rest_event("GET", "/files/USER001/dir/a.txt"), None)
    assert answer["statusCode"] == 500


def test_no_other_private_powertools_member_is_used() -> None:
    # The override defines `_compile_regex`; no private member is called or read anywhere.
    assert len(SOURCES) > 3
    for name, source in SOURCES.items():
        assert not re.findall(r"\b(?:app|self|super\(\)|resolver|router)\._[a-z]\w*", source), name
        assert "_get_base_path" not in source, name
