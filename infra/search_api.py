"""The search Lambda behind a REST API, and the secret that signs its paging cursors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, Fn, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from file_index.rules.placement import ShardPlacement
from file_index.store.enrich import to_env as enrich_to_env
from file_index.store.state import State
from infra.config import ApiAuth
from infra.nag import acknowledge, arn_reference
from infra.powertools_function import LOG_RETENTION, FunctionBasics, PowertoolsFunction
from infra.sizing import SEARCH_MEMORY_MB
from infra.storage import bucket_arn_reference

# API Gateway gives up after 29 s; a query page of at most 1,000 items answers in well under a second.
SEARCH_TIMEOUT = Duration.seconds(10)
DOWNLOAD_URL_EXPIRY_SECONDS = 300
STAGE_NAME = "v1"
# Per-stage limits protect the table's on-demand bill from a runaway client; raise them for real traffic.
THROTTLING_RATE_LIMIT = 50
THROTTLING_BURST_LIMIT = 100
# What a 429 of the stage's rate limit tells a caller to wait (seconds): the limit refills every second.
THROTTLED_RETRY_AFTER_SECONDS = 1
# Metrics the stack derives from the access log, in the namespace of the functions' own metrics.
METRICS_NAMESPACE = "S3FileSearch"
# One JSON object per request. `status` is the status the caller got: API Gateway's metrics count a
# 5xx without saying which, the log line says it exactly. `apiId` keys the derived metrics to this API.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "apiId": "$context.apiId",
    "ip": "$context.identity.sourceIp",
    "user": "$context.identity.user",
    "caller": "$context.identity.caller",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
}
# The function answers 503 with Retry-After when DynamoDB or S3 throttles it or does not answer in time
# (after the SDK's retries): a deliberate answer that
# tells the caller to retry, not a fault. API Gateway answers 5xx for a Lambda proxy integration only on
# faults (500 integration or permission error, 502 crashed function or malformed answer, 504 timeout),
# and 429 when the stage's throttling limits are reached. So every 5xx but 503 is a server error, and
# 429 and 503 together are the "retry later" answers.
SERVER_ERROR_PATTERN = logs.FilterPattern.all(
    logs.FilterPattern.regex_value("$.status", "=", "^5[0-9][0-9]$"),
    logs.FilterPattern.string_value("$.status", "!=", "503"),
)
RETRY_LATER_PATTERN = logs.FilterPattern.any(
    logs.FilterPattern.string_value("$.status", "=", "429"),
    logs.FilterPattern.string_value("$.status", "=", "503"),
)
_AUTHORIZATION = {ApiAuth.IAM: apigw.AuthorizationType.IAM, ApiAuth.NONE: apigw.AuthorizationType.NONE}


@dataclass(frozen=True)
class SignedInRoutes:
    """The `/me/...` routes of people signed in at `user_pool`, for the page at `web_origin`."""

    user_pool: cognito.IUserPool
    client: cognito.IUserPoolClient
    web_origin: str
    user_claim: str
    admin_group: str
    max_upload_bytes: int
    key_pattern: str
    share_link_max_seconds: int
    owner_name_attribute: str

    def environment(self) -> dict[str, str]:
        """The search function's settings of these routes (`search.config`)."""
        return {
            "USER_POOL_CLIENT_ID": self.client.user_pool_client_id,
            "USER_CLAIM": self.user_claim,
            "ADMIN_GROUP": self.admin_group,
            "MAX_UPLOAD_BYTES": str(self.max_upload_bytes),
            "SHARE_LINK_MAX_SECONDS": str(self.share_link_max_seconds),
            # Admins' lists name each file's person from the pool (ListUsers, AdminGetUser).
            "USER_POOL_ID": self.user_pool.user_pool_id,
            "OWNER_NAME_ATTRIBUTE": self.owner_name_attribute,
            "WEB_ORIGIN": self.web_origin,
            # Uploads are keyed so that the indexer credits them to their uploader.
            "KEY_LAYOUT": self.key_pattern,
        }


def rest_api_name(stack: Stack) -> str:
    """One name per stack: API Gateway's metrics (and so the 5xx alarm) are keyed by the API's name."""
    return f"{stack.stack_name}-api"


class SearchApi(Construct):
    """`GET /` and `GET /{proxy+}` (IAM) to the search Lambda, which reads the table and presigns downloads;
    with `signed_in`, the `/me/...` routes of people (Cognito), which also upload and delete their files."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        initial_state: State,
        basics: FunctionBasics,
        api_auth: ApiAuth,
        placement: ShardPlacement | None = None,
        bucket_time_index: bool = True,
        name_table: dynamodb.ITable | None = None,
        enrich: frozenset[str] = frozenset(),
        signed_in: SignedInRoutes | None = None,
    ) -> None:
        """`initial_state`: the bucket's index state while it has no state record (never built);
        `placement`: which partition key values and indexes a search reads; `name_table`: the name index
        (None: lists narrowed by name are refused); `signed_in`: the routes of people (None: none)."""
        super().__init__(scope, construct_id)
        placement = placement or ShardPlacement()
        # The HMAC key of paging cursors: random, never leaves AWS, read once per cold start.
        self.cursor_secret = secretsmanager.Secret(
            self,
            "CursorSecret",
            description="HMAC key that signs the search API's paging cursors",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
        )
        search = PowertoolsFunction(
            self,
            "Search",
            handler="search.handler.lambda_handler",
            description="Answers the file search API from the file metadata table",
            service_name="search",
            environment={
                "TABLE_NAME": table.table_name,
                "BUCKET_NAME": bucket.bucket_name,
                "CURSOR_SECRET_ARN": self.cursor_secret.secret_arn,
                "DOWNLOAD_URL_EXPIRY_SECONDS": str(DOWNLOAD_URL_EXPIRY_SECONDS),
                # `GET /status` reports the backlog of both queues.
                "QUEUE_URL": queue.queue_url,
                "DEAD_LETTER_QUEUE_URL": dead_letter_queue.queue_url,
                "INDEX_INITIAL_STATE": initial_state.value,
                **placement.to_env(),
                "BUCKET_TIME_INDEX": "true" if bucket_time_index else "false",
                **({"NAME_TABLE_NAME": name_table.table_name} if name_table is not None else {}),
                # Which filters a list may use: what the indexer stores (`file_index.store.enrich`).
                **({"ENRICH": enrich_to_env(enrich)} if enrich else {}),
                **(signed_in.environment() if signed_in is not None else {}),
            },
            timeout=SEARCH_TIMEOUT,
            memory_size=SEARCH_MEMORY_MB,
            basics=basics,
        )
        self.function = search.function
        # Exactly the search's calls: GetItem of one entry by key on the table, Query on its GSIs (whose
        # ARNs are the table ARN followed by /index/<name>). CDK's read grant would add Scan, BatchGetItem,
        # DescribeTable and the stream actions, none of which the function uses.
        iam.Grant.add_to_principal(
            grantee=self.function, actions=["dynamodb:GetItem"], resource_arns=[table.table_arn]
        )
        iam.Grant.add_to_principal(
            grantee=self.function, actions=["dynamodb:Query"], resource_arns=[f"{table.table_arn}/index/*"]
        )
        if name_table is not None:
            # A name list: Query of the name index (table and its user GSI), then BatchGetItem of the
            # candidates' entries; BatchGetItem of the name table's state items too (whether a bucket's
            # term items are complete, `file_index.store.name_index_flag.terms_complete`).
            iam.Grant.add_to_principal(
                grantee=self.function,
                actions=["dynamodb:Query"],
                resource_arns=[name_table.table_arn, f"{name_table.table_arn}/index/*"],
            )
            iam.Grant.add_to_principal(
                grantee=self.function, actions=["dynamodb:BatchGetItem"], resource_arns=[name_table.table_arn]
            )
            iam.Grant.add_to_principal(
                grantee=self.function, actions=["dynamodb:BatchGetItem"], resource_arns=[table.table_arn]
            )
        # A presigned URL is only as good as its signer's rights: GetObject (and a version of it) on the
        # objects, and no bucket listing; the API lists from the index, never from S3.
        s3.BucketGrants.from_bucket(bucket).actions_on_object_keys(
            self.function, "*", "s3:GetObject", "s3:GetObjectVersion"
        )
        if signed_in is not None:
            # A presigned POST is only as good as its signer's rights: PutObject, with the key, type and
            # size pinned by the policy the function signs; DeleteObject for a person's own files.
            # Multipart uploads: s3:PutObject covers starting one, its parts and completing it; aborting
            # and listing the parts held (to resume) are actions of their own.
            s3.BucketGrants.from_bucket(bucket).actions_on_object_keys(
                self.function,
                "*",
                "s3:PutObject",
                "s3:DeleteObject",
                "s3:AbortMultipartUpload",
                "s3:ListMultipartUploadParts",
            )
        if signed_in is not None:
            # People's names in admins' lists: read the stack's own user pool, nothing else of Cognito.
            iam.Grant.add_to_principal(
                grantee=self.function,
                actions=["cognito-idp:ListUsers", "cognito-idp:AdminGetUser"],
                resource_arns=[signed_in.user_pool.user_pool_arn],
            )
        self.cursor_secret.grant_read(self.function)
        # `GET /status`: message counts of both queues, and the age of the oldest waiting event (a
        # CloudWatch metric: SQS's API does not give it).
        iam.Grant.add_to_principal(
            grantee=self.function,
            actions=["sqs:GetQueueAttributes"],
            resource_arns=[queue.queue_arn, dead_letter_queue.queue_arn],
        )
        iam.Grant.add_to_principal(
            grantee=self.function, actions=["cloudwatch:GetMetricStatistics"], resource_arns=["*"]
        )
        acknowledge(
            search,
            f"AwsSolutions-IAM5[Resource::{arn_reference(table)}/index/*]",
            "Only dynamodb:Query uses this: the searches by user and date or by bucket and size query the "
            "table's GSIs, whose ARNs are the table ARN followed by /index/<name>. The wildcard covers "
            "exactly the indexes of this one table, not other tables, and the action is read-only.",
        )
        if name_table is not None:
            acknowledge(
                search,
                f"AwsSolutions-IAM5[Resource::{arn_reference(name_table)}/index/*]",
                "Only dynamodb:Query uses this: a user's list by name queries the name index's user GSI. The "
                "wildcard covers exactly the indexes of that one table, and the action is read-only.",
            )
        acknowledge(
            search,
            f"AwsSolutions-IAM5[Resource::{bucket_arn_reference(bucket)}/*]",
            "Downloads presign s3:GetObject / s3:GetObjectVersion for any indexed object, and any object of "
            "the upload bucket may be indexed; no listing is granted. "
            + (
                "With sign-in for people, s3:PutObject signs a person's upload form (its policy pins one "
                "key under their own prefix) and their multipart uploads (each part's URL signs its "
                "length), s3:AbortMultipartUpload and s3:ListMultipartUploadParts cancel and resume "
                "them, and s3:DeleteObject deletes a person's own file; the function checks the owner "
                "first."
                if signed_in is not None
                else "No writing or deleting is granted."
            ),
        )
        acknowledge(
            search,
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:GetMetricStatistics has no resource-level permissions: CloudWatch requires "
            "Resource '*'. It is read-only; `GET /status` uses it for the age of the event queue's oldest "
            "message. (X-Ray's PutTraceSegments/PutTelemetryRecords are the other '*' statement.)",
        )
        acknowledge(
            self.cursor_secret,
            "AwsSolutions-SMG4",
            "The secret is only the HMAC key of paging cursors, never a credential to another system; "
            "rotating it would just invalidate the cursors clients hold. Replace it by hand if it leaks.",
        )

        self.access_log_group = logs.LogGroup(
            self,
            "AccessLogs",
            retention=LOG_RETENTION,
            removal_policy=basics.removal.policy,
        )
        method_options = apigw.MethodOptions(authorization_type=_AUTHORIZATION[api_auth])
        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name=rest_api_name(Stack.of(self)),
            description="Searches the index of the upload bucket",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Access and execution logging need the account-wide API Gateway CloudWatch role; the stack
            # creates it so a fresh account deploys without a manual step.
            cloud_watch_role=True,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                throttling_rate_limit=THROTTLING_RATE_LIMIT,
                throttling_burst_limit=THROTTLING_BURST_LIMIT,
                access_log_destination=apigw.LogGroupLogDestination(self.access_log_group),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)),
                tracing_enabled=True,
                metrics_enabled=True,
                # Errors only: INFO would log request metadata of every call a second time.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
            ),
            default_method_options=method_options,
        )
        # Execution logging makes API Gateway create this log group on its first write, outside the stack
        # and kept forever. Created here first, it has the stack's retention and goes with the stack.
        self.execution_log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=Fn.join(
                "", ["API-Gateway-Execution-Logs_", self.api.rest_api_id, f"/{STAGE_NAME}"]
            ),
            retention=LOG_RETENTION,
            removal_policy=basics.removal.policy,
        )
        self.api.deployment_stage.node.add_dependency(self.execution_log_group)
        # The stack outputs the URL once, as ApiUrl; the construct's own `Endpoint` output would repeat it.
        self.api.node.try_remove_child("Endpoint")
        # cdk-nag (APIG2) wants gateway-side validation on. No method declares models or required
        # parameters, so it passes every GET through; the function validates each parameter itself.
        self.request_validator = self.api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        integration = apigw.LambdaIntegration(self.function)
        # GET only on the IAM routes, which only read: every other verb is refused by the gateway itself.
        # The signed-in people's routes (below) declare their own methods, DELETE and POST among them.
        self.api.root.add_method("GET", integration, request_validator=self.request_validator)
        proxy = self.api.root.add_resource("{proxy+}")
        proxy.add_method("GET", integration, request_validator=self.request_validator)
        if signed_in is not None:
            self._add_signed_in_routes(signed_in, integration)
        self._acknowledge_api_findings(api_auth)
        self.server_errors = self._count_answers("ServerErrors", "ApiServerErrors", SERVER_ERROR_PATTERN)
        self.retry_later_answers = self._count_answers(
            "RetryLaterAnswers", "ApiRetryLaterAnswers", RETRY_LATER_PATTERN
        )

    def _add_signed_in_routes(self, signed_in: SignedInRoutes, integration: apigw.Integration) -> None:
        """`/me/...`: the user pool's authorizer checks the token before the function runs.

        The authorizer checks signature, issuer and expiry against the pool; it sets no identity validation
        expression, so it does not check the token's audience: an ID token of another app client of the
        pool passes it, and the function refuses it (401, `search.people`), as it refuses any token that
        is not an ID token.

        Explicit resources win over `{proxy+}`, so IAM never applies to them; CORS is open to the page's
        origin only, and API Gateway's own refusals (401, 403) carry the header too, so the page reads them.
        """
        authorizer = apigw.CognitoUserPoolsAuthorizer(
            self,
            "PeopleAuthorizer",
            cognito_user_pools=[signed_in.user_pool],
            identity_source="method.request.header.Authorization",
            results_cache_ttl=Duration.minutes(5),
        )
        cors = apigw.CorsOptions(
            allow_origins=[signed_in.web_origin],
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
            max_age=Duration.minutes(10),
        )
        signed: dict[str, Any] = {
            "authorization_type": apigw.AuthorizationType.COGNITO,
            "authorizer": authorizer,
            "request_validator": self.request_validator,
        }
        me = self.api.root.add_resource("me", default_cors_preflight_options=cors)
        files = me.add_resource("files")
        files.add_method("GET", integration, **signed)
        one_file = files.add_resource("{objectKey+}")
        one_file.add_method("GET", integration, **signed)
        one_file.add_method("DELETE", integration, **signed)
        me.add_resource("download").add_resource("{objectKey+}").add_method("GET", integration, **signed)
        me.add_resource("links").add_resource("{objectKey+}").add_method("GET", integration, **signed)
        me.add_resource("previews").add_resource("{objectKey+}").add_method("GET", integration, **signed)
        me.add_resource("people").add_method("GET", integration, **signed)
        uploads = me.add_resource("uploads")
        uploads.add_method("POST", integration, **signed)
        parts = uploads.add_resource("parts")
        parts.add_method("POST", integration, **signed)
        parts.add_method("GET", integration, **signed)
        uploads.add_resource("complete").add_method("POST", integration, **signed)
        uploads.add_resource("abort").add_method("POST", integration, **signed)
        quoted_origin = Fn.join("", ["'", signed_in.web_origin, "'"])
        for response_type in (
            apigw.ResponseType.UNAUTHORIZED,
            apigw.ResponseType.ACCESS_DENIED,
            apigw.ResponseType.DEFAULT_4_XX,
        ):
            self.api.add_gateway_response(
                f"Cors{response_type.response_type}",
                type=response_type,
                response_headers={"Access-Control-Allow-Origin": quoted_origin, "Vary": "'Origin'"},
            )
        # The stage's rate limit answers 429 before the function runs: it says when to come back, and the
        # page may read that.
        self.api.add_gateway_response(
            "CorsTHROTTLED",
            type=apigw.ResponseType.THROTTLED,
            response_headers={
                "Access-Control-Allow-Origin": quoted_origin,
                "Access-Control-Expose-Headers": "'Retry-After'",
                "Retry-After": f"'{THROTTLED_RETRY_AFTER_SECONDS}'",
                "Vary": "'Origin'",
            },
        )

    def _count_answers(
        self, construct_id: str, metric_name: str, pattern: logs.IFilterPattern
    ) -> cloudwatch.Metric:
        """A metric of the access log lines that match `pattern`: one count per answer, per API."""
        metric_filter = logs.MetricFilter(
            self,
            construct_id,
            log_group=self.access_log_group,
            filter_pattern=pattern,
            metric_namespace=METRICS_NAMESPACE,
            metric_name=metric_name,
            metric_value="1",
            dimensions={"ApiId": "$.apiId"},
            unit=cloudwatch.Unit.COUNT,
        )
        return metric_filter.metric(
            dimensions_map={"ApiId": self.api.rest_api_id},
            statistic=cloudwatch.Stats.SUM,
            period=Duration.minutes(5),
        )

    def _acknowledge_api_findings(self, api_auth: ApiAuth) -> None:
        if api_auth is ApiAuth.IAM:
            acknowledge(
                self.api,
                "AwsSolutions-COG4",
                "Callers are AWS principals: every method uses IAM (SigV4) authorization, as the product "
                "specifies, so access is governed by IAM policies instead of a Cognito user pool.",
            )
            acknowledge(
                self.api,
                "AwsSolutions-APIG3",
                "A regional API with IAM authorization and stage throttling: unsigned requests never reach "
                "the function, so a WAF web ACL would add cost without closing a gap.",
            )
        else:
            open_api = (
                "The deployer explicitly chose apiAuth=none: an open API for a short-lived development "
                "stack, without authorization of any kind; the default, and the setting for any shared "
                "or long-lived stack, is IAM (SigV4) authorization."
            )
            acknowledge(self.api, "AwsSolutions-COG4", f"{open_api} No Cognito user pool either.")
            acknowledge(
                self.api,
                "AwsSolutions-APIG3",
                f"{open_api} Only the stage throttling limits it, no WAF web ACL.",
            )
            acknowledge(self.api, "AwsSolutions-APIG4", open_api)
        acknowledge(
            self.api,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "API Gateway writes access and execution logs only through one role per account and region, "
            "which must carry this AWS-managed policy; it allows creating, reading and writing any log "
            "group of the account, and serves every REST API there, not only this one.",
        )
