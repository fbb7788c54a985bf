"""The page's deployment: a private bucket behind CloudFront with the page's security headers."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct, IConstruct

from infra.config import RemovalChoice
from infra.nag import BASIC_EXECUTION_ROLE, RUNTIME_REASON, acknowledge, arn_reference
from infra.storage import private_bucket_settings
from infra.web_page import CONFIG_FILE, WEB_ROOT, security_headers


def connect_sources(
    region: str, upload_bucket_name: str | None = None, sign_in_domain: str | None = None
) -> list[str]:
    """Where the deployed page connects: the API (execute-api), Cognito's API, and S3 for uploads and for
    the downloads a zip is made of.

    Patterns, not the resources' own names, where the name is a deploy-time value: the CSP is part of the
    distribution, and naming the API or a bucket the stack creates would make the distribution wait for
    them while they wait for its origin (CORS). An existing bucket's name is known at synth: the page may
    then reach that bucket only, at both addresses botocore presigns uploads for, virtual-hosted
    (`https://name.s3.amazonaws.com/`) and path-style (`https://s3.<region>.amazonaws.com/name`, always
    the case for a name with dots, which no wildcard certificate of S3 covers), the latter an exact path.
    """
    api_and_sign_in = [
        f"https://*.execute-api.{region}.amazonaws.com",
        f"https://cognito-idp.{region}.amazonaws.com",
        # The managed login domain's token and revocation endpoints (`identityProviders`).
        *([sign_in_domain] if sign_in_domain is not None else []),
    ]
    if upload_bucket_name is None:
        return [*api_and_sign_in, "https://*.s3.amazonaws.com", f"https://*.s3.{region}.amazonaws.com"]
    return [
        *api_and_sign_in,
        f"https://{upload_bucket_name}.s3.amazonaws.com",
        f"https://{upload_bucket_name}.s3.{region}.amazonaws.com",
        # us-east-1 presigns at the global endpoint, every other region at its own: the bucket itself for
        # an upload's form, its keys (a trailing "/": a prefix) for the downloads a zip is made of.
        f"https://s3.amazonaws.com/{upload_bucket_name}",
        f"https://s3.{region}.amazonaws.com/{upload_bucket_name}",
        f"https://s3.amazonaws.com/{upload_bucket_name}/",
        f"https://s3.{region}.amazonaws.com/{upload_bucket_name}/",
    ]


def preview_sources(region: str, upload_bucket_name: str | None = None) -> list[str]:
    """Where the page's previews load the bucket's files from (images, audio, video, PDF): the presigned
    download addresses of `connect_sources`' S3 entries, the bucket's keys only (an existing bucket's
    path-style address with its trailing "/"), never the API or Cognito."""
    if upload_bucket_name is None:
        return ["https://*.s3.amazonaws.com", f"https://*.s3.{region}.amazonaws.com"]
    return [
        f"https://{upload_bucket_name}.s3.amazonaws.com",
        f"https://{upload_bucket_name}.s3.{region}.amazonaws.com",
        f"https://s3.amazonaws.com/{upload_bucket_name}/",
        f"https://s3.{region}.amazonaws.com/{upload_bucket_name}/",
    ]


class WebSite(Construct):
    """The page: a private bucket behind CloudFront (origin access control), with the security headers."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal: RemovalChoice,
        upload_bucket_name: str | None = None,
        sign_in_domain: str | None = None,
    ) -> None:
        """`upload_bucket_name`: the existing bucket people upload to, or None for one the stack creates.

        `sign_in_domain`: the user pool's managed login address, when people sign in with an organisation.
        """
        super().__init__(scope, construct_id)
        region = Stack.of(self).region
        self.bucket = s3.Bucket(self, "SiteBucket", **private_bucket_settings(removal))
        headers = security_headers(
            connect_sources(region, upload_bucket_name, sign_in_domain),
            preview_sources(region, upload_bucket_name),
        )
        policy = cloudfront.ResponseHeadersPolicy(
            self,
            "SecurityHeaders",
            comment="S3 File Search page: CSP and the other security headers (infra/web_page.py)",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=headers["Content-Security-Policy"], override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.seconds(31536000), include_subdomains=True, override=True
                ),
            ),
            custom_headers_behavior=cloudfront.ResponseCustomHeadersBehavior(
                custom_headers=[
                    cloudfront.ResponseCustomHeader(
                        header="Permissions-Policy", value=headers["Permissions-Policy"], override=True
                    )
                ]
            ),
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="S3 File Search page",
            default_root_object="index.html",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                response_headers_policy=policy,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
            ),
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
        )
        self.origin = f"https://{self.distribution.distribution_domain_name}"
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "The bucket holds only the page's static files, served solely through CloudFront (origin "
            "access control); who loads the page is in CloudFront's metrics.",
        )
        for rule, reason in (
            (
                "AwsSolutions-CFR1",
                "The page is for the deployer's own people wherever they are; sign-in guards it.",
            ),
            ("AwsSolutions-CFR2", "A static page of public files; the API behind it has its own throttling."),
            (
                "AwsSolutions-CFR3",
                "Static files only; access logs would record nothing the API's log does not.",
            ),
            (
                "AwsSolutions-CFR4",
                "The default *.cloudfront.net certificate; a deployer with a domain adds a certificate and "
                "a TLSv1.2_2021 minimum.",
            ),
        ):
            acknowledge(self.distribution, rule, reason)

    def deploy(self, config: dict[str, Any]) -> s3deploy.BucketDeployment:
        """Copy `web/` and its `config.json` (API URL, user pool, client) to the site; refresh CloudFront."""
        deployment = s3deploy.BucketDeployment(
            self,
            "Files",
            sources=[
                s3deploy.Source.asset(str(WEB_ROOT), exclude=[CONFIG_FILE]),
                s3deploy.Source.json_data(CONFIG_FILE, config),
            ],
            destination_bucket=self.bucket,
            distribution=self.distribution,
            distribution_paths=["/*"],
            memory_limit=256,
        )
        # The copying function is one per stack (CDK's singleton), beside this construct.
        stack = Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("Custom::CDKBucketDeployment"):
                self._acknowledge_deployment_function(child)
        return deployment

    def _acknowledge_deployment_function(self, function: IConstruct) -> None:
        why = (
            "CDK's BucketDeployment function copies the page's files at deploy time (and only then): it "
            "reads the asset from the CDK bootstrap bucket, writes and prunes the page's bucket, and "
            "invalidates the distribution, with the policy CDK writes for it."
        )
        site = arn_reference(self.bucket)
        acknowledge(function, "AwsSolutions-L1", RUNTIME_REASON)
        acknowledge(
            function,
            f"AwsSolutions-IAM4[{BASIC_EXECUTION_ROLE}]",
            "CDK's BucketDeployment function gets AWSLambdaBasicExecutionRole, which allows creating and "
            "writing any log group of the account, wider than the function's own. Accepted: it is CDK's "
            "code, it runs only while a deployment copies the page, and its generated name gives no "
            "narrower log group ARN to grant.",
        )
        for rule in (
            "AwsSolutions-IAM5[Action::s3:Abort*]",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]",
            "AwsSolutions-IAM5[Action::s3:GetObject*]",
            "AwsSolutions-IAM5[Action::s3:List*]",
            "AwsSolutions-IAM5[Resource::*]",
            f"AwsSolutions-IAM5[Resource::{site}/*]",
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]",
        ):
            acknowledge(function, rule, why)
