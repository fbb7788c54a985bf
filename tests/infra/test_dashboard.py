"""The dashboard in the synthesized template: every health signal present, each with the exact dimensions.

A widget whose metric has one dimension too many or too few shows nothing in CloudWatch, so each metric is
checked as the template spells it: namespace, name and the complete set of dimensions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from file_index.rules import schema
from infra import dashboard
from tests.infra.conftest import Synth

pytestmark = pytest.mark.xdist_group("infra")

MetricKey = tuple[str, str, frozenset[tuple[str, str]]]


def dashboard_body(synth: Synth) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dashboard's body as JSON, CloudFormation references replaced by `@N` markers (and the map)."""
    ((_, resource),) = synth.resources("AWS::CloudWatch::Dashboard").items()
    body = resource["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    tokens: dict[str, Any] = {}
    text = ""
    for part in parts:
        if isinstance(part, str):
            text += part
        else:
            marker = f"@{len(tokens)}"
            tokens[marker] = part
            text += marker
    return json.loads(text), tokens


def widget_metrics(synth: Synth) -> dict[str, list[tuple[MetricKey, dict[str, Any]]]]:
    """Each graph's metrics by the graph's title: (namespace, name, dimensions) and the rendering options."""
    body, tokens = dashboard_body(synth)
    graphs: dict[str, list[tuple[MetricKey, dict[str, Any]]]] = {}
    for widget in body["widgets"]:
        if widget["type"] != "metric":
            continue
        entries = []
        for line in widget["properties"]["metrics"]:
            *fields, options = line if isinstance(line[-1], dict) else [*line, {}]
            if not fields:  # a math expression: its inputs are lines of their own
                continue
            namespace, name, *pairs = fields
            dimensions = frozenset(
                (pairs[i], json.dumps(tokens.get(pairs[i + 1], pairs[i + 1]), sort_keys=True))
                for i in range(0, len(pairs), 2)
            )
            entries.append(((namespace, name, dimensions), options))
        graphs[widget["properties"]["title"]] = entries
    return graphs


def all_metrics(synth: Synth) -> dict[MetricKey, set[str]]:
    """Every metric on the dashboard, with the statistics it is shown with."""
    shown: dict[MetricKey, set[str]] = {}
    for entries in widget_metrics(synth).values():
        for key, options in entries:
            shown.setdefault(key, set()).add(options.get("stat", "Average"))
    return shown


def dims(**dimensions: Any) -> frozenset[tuple[str, str]]:
    return frozenset((name, json.dumps(value, sort_keys=True)) for name, value in dimensions.items())


def ref(synth: Synth, construct: Any) -> dict[str, str]:
    return {"Ref": synth.logical_id(construct)}


def queue_name(synth: Synth, queue: Any) -> dict[str, Any]:
    return {"Fn::GetAtt": [synth.logical_id(queue), "QueueName"]}


def test_dashboard_name_is_a_stack_output(any_synth: Synth) -> None:
    ((logical_id, resource),) = any_synth.resources("AWS::CloudWatch::Dashboard").items()

    assert any_synth.template_json["Outputs"]["DashboardName"]["Value"] == {"Ref": logical_id}
    # Dashboard names are unique per account across regions: the stack's name and its region.
    assert resource["Properties"]["DashboardName"] == {
        "Fn::Join": ["", [f"{any_synth.stack.stack_name}-", {"Ref": "AWS::Region"}]]
    }


def test_freshness_and_indexing_outcomes_are_the_indexers_emf_metrics(default_synth: Synth) -> None:
    """Powertools adds `service` (POWERTOOLS_SERVICE_NAME) as the only dimension of the indexer's metrics."""
    shown = all_metrics(default_synth)
    indexer = dims(service="indexer")

    assert shown[("S3FileSearch", "IndexLagMs", indexer)] == {"p50", "p99"}
    for name in ("IndexedFiles", "DeletedFiles", "StaleEvents", "FailedRecords", "ForeignBucketEvents"):
        assert shown[("S3FileSearch", name, indexer)] == {"Sum"}, name


def test_service_dimension_is_the_functions_service_name(default_synth: Synth) -> None:
    """The dashboard's `service` values are the POWERTOOLS_SERVICE_NAME the functions are deployed with."""
    services = {
        resource["Properties"]["Handler"].split(".")[0]: resource["Properties"]["Environment"]["Variables"][
            "POWERTOOLS_SERVICE_NAME"
        ]
        for resource in default_synth.resources("AWS::Lambda::Function").values()
        if "POWERTOOLS_SERVICE_NAME" in resource["Properties"].get("Environment", {}).get("Variables", {})
    }

    assert services["indexer"] == dashboard.INDEXER_SERVICE
    assert services["search"] == dashboard.SEARCH_SERVICE
    plain = {
        dict(dimensions)["service"]
        for namespace, _, dimensions in all_metrics(default_synth)
        if namespace == "S3FileSearch" and "service" in dict(dimensions)
    }
    searched = {
        e["expression"].split('service="')[1].split('"')[0]
        for lines in expressions(default_synth).values()
        for e in lines
        if "SEARCH(" in e["expression"]
    }
    assert plain == {json.dumps("indexer")}
    assert searched == {"search"}


def test_queue_depth_age_and_dead_letters(default_synth: Synth) -> None:
    shown = all_metrics(default_synth)
    ingest = default_synth.stack.ingest
    queue = dims(QueueName=queue_name(default_synth, ingest.queue))
    dlq = dims(QueueName=queue_name(default_synth, ingest.dead_letter_queue))

    assert shown[("AWS/SQS", "ApproximateNumberOfMessagesVisible", queue)] == {"Maximum"}
    assert shown[("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", queue)] == {"Maximum"}
    assert shown[("AWS/SQS", "ApproximateAgeOfOldestMessage", queue)] == {"Maximum"}
    assert shown[("AWS/SQS", "ApproximateNumberOfMessagesVisible", dlq)] == {"Maximum"}
    assert shown[("AWS/SQS", "ApproximateAgeOfOldestMessage", dlq)] == {"Maximum"}


@pytest.mark.parametrize("which", ["indexer", "search"])
def test_function_errors_throttles_and_duration(default_synth: Synth, which: str) -> None:
    shown = all_metrics(default_synth)
    function = (
        default_synth.stack.ingest.indexer if which == "indexer" else default_synth.stack.search_api.function
    )
    by_name = dims(FunctionName=ref(default_synth, function))

    for name in ("Invocations", "Errors", "Throttles"):
        assert shown[("AWS/Lambda", name, by_name)] == {"Sum"}, name
    assert shown[("AWS/Lambda", "Duration", by_name)] == {"p50", "p99", "Maximum"}


def test_api_requests_latency_and_answers(default_synth: Synth) -> None:
    shown = all_metrics(default_synth)
    (api,) = default_synth.resources("AWS::ApiGateway::RestApi").values()
    by_name = dims(ApiName=api["Properties"]["Name"])
    by_id = dims(ApiId=ref(default_synth, default_synth.stack.search_api.api))

    assert shown[("AWS/ApiGateway", "Count", by_name)] == {"Sum"}
    assert shown[("AWS/ApiGateway", "Latency", by_name)] == {"p50", "p99"}
    assert shown[("AWS/ApiGateway", "4XXError", by_name)] == {"Sum"}
    assert shown[("AWS/ApiGateway", "5XXError", by_name)] == {"Sum"}
    # The access log's split of the 5xx: faults, and the deliberate retry-later answers.
    assert shown[("S3FileSearch", "ApiServerErrors", by_id)] == {"Sum"}
    assert shown[("S3FileSearch", "ApiRetryLaterAnswers", by_id)] == {"Sum"}


def expressions(synth: Synth) -> dict[str, list[dict[str, Any]]]:
    """Each graph's math and search expressions (with their options), by the graph's title."""
    body, _ = dashboard_body(synth)
    return {
        widget["properties"]["title"]: [
            line[0] for line in widget["properties"]["metrics"] if len(line) == 1 and "expression" in line[0]
        ]
        for widget in body["widgets"]
        if widget["type"] == "metric"
    }


def search_of(name: str, statistic: str) -> str:
    """A SEARCH over exactly the search function's dimensions: `service` and `QueryShape`."""
    return (
        f'SEARCH(\'{{S3FileSearch,QueryShape,service}} MetricName="{name}" service="search"\', '
        f"'{statistic}', 60)"
    )


def test_search_functions_emf_metrics_by_query_shape(default_synth: Synth) -> None:
    """Every metric of the search function carries `QueryShape`: one line per shape, whatever the shapes."""
    shown = {e["expression"]: e for lines in expressions(default_synth).values() for e in lines}
    by_shape = "${PROP('Dim.QueryShape')}"

    assert shown[search_of("Requests", "Sum")]["label"] == by_shape
    assert shown[search_of("Latency", "p50")]["label"] == f"p50 {by_shape}"
    assert shown[search_of("Latency", "p99")]["label"] == f"p99 {by_shape}"
    # Items read (DynamoDB's ScannedCount) and returned, summed over the shapes.
    assert f"SUM({search_of('ItemsRead', 'Sum')})" in shown
    assert f"SUM({search_of('ItemsReturned', 'Sum')})" in shown


def test_search_metric_names_are_the_ones_the_function_emits() -> None:
    """The names and the dimension as functions/search/handler.py spells them."""
    from search import handler

    source = Path(handler.__file__).read_text()
    for name in (
        dashboard.SEARCH_REQUESTS,
        dashboard.SEARCH_LATENCY,
        dashboard.SEARCH_ITEMS_READ,
        dashboard.SEARCH_ITEMS_RETURNED,
    ):
        assert f'add_metric(name="{name}"' in source, name
    assert f'add_dimension(name="{dashboard.SEARCH_SHAPE_DIMENSION}"' in source
    assert handler.DEFAULT_SERVICE_NAME == dashboard.SEARCH_SERVICE


def test_table_and_each_index_capacity_and_throttles(default_synth: Synth) -> None:
    shown = all_metrics(default_synth)
    table = ref(default_synth, default_synth.stack.storage.table)
    scopes = [dims(TableName=table)] + [
        dims(TableName=table, GlobalSecondaryIndexName=index.name) for index in schema.GLOBAL_INDEXES
    ]

    assert len(scopes) == 3
    for scope in scopes:
        for name in (
            "ConsumedReadCapacityUnits",
            "ConsumedWriteCapacityUnits",
            "ReadThrottleEvents",
            "WriteThrottleEvents",
        ):
            assert shown[("AWS/DynamoDB", name, scope)] == {"Sum"}, (name, scope)
    # ThrottledRequests is reported per operation: one line per operation the functions use.
    for operation in ("GetItem", "Query", "PutItem", "UpdateItem", "BatchGetItem", "Scan"):
        key = ("AWS/DynamoDB", "ThrottledRequests", dims(TableName=table, Operation=operation))
        assert key in shown, operation


def test_backfill_executions(default_synth: Synth) -> None:
    shown = all_metrics(default_synth)
    state_machine = dims(StateMachineArn=ref(default_synth, default_synth.stack.backfill.state_machine))

    for name in ("ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed"):
        assert shown[("AWS/States", name, state_machine)] == {"Sum"}, name


def test_every_alarm_is_on_the_dashboard(any_synth: Synth) -> None:
    body, tokens = dashboard_body(any_synth)
    (alarm_widget,) = [w for w in body["widgets"] if w["type"] == "alarm"]
    shown = [tokens[marker] for marker in alarm_widget["properties"]["alarms"]]

    assert shown == [
        {"Fn::GetAtt": [any_synth.logical_id(alarm), "Arn"]} for alarm in any_synth.stack.alarms.all
    ]


def test_widgets_fit_the_grid(default_synth: Synth) -> None:
    body, _ = dashboard_body(default_synth)

    for widget in body["widgets"]:
        assert widget["x"] + widget["width"] <= 24
        assert widget["type"] == "alarm" or widget["properties"]["metrics"], widget["properties"]["title"]
