"""Sign-in for people in the synthesized template: the user pool, the authorizer of the `/me/...` routes,
the page behind CloudFront with its security headers, the bucket's CORS for uploads; and `userAccess: false`
gives the stack without any of it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError, StackConfig
from infra.people import PASSWORD_POLICY, USER_WRITABLE_ATTRIBUTES, page_password_policy
from infra.web_page import content_security_policy, link_expiries
from tests.infra.conftest import Synth, synthesize
from tests.infra.test_stack import SEARCH_HANDLER, actions_of, function, role_statements

# One worker builds the module's fixtures once (xdist --dist loadgroup).
pytestmark = pytest.mark.xdist_group("infra")

SIGN_IN_TYPES = (
    "AWS::Cognito::UserPool",
    "AWS::Cognito::UserPoolClient",
    "AWS::Cognito::UserPoolGroup",
    "AWS::ApiGateway::Authorizer",
    "AWS::ApiGateway::GatewayResponse",
    "AWS::CloudFront::Distribution",
    "AWS::CloudFront::ResponseHeadersPolicy",
    "AWS::CloudFront::OriginAccessControl",
    "Custom::CDKBucketDeployment",
)
SIGN_IN_VARIABLES = (
    "USER_POOL_CLIENT_ID",
    "USER_CLAIM",
    "ADMIN_GROUP",
    "MAX_UPLOAD_BYTES",
    "SHARE_LINK_MAX_SECONDS",
    "USER_POOL_ID",
    "OWNER_NAME_ATTRIBUTE",
    "WEB_ORIGIN",
)


def _one(synth: Synth, resource_type: str) -> tuple[str, dict[str, Any]]:
    (found,) = synth.resources(resource_type).items()
    return found[0], found[1]["Properties"]


def test_the_user_pool_signs_people_in_without_a_secret(default_synth: Synth) -> None:
    _, pool = _one(default_synth, "AWS::Cognito::UserPool")
    policy = pool["Policies"]["PasswordPolicy"]
    assert policy["MinimumLength"] == PASSWORD_POLICY["MinimumLength"]
    assert all(
        policy[name] for name in ("RequireLowercase", "RequireUppercase", "RequireNumbers", "RequireSymbols")
    )
    assert pool["MfaConfiguration"] == "OPTIONAL"
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    _, client = _one(default_synth, "AWS::Cognito::UserPoolClient")
    assert client["GenerateSecret"] is False
    assert set(client["ExplicitAuthFlows"]) == {
        "ALLOW_USER_PASSWORD_AUTH",
        "ALLOW_USER_SRP_AUTH",
        "ALLOW_REFRESH_TOKEN_AUTH",
    }
    assert client["EnableTokenRevocation"] is True
    _, group = _one(default_synth, "AWS::Cognito::UserPoolGroup")
    assert group["GroupName"] == "admins"


def test_the_me_routes_take_the_pools_id_tokens(default_synth: Synth) -> None:
    authorizer_id, authorizer = _one(default_synth, "AWS::ApiGateway::Authorizer")
    assert authorizer["Type"] == "COGNITO_USER_POOLS"
    assert authorizer["IdentitySource"] == "method.request.header.Authorization"
    pool_id, _ = _one(default_synth, "AWS::Cognito::UserPool")
    assert authorizer["ProviderARNs"] == [{"Fn::GetAtt": [pool_id, "Arn"]}]
    methods = default_synth.resources("AWS::ApiGateway::Method").values()
    signed = sorted(
        method["Properties"]["HttpMethod"]
        for method in methods
        if method["Properties"].get("AuthorizationType") == "COGNITO_USER_POOLS"
    )
    # /me/files, /me/files/{objectKey} (GET, DELETE), /me/download/..., /me/links/..., /me/uploads.
    # /me/uploads (POST) and its multipart routes: parts (GET, POST), complete, abort.
    # /me/previews/{objectKey} and /me/people (GET).
    assert signed == ["DELETE", *["GET"] * 7, "POST", "POST", "POST", "POST"]
    resources = default_synth.resources("AWS::ApiGateway::Resource").values()
    paths = {props["Properties"]["PathPart"] for props in resources}
    assert {"me", "files", "download", "links", "previews", "people", "uploads", "parts", "complete"} <= paths
    for method in methods:
        props = method["Properties"]
        if props.get("AuthorizationType") == "COGNITO_USER_POOLS":
            assert props["AuthorizerId"] == {"Ref": authorizer_id}
        elif props["HttpMethod"] == "GET":
            assert props["AuthorizationType"] == "AWS_IAM"  # the routes of 0.3.0 keep IAM
        else:
            assert props["HttpMethod"] == "OPTIONS"  # the page's CORS preflight
    # API Gateway's own refusals carry the page's origin, so that the page can read a 401.
    responses = {
        props["Properties"]["ResponseType"]
        for props in default_synth.resources("AWS::ApiGateway::GatewayResponse").values()
    }
    assert responses == {"UNAUTHORIZED", "ACCESS_DENIED", "DEFAULT_4XX", "THROTTLED"}
    # The stage's own 429 says when to come back, readable by the page.
    (throttled,) = [
        props["Properties"]
        for props in default_synth.resources("AWS::ApiGateway::GatewayResponse").values()
        if props["Properties"]["ResponseType"] == "THROTTLED"
    ]
    assert throttled["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"
    assert throttled["ResponseParameters"]["gatewayresponse.header.Access-Control-Expose-Headers"] == (
        "'Retry-After'"
    )


def test_the_search_function_knows_the_client_and_may_sign_uploads(default_synth: Synth) -> None:
    _, props = function(default_synth, SEARCH_HANDLER)
    variables = props["Environment"]["Variables"]
    client_id, _ = _one(default_synth, "AWS::Cognito::UserPoolClient")
    assert variables["USER_POOL_CLIENT_ID"] == {"Ref": client_id}
    assert variables["USER_CLAIM"] == "sub"
    assert variables["ADMIN_GROUP"] == "admins"
    assert variables["MAX_UPLOAD_BYTES"] == str(5 * 1024**4)
    assert variables["SHARE_LINK_MAX_SECONDS"] == "3600"
    pool_id, _ = _one(default_synth, "AWS::Cognito::UserPool")
    assert variables["USER_POOL_ID"] == {"Ref": pool_id}
    assert variables["OWNER_NAME_ATTRIBUTE"] == "name"
    # Names in admins' lists: read-only calls on the stack's own pool, and nothing else of Cognito.
    cognito = [s for s in role_statements(default_synth, SEARCH_HANDLER) if "cognito-idp" in str(s["Action"])]
    assert cognito == [
        {
            "Action": ["cognito-idp:AdminGetUser", "cognito-idp:ListUsers"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [pool_id, "Arn"]},
        }
    ]
    assert variables["KEY_LAYOUT"] == "default"
    distribution_id, _ = _one(default_synth, "AWS::CloudFront::Distribution")
    assert variables["WEB_ORIGIN"] == {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [distribution_id, "DomainName"]}]]
    }
    # Multipart uploads: PutObject covers their start, parts and completion; abort and ListParts are not.
    assert {
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
    } <= actions_of(role_statements(default_synth, SEARCH_HANDLER), "s3")


def test_the_page_is_private_behind_cloudfront_with_its_headers(default_synth: Synth) -> None:
    _, distribution = _one(default_synth, "AWS::CloudFront::Distribution")
    config = distribution["DistributionConfig"]
    assert config["DefaultRootObject"] == "index.html"
    behavior = config["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
    (origin,) = config["Origins"]
    assert "OriginAccessControlId" in origin
    _, policy = _one(default_synth, "AWS::CloudFront::ResponseHeadersPolicy")
    headers = policy["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    # The same policy the local stack serves (infra/web_page.py), with the region's addresses.
    expected = content_security_policy(["REGION"]).split("img-src")[0]
    rendered = csp["Fn::Join"][1] if isinstance(csp, dict) else [csp]
    text = "".join(part if isinstance(part, str) else "REGION" for part in rendered)
    assert text.startswith(expected + "img-src 'self' data: https://")
    # Previews load the bucket's files as images, audio, video and PDF objects (framed by Chromium's
    # viewer), and nothing else.
    assert "media-src https://" in text
    assert "object-src https://" in text
    assert "frame-src https://" in text
    assert "script-src 'self'" in text
    assert "https://cognito-idp.REGION.amazonaws.com" in text
    assert headers["FrameOptions"]["FrameOption"] == "DENY"
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] == 31536000
    # The page's bucket is not public: only CloudFront reads it.
    site_buckets = [
        props
        for props in (bucket["Properties"] for bucket in default_synth.resources("AWS::S3::Bucket").values())
        if "CorsConfiguration" not in props
        and "LoggingConfiguration" not in props
        and "LifecycleConfiguration" not in props
    ]
    assert site_buckets
    for props in site_buckets:
        assert props["PublicAccessBlockConfiguration"]["BlockPublicPolicy"] is True


def test_the_upload_bucket_takes_posts_from_the_pages_origin_only(default_synth: Synth) -> None:
    distribution_id, _ = _one(default_synth, "AWS::CloudFront::Distribution")
    cors = [
        bucket["Properties"]["CorsConfiguration"]
        for bucket in default_synth.resources("AWS::S3::Bucket").values()
        if "CorsConfiguration" in bucket["Properties"]
    ]
    assert cors == [
        {
            "CorsRules": [
                {
                    "AllowedHeaders": ["*"],
                    "AllowedMethods": ["GET", "POST", "PUT"],
                    # The page reads each part's ETag.
                    "ExposedHeaders": ["ETag"],
                    "AllowedOrigins": [
                        {"Fn::Join": ["", ["https://", {"Fn::GetAtt": [distribution_id, "DomainName"]}]]}
                    ],
                    "MaxAge": 600,
                }
            ]
        }
    ]
    # A multipart upload left behind (a closed tab) is aborted by S3 a week after it started.
    (upload_bucket,) = [
        bucket["Properties"]
        for bucket in default_synth.resources("AWS::S3::Bucket").values()
        if "CorsConfiguration" in bucket["Properties"]
    ]
    assert upload_bucket["LifecycleConfiguration"]["Rules"] == [
        {
            "Id": "AbortIncompleteUploads",
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
            "Status": "Enabled",
        }
    ]


@pytest.fixture(scope="module")
def without_people(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(Path(tmp_path_factory.mktemp("cdk-no-people")), {"userAccess": False})


def test_user_access_off_gives_the_stack_without_sign_in(without_people: Synth, default_synth: Synth) -> None:
    assert without_people.synth_error is None
    types = {resource["Type"] for resource in without_people.template_json["Resources"].values()}
    assert not types & set(SIGN_IN_TYPES)
    _, props = function(without_people, SEARCH_HANDLER)
    assert not set(props["Environment"]["Variables"]) & {*SIGN_IN_VARIABLES, "KEY_LAYOUT"}
    assert not {"s3:PutObject", "s3:DeleteObject"} & actions_of(
        role_statements(without_people, SEARCH_HANDLER), "s3"
    )
    assert all(
        "CorsConfiguration" not in b["Properties"]
        for b in without_people.resources("AWS::S3::Bucket").values()
    )

    # Every resource of the stack without sign-in is in the stack with it: sign-in only adds (the API's
    # deployment is named by a hash of the API's methods, so it is new whenever they change).
    def kept(synth: Synth) -> set[str]:
        resources = synth.template_json["Resources"]
        return {
            name for name, resource in resources.items() if resource["Type"] != "AWS::ApiGateway::Deployment"
        }

    assert kept(without_people) <= kept(default_synth)


@pytest.fixture(scope="module")
def existing_pool(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        Path(tmp_path_factory.mktemp("cdk-existing-pool")),
        {
            "userPoolId": "eu-west-1_AbCdEf123",
            "adminGroup": "file-admins",
            "userClaim": "custom:uploadUser",
            "userClaimAdminOnly": True,
        },
    )


def test_an_existing_pool_gets_only_an_app_client(existing_pool: Synth) -> None:
    assert existing_pool.synth_error is None
    assert existing_pool.resources("AWS::Cognito::UserPool") == {}
    assert existing_pool.resources("AWS::Cognito::UserPoolGroup") == {}
    _, client = _one(existing_pool, "AWS::Cognito::UserPoolClient")
    assert client["UserPoolId"] == "eu-west-1_AbCdEf123"
    _, authorizer = _one(existing_pool, "AWS::ApiGateway::Authorizer")
    assert "userpool/eu-west-1_AbCdEf123" in str(authorizer["ProviderARNs"])
    _, props = function(existing_pool, SEARCH_HANDLER)
    assert props["Environment"]["Variables"]["ADMIN_GROUP"] == "file-admins"
    assert props["Environment"]["Variables"]["USER_CLAIM"] == "custom:uploadUser"
    # The stack's client may not write the claim either; the pool's other clients are the deployer's word.
    assert client["WriteAttributes"] == list(USER_WRITABLE_ATTRIBUTES)


def _page_config(synth: Synth) -> dict[str, Any]:
    """config.json as the stack deploys it (its deploy-time values as CDK's markers)."""
    (deployment,) = synth.resources("Custom::CDKBucketDeployment").values()
    folders = [
        synth.outdir / f"asset.{key.removesuffix('.zip')}"
        for key in deployment["Properties"]["SourceObjectKeys"]
    ]
    (config_file,) = [folder / "config.json" for folder in folders if (folder / "config.json").exists()]
    # A deploy-time value is a bare marker (`<<marker:0xbaba:0>>`), which the deployment replaces with JSON.
    text = re.sub(r"<<marker:[^>]*>>", '"marker"', config_file.read_text(encoding="utf-8"))
    config: dict[str, Any] = json.loads(text)
    return config


def test_the_page_learns_the_pools_password_policy(default_synth: Synth, existing_pool: Synth) -> None:
    _, pool = _one(default_synth, "AWS::Cognito::UserPool")
    policy = pool["Policies"]["PasswordPolicy"]
    assert _page_config(default_synth)["passwordPolicy"] == {
        "minimumLength": policy["MinimumLength"],
        "requireLowercase": policy["RequireLowercase"],
        "requireUppercase": policy["RequireUppercase"],
        "requireNumbers": policy["RequireNumbers"],
        "requireSymbols": policy["RequireSymbols"],
    }
    assert page_password_policy() == _page_config(default_synth)["passwordPolicy"]
    # An existing pool's policy is not known at synth: the page says none, and Cognito names a broken rule.
    assert "passwordPolicy" not in _page_config(existing_pool)
    assert "userPoolClientId" in _page_config(existing_pool)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"userAccess": "yes"}, "userAccess='yes' is invalid; allowed: true, false"),
        ({"userPoolId": "not a pool"}, "userPoolId='not a pool' is invalid; allowed: a Cognito user pool id"),
        ({"userClaim": "has space"}, "userClaim='has space' is unsafe"),
        ({"userClaim": "email"}, "userClaim='email' is unsafe: a person can change their own email"),
        ({"adminGroup": "two words"}, "adminGroup='two words' is invalid"),
        ({"maxUploadBytes": 0}, "maxUploadBytes=0 is invalid; allowed: an integer from 1 to 5497558138880"),
        ({"maxUploadBytes": 6 * 1024**4}, "allowed: an integer from 1 to 5497558138880"),
        (
            {"shareLinkMaxSeconds": 0},
            "shareLinkMaxSeconds=0 is invalid; allowed: an integer from 60 to 43200",
        ),
        ({"shareLinkMaxSeconds": 604800}, "shareLinkMaxSeconds=604800 is invalid; allowed: an integer"),
        ({"shareLinkMaxSeconds": "an hour"}, "shareLinkMaxSeconds='an hour' is invalid"),
        (
            {"ownerNameAttribute": "sub"},
            "ownerNameAttribute='sub' is invalid; allowed: name, email, username",
        ),
    ],
)
def test_a_bad_setting_is_refused_naming_it(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        StackConfig.from_mapping(overrides)


# Claims that name a person (`userClaim`) or could, if people wrote them: never in the client's write list.
IDENTITY_ATTRIBUTES = (
    "sub",
    "email",
    "phone_number",
    "preferred_username",
    "name",
    "nickname",
    "email_verified",
)


def test_people_may_write_nothing_that_names_them(default_synth: Synth) -> None:
    """UpdateUserAttributes with a person's access token writes only the client's write attributes.

    Cognito takes a missing or empty list as "every standard attribute": the list must be present and
    hold only attributes the product never reads.
    """
    _, client = _one(default_synth, "AWS::Cognito::UserPoolClient")
    assert client["WriteAttributes"] == ["locale"]
    assert not set(client["WriteAttributes"]) & {*IDENTITY_ATTRIBUTES, "cognito:username"}
    _, pool = _one(default_synth, "AWS::Cognito::UserPool")
    assert not [a for a in pool.get("Schema", []) if a["Name"].startswith("custom")]


@pytest.fixture(scope="module")
def custom_claim(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(Path(tmp_path_factory.mktemp("cdk-custom-claim")), {"userClaim": "custom:uploadUser"})


def test_a_custom_claim_is_an_attribute_only_administrators_set(custom_claim: Synth) -> None:
    assert custom_claim.synth_error is None
    _, pool = _one(custom_claim, "AWS::Cognito::UserPool")
    # Mutable, so that an administrator can give it to people already in the pool (AdminUpdateUserAttributes).
    assert pool["Schema"] == [{"AttributeDataType": "String", "Mutable": True, "Name": "uploadUser"}]
    _, client = _one(custom_claim, "AWS::Cognito::UserPoolClient")
    assert client["WriteAttributes"] == list(USER_WRITABLE_ATTRIBUTES)
    assert "custom:uploadUser" not in client["WriteAttributes"]
    # Readable (no ReadAttributes: every attribute), so that the ID token carries it.
    assert "ReadAttributes" not in client
    _, props = function(custom_claim, SEARCH_HANDLER)
    assert props["Environment"]["Variables"]["USER_CLAIM"] == "custom:uploadUser"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"userClaim": "email"}, "userClaim='email' is unsafe: a person can change their own email"),
        ({"userClaim": "phone_number"}, "phone_number_verified false"),
        ({"userClaim": "preferred_username"}, "people can write standard attributes"),
        (
            {"userClaim": "custom:x", "userPoolId": "eu-west-1_AbCdEf123"},
            "userClaim='custom:x' with userPoolId='eu-west-1_AbCdEf123' needs userClaimAdminOnly=true",
        ),
    ],
)
def test_synth_refuses_a_claim_people_could_write(
    tmp_path: Path, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        synthesize(tmp_path, overrides)
    assert "allowed: sub" in str(raised.value)


def test_the_page_offers_share_link_expiries_up_to_the_cap() -> None:
    assert StackConfig.from_cdk_json().share_link_max_seconds == 3600
    assert link_expiries(3600) == [300, 3600]
    assert link_expiries(43200) == [300, 3600, 14400, 43200]
    assert link_expiries(600) == [300, 600]
    assert link_expiries(60) == [60]
    assert StackConfig.from_mapping({"shareLinkMaxSeconds": "7200"}).share_link_max_seconds == 7200
