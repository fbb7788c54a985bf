"""One CloudWatch dashboard for the whole system: from upload to searchable, and what the API answers.

Rows, top to bottom: the alarms; freshness and the indexer's outcomes; the event queue and its dead
letters; the indexer function; the API; the search function; the table and each of its indexes; the
backfill and reconcile runs.

The functions' own metrics are EMF metrics of Powertools: namespace `S3FileSearch`, and the dimension
`service` set to the function's POWERTOOLS_SERVICE_NAME (plus any dimension the function adds). A graph
shows a metric only if namespace, name and every dimension match exactly, so they are spelled here as the
functions emit them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from file_index.rules import schema

NAMESPACE = "S3FileSearch"
# POWERTOOLS_SERVICE_NAME of each function (infra/ingest.py, infra/search_api.py).
INDEXER_SERVICE = "indexer"
SEARCH_SERVICE = "search"
# Fine enough to see a burst; CloudWatch widens the period by itself for long time ranges.
PERIOD = Duration.minutes(1)
FULL_WIDTH = 24
HALF_WIDTH = 12
THIRD_WIDTH = 8
HEIGHT = 6

# What the indexer emits per batch (functions/indexer/handler.py).
INDEXER_OUTCOMES = (
    "IndexedFiles",
    "DeletedFiles",
    "StaleEvents",
    "FailedRecords",
    "DeferredRecords",
    "ForeignBucketEvents",
)
INDEX_LAG = "IndexLagMs"
# Every operation the functions send to the table (the search's GetItem and Query, the indexer's
# conditional writes, the backfill's and reconcile's reads): DynamoDB reports throttles per operation.
TABLE_OPERATIONS = (
    dynamodb.Operation.GET_ITEM,
    dynamodb.Operation.QUERY,
    dynamodb.Operation.PUT_ITEM,
    dynamodb.Operation.UPDATE_ITEM,
    dynamodb.Operation.BATCH_GET_ITEM,
    dynamodb.Operation.SCAN,
)
# What the search function emits per request (functions/search/handler.py): each metric has the
# dimensions `service` and `QueryShape` (key, user, user+date, ..., download, status). The shapes are
# graphed with a SEARCH expression over exactly those dimensions, so a new shape appears by itself.
SEARCH_SHAPE_DIMENSION = "QueryShape"
SEARCH_REQUESTS = "Requests"
SEARCH_LATENCY = "Latency"
SEARCH_ITEMS_READ = "ItemsRead"
SEARCH_ITEMS_RETURNED = "ItemsReturned"
# Step Functions' execution outcomes of the backfill and reconcile state machine.
EXECUTION_METRICS = (
    "ExecutionsStarted",
    "ExecutionsSucceeded",
    "ExecutionsFailed",
    "ExecutionsTimedOut",
    "ExecutionsAborted",
)


def dashboard_name(stack: Stack) -> str:
    """Dashboard names are unique per account across regions: the stack's name and its region."""
    return f"{stack.stack_name}-{stack.region}"


def emf_metric(
    name: str,
    *,
    service: str,
    statistic: str = cloudwatch.Stats.SUM,
    label: str | None = None,
    dimensions: dict[str, str] | None = None,
) -> cloudwatch.Metric:
    """A metric a function emits through Powertools, with the `service` dimension Powertools adds."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": service, **(dimensions or {})},
        statistic=statistic,
        period=PERIOD,
        label=label,
    )


def search_emf_metric(
    name: str, *, statistic: str, label: str, total: bool = False
) -> cloudwatch.MathExpression:
    """The search function's metric `name`, one line per query shape (or their sum if `total`)."""
    schema = f"{{{NAMESPACE},{SEARCH_SHAPE_DIMENSION},service}}"
    search = (
        f'SEARCH(\'{schema} MetricName="{name}" service="{SEARCH_SERVICE}"\', '
        f"'{statistic}', {int(PERIOD.to_seconds())})"
    )
    return cloudwatch.MathExpression(
        expression=f"SUM({search})" if total else search, label=label, period=PERIOD
    )


class Dashboard(Construct):
    """The health of indexing and search on one page; its name is a stack output."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        indexer: lambda_.IFunction,
        search: lambda_.IFunction,
        api: apigw.RestApi,
        api_server_errors: cloudwatch.Metric,
        api_retry_later_answers: cloudwatch.Metric,
        table: dynamodb.ITable,
        backfill: sfn.IStateMachine,
        alarms: Sequence[cloudwatch.IAlarm],
    ) -> None:
        super().__init__(scope, construct_id)
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name(Stack.of(self)),
            default_interval=Duration.hours(3),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=FULL_WIDTH, height=3)
        )
        self.dashboard.add_widgets(*self._indexing())
        self.dashboard.add_widgets(*self._queues(queue, dead_letter_queue))
        self.dashboard.add_widgets(*self._function("Indexer function", indexer))
        self.dashboard.add_widgets(*self._api(api, api_server_errors, api_retry_later_answers))
        self.dashboard.add_widgets(*self._search())
        self.dashboard.add_widgets(*self._function("Search function", search))
        self.dashboard.add_widgets(*self._table(table))
        self.dashboard.add_widgets(self._backfill(backfill))

    # --- rows ---------------------------------------------------------------------------------------

    def _indexing(self) -> list[cloudwatch.IWidget]:
        return [
            _graph(
                "Upload to searchable (event time to index write), ms",
                [
                    emf_metric(INDEX_LAG, service=INDEXER_SERVICE, statistic="p50", label="p50"),
                    emf_metric(INDEX_LAG, service=INDEXER_SERVICE, statistic="p99", label="p99"),
                ],
                width=HALF_WIDTH,
            ),
            _graph(
                "Events indexed, by outcome",
                [emf_metric(name, service=INDEXER_SERVICE, label=name) for name in INDEXER_OUTCOMES],
                width=HALF_WIDTH,
            ),
        ]

    def _queues(self, queue: sqs.IQueue, dead_letter_queue: sqs.IQueue) -> list[cloudwatch.IWidget]:
        maximum = cloudwatch.Stats.MAXIMUM
        return [
            _graph(
                "Event queue depth",
                [
                    queue.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic=maximum, label="waiting"
                    ),
                    queue.metric_approximate_number_of_messages_not_visible(
                        period=PERIOD, statistic=maximum, label="in flight"
                    ),
                ],
            ),
            _graph(
                "Oldest waiting event, s",
                [
                    queue.metric_approximate_age_of_oldest_message(
                        period=PERIOD, statistic=maximum, label="event queue"
                    )
                ],
            ),
            _graph(
                "Dead letters",
                [
                    dead_letter_queue.metric_approximate_number_of_messages_visible(
                        period=PERIOD, statistic=maximum, label="dead letters"
                    ),
                    dead_letter_queue.metric_approximate_age_of_oldest_message(
                        period=PERIOD, statistic=maximum, label="oldest, s"
                    ),
                ],
            ),
        ]

    def _function(self, title: str, function: lambda_.IFunction) -> list[cloudwatch.IWidget]:
        total = cloudwatch.Stats.SUM
        return [
            _graph(
                f"{title}: invocations, errors, throttles",
                [
                    function.metric_invocations(period=PERIOD, statistic=total, label="invocations"),
                    function.metric_errors(period=PERIOD, statistic=total, label="errors"),
                    function.metric_throttles(period=PERIOD, statistic=total, label="throttles"),
                ],
                width=HALF_WIDTH,
            ),
            _graph(
                f"{title}: duration, ms",
                [
                    function.metric_duration(period=PERIOD, statistic=stat, label=stat)
                    for stat in ("p50", "p99", cloudwatch.Stats.MAXIMUM)
                ],
                width=HALF_WIDTH,
            ),
        ]

    def _api(
        self,
        api: apigw.RestApi,
        server_errors: cloudwatch.Metric,
        retry_later_answers: cloudwatch.Metric,
    ) -> list[cloudwatch.IWidget]:
        total = cloudwatch.Stats.SUM
        return [
            _graph("API requests", [api.metric_count(period=PERIOD, statistic=total, label="requests")]),
            _graph(
                "API latency, ms",
                [
                    api.metric_latency(period=PERIOD, statistic="p50", label="p50"),
                    api.metric_latency(period=PERIOD, statistic="p99", label="p99"),
                ],
            ),
            _graph(
                "API answers 4xx / 5xx",
                [
                    api.metric_client_error(period=PERIOD, statistic=total, label="4xx"),
                    api.metric_server_error(period=PERIOD, statistic=total, label="5xx (all)"),
                    # From the access log: the 5xx that are faults, and the deliberate retry-later
                    # answers (503 throttled table, 429 stage limit), apart.
                    server_errors.with_(period=PERIOD, label="5xx but 503 (errors)"),
                    retry_later_answers.with_(period=PERIOD, label="429 + 503 (retry later)"),
                ],
            ),
        ]

    def _search(self) -> list[cloudwatch.IWidget]:
        by_shape = f"${{PROP('Dim.{SEARCH_SHAPE_DIMENSION}')}}"
        total = cloudwatch.Stats.SUM
        return [
            _graph(
                "Searches by query shape",
                [search_emf_metric(SEARCH_REQUESTS, statistic=total, label=by_shape)],
            ),
            _graph(
                "Items read and returned (list queries)",
                [
                    search_emf_metric(SEARCH_ITEMS_READ, statistic=total, label="read", total=True),
                    search_emf_metric(SEARCH_ITEMS_RETURNED, statistic=total, label="returned", total=True),
                ],
            ),
            _graph(
                "Search latency in the function by query shape, ms",
                [
                    search_emf_metric(SEARCH_LATENCY, statistic=stat, label=f"{stat} {by_shape}")
                    for stat in ("p50", "p99")
                ],
            ),
        ]

    def _table(self, table: dynamodb.ITable) -> list[cloudwatch.IWidget]:
        total = cloudwatch.Stats.SUM
        scopes: list[tuple[str, dict[str, str]]] = [("table", {})] + [
            (index.name, {"GlobalSecondaryIndexName": index.name}) for index in schema.GLOBAL_INDEXES
        ]

        def per_scope(metric_name: str, prefix: str = "") -> list[cloudwatch.IMetric]:
            return [
                table.metric(
                    metric_name,
                    dimensions_map={"TableName": table.table_name, **extra},
                    statistic=total,
                    period=PERIOD,
                    label=f"{prefix}{label}",
                )
                for label, extra in scopes
            ]

        return [
            _graph("Consumed read capacity", per_scope("ConsumedReadCapacityUnits")),
            _graph("Consumed write capacity", per_scope("ConsumedWriteCapacityUnits")),
            _graph(
                "Throttled requests and events",
                [
                    table.metric_throttled_requests_for_operations(
                        operations=list(TABLE_OPERATIONS), period=PERIOD, label="throttled requests"
                    ),
                    *per_scope("ReadThrottleEvents", "read throttles: "),
                    *per_scope("WriteThrottleEvents", "write throttles: "),
                ],
            ),
        ]

    def _backfill(self, backfill: sfn.IStateMachine) -> cloudwatch.IWidget:
        return _graph(
            "Backfill and reconcile runs",
            [
                backfill.metric(name, period=PERIOD, statistic=cloudwatch.Stats.SUM, label=name)
                for name in EXECUTION_METRICS
            ],
            width=FULL_WIDTH,
        )


def _graph(
    title: str, metrics: Sequence[cloudwatch.IMetric], *, width: int = THIRD_WIDTH
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=width, height=HEIGHT)
