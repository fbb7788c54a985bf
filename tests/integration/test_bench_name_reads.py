"""Measure 16's models of name searches equal the real reader, page for page, on moto and DynamoDB Local:
items read, items returned and round trips, on every shape (`bench.name_checks`)."""

from __future__ import annotations

import pytest

from bench import name_checks, name_reads
from file_index.rules.placement import ShardPlacement
from tests.integration.conftest import DynamoDBLocal

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)


@pytest.mark.parametrize("engine", ["moto", pytest.param("dynamodb_local", marks=pytest.mark.dynamodb_local)])
def test_the_name_models_equal_the_reader(engine: str, request: pytest.FixtureRequest) -> None:
    endpoint = None
    if engine == "dynamodb_local":
        local: DynamoDBLocal = request.getfixturevalue("dynamodb_local")
        endpoint = local.endpoint_url
    placement = ShardPlacement(bucket_shards=16)
    assert name_checks.cross_check(150, placement, endpoint_url=endpoint) == len(name_reads.SHAPES)
