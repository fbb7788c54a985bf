"""The search Lambda behind a REST API, and the secret that signs its paging cursors."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import ApiAuth, LogLevel, RemovalChoice
from infra.nag import acknowledge, acknowledge_lambda_basics, arn_reference
from infra.powertools_function import LOG_RETENTION, PowertoolsFunction

# API Gateway gives up after 29 s; a query page of at most 1,000 items answers in well under a second.
SEARCH_TIMEOUT = Duration.seconds(10)
DOWNLOAD_URL_EXPIRY_SECONDS = 300
STAGE_NAME = "v1"
# Per-stage limits protect the table's on-demand bill from a runaway client; raise them for real traffic.
THROTTLING_RATE_LIMIT = 50
THROTTLING_BURST_LIMIT = 100
_AUTHORIZATION = {ApiAuth.IAM: apigw.AuthorizationType.IAM, ApiAuth.NONE: apigw.AuthorizationType.NONE}


class SearchApi(Construct):
    """`GET /` and `GET /{proxy+}` to the search Lambda, which reads the table and presigns downloads."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        layer: lambda_.ILayerVersion,
        api_auth: ApiAuth,
        log_level: LogLevel,
        removal: RemovalChoice,
    ) -> None:
        super().__init__(scope, construct_id)
        # The HMAC key of paging cursors: random, never leaves AWS, read once per cold start.
        self.cursor_secret = secretsmanager.Secret(
            self,
            "CursorSecret",
            description="HMAC key that signs the search API's paging cursors",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
        )
        self.function = PowertoolsFunction(
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
            },
            timeout=SEARCH_TIMEOUT,
            # pydantic validation and the OpenAPI schema make the cold start CPU-bound: memory buys CPU.
            memory_size=512,
            layer=layer,
            log_level=log_level,
            removal=removal,
        ).function
        table.grant_read_data(self.function)
        # A presigned URL is only as good as its signer's rights: GetObject (and a version of it) on the
        # objects, and no bucket listing; the API lists from the index, never from S3.
        s3.BucketGrants.from_bucket(bucket).actions_on_object_keys(
            self.function, "*", "s3:GetObject", "s3:GetObjectVersion"
        )
        self.cursor_secret.grant_read(self.function)
        acknowledge_lambda_basics(self.function)
        acknowledge(
            self.function,
            f"AwsSolutions-IAM5[Resource::{arn_reference(table)}/index/*]",
            "The searches by user and date or by bucket and size query the table's two GSIs, whose ARNs "
            "are the table ARN followed by /index/<name>; the actions are read-only.",
        )
        acknowledge(
            self.function,
            f"AwsSolutions-IAM5[Resource::{arn_reference(bucket)}/*]",
            "Downloads presign s3:GetObject / s3:GetObjectVersion for any indexed object, and any object of "
            "the upload bucket may be indexed; no listing, writing or deleting is granted.",
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
            removal_policy=removal.policy,
        )
        method_options = apigw.MethodOptions(authorization_type=_AUTHORIZATION[api_auth])
        self.api = apigw.RestApi(
            self,
            "Api",
            rest_api_name="s3-file-search",
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
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                tracing_enabled=True,
                metrics_enabled=True,
                # Errors only: INFO would log request metadata of every call a second time.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
            ),
            default_method_options=method_options,
        )
        # The stack outputs the URL once, as ApiUrl; the construct's own `Endpoint` output would repeat it.
        self.api.node.try_remove_child("Endpoint")
        # cdk-nag (APIG2) wants gateway-side validation on. No method declares models or required
        # parameters, so it passes every GET through; the function validates each parameter itself.
        self.request_validator = self.api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        integration = apigw.LambdaIntegration(self.function)
        # GET only: the API is read-only, so every other verb is refused by the gateway itself.
        self.api.root.add_method("GET", integration, request_validator=self.request_validator)
        proxy = self.api.root.add_resource("{proxy+}")
        proxy.add_method("GET", integration, request_validator=self.request_validator)
        self._acknowledge_api_findings(api_auth)

    def _acknowledge_api_findings(self, api_auth: ApiAuth) -> None:
        acknowledge(
            self.api,
            "AwsSolutions-COG4",
            "Callers are AWS principals: every method uses IAM (SigV4) authorization, as the product "
            "specifies, so access is governed by IAM policies instead of a Cognito user pool.",
        )
        acknowledge(
            self.api,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "API Gateway's account-level logging role must carry this AWS-managed policy; it only lets the "
            "service write the access and execution logs this stack enables.",
        )
        acknowledge(
            self.api,
            "AwsSolutions-APIG3",
            "A regional API with IAM authorization and stage throttling: unsigned requests never reach the "
            "function, so a WAF web ACL would add cost without closing a gap. Add one if the API is opened.",
        )
        if api_auth is ApiAuth.NONE:
            acknowledge(
                self.api,
                "AwsSolutions-APIG4",
                "The deployer chose apiAuth=none for a throwaway development stack; the default is IAM.",
            )
