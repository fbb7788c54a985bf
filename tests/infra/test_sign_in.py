"""Sign-in with an organisation in the template: `identityProviders` adds the pool's OIDC and SAML providers,
its managed login domain and the page client's code grant back to the page; without them nothing changes.
Bad values fail the synth with the key named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError, StackConfig
from tests.infra.conftest import Synth, synthesize

pytestmark = pytest.mark.xdist_group("infra")

OKTA = {
    "type": "OIDC",
    "name": "Okta",
    "issuer": "https://example.okta.com",
    "clientId": "0oa1example",
    "clientSecretName": "s3-file-search/okta-client-secret",
    "attributeMapping": {"email": "email"},
}
ENTRA = {
    "type": "SAML",
    "name": "Entra",
    "metadataUrl": "https://login.microsoftonline.com/tenant/federationmetadata/2007-06/federationmetadata.xml",
}
FEDERATED = {"identityProviders": [OKTA, ENTRA], "signInDomainPrefix": "files-example"}


@pytest.fixture(scope="module")
def federated_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-federated"), FEDERATED)


def _one(synth: Synth, resource_type: str) -> tuple[str, dict[str, Any]]:
    (found,) = synth.resources(resource_type).items()
    return found[0], found[1]


def _page_config(synth: Synth) -> str:
    """config.json as the template writes it (the JSON with its deploy-time values' markers)."""
    _, deployment = _one(synth, "Custom::CDKBucketDeployment")
    markers = deployment["Properties"]["SourceMarkers"]
    return json.dumps(markers)


def test_the_providers_are_the_pools(federated_synth: Synth) -> None:
    assert federated_synth.synth_error is None
    pool_id, _ = _one(federated_synth, "AWS::Cognito::UserPool")
    providers = {
        resource["Properties"]["ProviderName"]: resource["Properties"]
        for resource in federated_synth.resources("AWS::Cognito::UserPoolIdentityProvider").values()
    }
    assert set(providers) == {"Okta", "Entra"}
    okta, entra = providers["Okta"], providers["Entra"]
    assert okta["ProviderType"] == "OIDC"
    assert okta["UserPoolId"] == {"Ref": pool_id}
    assert okta["ProviderDetails"]["oidc_issuer"] == OKTA["issuer"]
    assert okta["ProviderDetails"]["client_id"] == OKTA["clientId"]
    # The secret's name only: CloudFormation resolves it at deploy, the template never holds the secret.
    assert okta["ProviderDetails"]["client_secret"] == (
        "{{resolve:secretsmanager:s3-file-search/okta-client-secret:SecretString:::}}"
    )
    assert okta["ProviderDetails"]["authorize_scopes"] == "openid email profile"
    assert okta["AttributeMapping"] == {"email": "email"}
    assert entra["ProviderType"] == "SAML"
    assert entra["ProviderDetails"]["MetadataURL"] == ENTRA["metadataUrl"]


def test_the_managed_login_domain_serves_the_page_client(federated_synth: Synth) -> None:
    pool_id, _ = _one(federated_synth, "AWS::Cognito::UserPool")
    _, domain = _one(federated_synth, "AWS::Cognito::UserPoolDomain")
    assert domain["Properties"] == {
        "Domain": "files-example",
        "ManagedLoginVersion": 2,
        "UserPoolId": {"Ref": pool_id},
    }
    client_id, client = _one(federated_synth, "AWS::Cognito::UserPoolClient")
    properties = client["Properties"]
    # A public client: the code grant with PKCE, never the implicit grant, no secret.
    assert properties["GenerateSecret"] is False
    assert properties["AllowedOAuthFlows"] == ["code"]
    assert properties["AllowedOAuthFlowsUserPoolClient"] is True
    assert properties["AllowedOAuthScopes"] == ["openid", "email", "profile"]
    page = {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [_distribution(federated_synth), "DomainName"]}, "/"]]
    }
    assert properties["CallbackURLs"] == [page]
    assert properties["LogoutURLs"] == [page]
    assert properties["SupportedIdentityProviders"] == ["COGNITO", "Okta", "Entra"]
    assert properties["EnableTokenRevocation"] is True
    # The client names the providers, so they are created before it.
    assert set(client["DependsOn"]) == set(
        federated_synth.resources("AWS::Cognito::UserPoolIdentityProvider")
    )
    _, style = _one(federated_synth, "AWS::Cognito::ManagedLoginBranding")
    assert style["Properties"] == {
        "ClientId": {"Ref": client_id},
        "UseCognitoProvidedValues": True,
        "UserPoolId": {"Ref": pool_id},
    }


def test_the_page_signs_out_to_an_allowed_sign_out_url(federated_synth: Synth) -> None:
    """Sign-out sends the browser to the managed login's /logout with `logout_uri` = config.json's
    `signInRedirectUri` (web/session.js); Cognito follows it only if it is one of the client's LogoutURLs,
    else it shows an error page and the person is left at the domain."""
    _, client = _one(federated_synth, "AWS::Cognito::UserPoolClient")
    page_config = federated_synth.stack.resolve(federated_synth.stack.people.page_config())
    assert client["Properties"]["LogoutURLs"] == [page_config["signInRedirectUri"]]
    assert client["Properties"]["CallbackURLs"] == [page_config["signInRedirectUri"]]


def _distribution(synth: Synth) -> str:
    distribution_id, _ = _one(synth, "AWS::CloudFront::Distribution")
    return distribution_id


def test_the_page_learns_the_domain_and_the_providers(federated_synth: Synth) -> None:
    domain_id, _ = _one(federated_synth, "AWS::Cognito::UserPoolDomain")
    markers = _page_config(federated_synth)
    assert domain_id in markers
    assert ".amazoncognito.com" in markers
    assets = _page_config_assets(federated_synth)
    assert '"identityProviders":["Okta","Entra"]' in assets
    assert '"signInDomain"' in assets
    assert '"signInRedirectUri"' in assets
    # The page may reach the domain's token and revocation endpoints.
    _, policy = _one(federated_synth, "AWS::CloudFront::ResponseHeadersPolicy")
    csp = json.dumps(policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"])
    assert domain_id in csp
    assert ".amazoncognito.com" in csp


def _page_config_assets(synth: Synth) -> str:
    """The text of every asset the page's deployment copies (config.json is one, with markers)."""
    texts = []
    for path in synth.outdir.glob("asset.*"):
        if path.is_dir():
            texts += [file.read_text(errors="replace") for file in path.glob("config.json")]
    return "\n".join(texts)


def test_without_providers_nothing_of_them(default_synth: Synth) -> None:
    for resource_type in (
        "AWS::Cognito::UserPoolDomain",
        "AWS::Cognito::UserPoolIdentityProvider",
        "AWS::Cognito::ManagedLoginBranding",
    ):
        assert default_synth.resources(resource_type) == {}
    _, client = _one(default_synth, "AWS::Cognito::UserPoolClient")
    # CDK's own defaults for a client (no domain serves them, so no code or token is ever issued that way).
    assert client["Properties"]["SupportedIdentityProviders"] == ["COGNITO"]
    assert client["Properties"]["CallbackURLs"] == ["https://example.com"]
    assert "amazoncognito.com" not in json.dumps(default_synth.template_json)
    assert "signInDomain" not in _page_config_assets(default_synth)


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"identityProviders": [OKTA]}, "signInDomainPrefix"),
        ({"signInDomainPrefix": "files-example"}, "signInDomainPrefix"),
        ({**FEDERATED, "signInDomainPrefix": "my-cognito-files"}, "signInDomainPrefix"),
        ({**FEDERATED, "signInDomainPrefix": "-files"}, "signInDomainPrefix"),
        ({**FEDERATED, "identityProviders": {"Okta": OKTA}}, "identityProviders"),
        ({**FEDERATED, "identityProviders": "[not json"}, "identityProviders"),
        (
            {**FEDERATED, "identityProviders": [{**OKTA, "clientSecret": "hunter2"}]},
            "identityProviders[0].clientSecret",
        ),
        ({**FEDERATED, "identityProviders": [{**OKTA, "type": "oauth"}]}, "identityProviders[0].type"),
        (
            {**FEDERATED, "identityProviders": [{**OKTA, "issuer": "http://example.okta.com"}]},
            "identityProviders[0].issuer",
        ),
        (
            {**FEDERATED, "identityProviders": [{**OKTA, "clientSecretName": ""}]},
            "identityProviders[0].clientSecretName",
        ),
        ({**FEDERATED, "identityProviders": [{**OKTA, "scopes": ["email"]}]}, "identityProviders[0].scopes"),
        ({**FEDERATED, "identityProviders": [{**OKTA, "name": "Okta_1"}]}, "identityProviders[0].name"),
        ({**FEDERATED, "identityProviders": [{**OKTA, "name": "Google"}]}, "identityProviders[0].name"),
        ({**FEDERATED, "identityProviders": [OKTA, {**ENTRA, "name": "okta"}]}, "identityProviders[1].name"),
        (
            {**FEDERATED, "identityProviders": [{**ENTRA, "metadataUrl": None}]},
            "identityProviders[0].metadataUrl",
        ),
        ({**FEDERATED, "identityProviders": [{**ENTRA, "issuer": OKTA["issuer"]}]}, "identityProviders[0]"),
        (
            {**FEDERATED, "identityProviders": [{**OKTA, "attributeMapping": {"sub": "sub"}}]},
            "identityProviders[0].attributeMapping",
        ),
        (
            {
                **FEDERATED,
                "userClaim": "custom:uploadUser",
                "identityProviders": [{**OKTA, "attributeMapping": {"custom:uploadUser": "email"}}],
            },
            "identityProviders[0].attributeMapping",
        ),
        ({**FEDERATED, "userPoolId": "us-east-1_AbCdEfGhI"}, "userPoolId"),
        ({**FEDERATED, "userAccess": False}, "userAccess"),
        ({"allowedEmailDomains": ["example.com"]}, "allowedEmailDomains"),
        ({**FEDERATED, "allowedEmailDomains": ["@example.com"]}, "allowedEmailDomains"),
        ({**FEDERATED, "allowedEmailDomains": "example"}, "allowedEmailDomains"),
        ({**FEDERATED, "allowedEmailDomains": {"example.com": True}}, "allowedEmailDomains"),
        # Entra maps no email: with allowed domains, everyone signing in through it would be refused.
        ({**FEDERATED, "allowedEmailDomains": ["example.com"]}, "identityProviders[1].attributeMapping"),
    ],
)
def test_a_wrong_setting_names_its_key(context: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=rf"(context )?{named.replace('[', r'\[').replace(']', r'\]')}"):
        StackConfig.from_mapping(context)


def test_the_settings_read_from_the_command_line() -> None:
    """`cdk -c identityProviders='[...]'` passes text."""
    config = StackConfig.from_mapping({**FEDERATED, "identityProviders": json.dumps([OKTA, ENTRA])})
    assert [provider.name for provider in config.identity_providers] == ["Okta", "Entra"]
    assert config.identity_providers[0].client_secret_name == OKTA["clientSecretName"]
    assert config.identity_providers[1].metadata_url == ENTRA["metadataUrl"]
    assert StackConfig.from_mapping({"identityProviders": []}).identity_providers == ()


def test_cdk_json_configures_no_provider() -> None:
    context = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"]
    assert StackConfig.from_mapping(context).identity_providers == ()


# A key pattern whose user is everything before the first '/': the one that carries `<provider>_<id>` names.
SLASH_KEY_PATTERN = r"(?P<user>[^/]+)/(?P<file>.+)"


def test_cognito_username_with_providers_and_the_default_placement_is_refused_naming_why() -> None:
    """Cognito names a federated person `Okta_00u1abcd...`; the default placement stops at the first `_`, so
    their upload `Okta_00u1.../report.pdf` would be read back as Okta's and refused (400): nobody federated
    could upload. The synth says so, and what to use instead."""
    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping({**FEDERATED, "userClaim": "cognito:username"})

    message = str(raised.value)
    assert message.startswith(
        "context userClaim='cognito:username' with identityProviders cannot work with keyLayout='default'"
    )
    assert "Okta_00u1abcd2EFGH3ijk4x7" in message
    assert "credits their upload 'Okta_00u1abcd2EFGH3ijk4x7/report.pdf' to 'Okta'" in message
    assert "every upload of a person who signs in through a provider (400)" in message
    assert "allowed: userClaim=sub (the default" in message
    assert SLASH_KEY_PATTERN in message


def test_cognito_username_with_providers_is_refused_under_any_placement_that_cannot_read_it_back() -> None:
    placement = r"(?P<user>[^_]+)_(?P<file>.+)"
    with pytest.raises(ConfigError, match=r"cannot work with keyLayout='\(\?P<user>\[\^_\]\+\)_"):
        StackConfig.from_mapping({**FEDERATED, "userClaim": "cognito:username", "keyLayout": placement})


def test_cognito_username_with_providers_is_accepted_with_a_placement_that_reads_it_back() -> None:
    """Only the combination that cannot work is refused: a placement whose user ends at the first '/' credits
    `Okta_00u1.../report.pdf` to `Okta_00u1...`."""
    config = StackConfig.from_mapping(
        {**FEDERATED, "userClaim": "cognito:username", "keyLayout": SLASH_KEY_PATTERN}
    )
    assert config.user_claim == "cognito:username"
    # Without providers the user names are the operator's own: nothing to refuse here.
    assert StackConfig.from_mapping({"userClaim": "cognito:username"}).user_claim == "cognito:username"
    # `sub` (the default) is Cognito's id, which every placement reads back.
    assert StackConfig.from_mapping(FEDERATED).user_claim == "sub"


ENTRA_WITH_EMAIL = {
    **ENTRA,
    "attributeMapping": {"email": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"},
}
ALLOWED_DOMAINS = {
    **FEDERATED,
    "identityProviders": [OKTA, ENTRA_WITH_EMAIL],
    "allowedEmailDomains": ["Example.com", "example.org"],
}


@pytest.fixture(scope="module")
def allowed_domains_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-allowed-domains"), ALLOWED_DOMAINS)


def test_allowed_email_domains_read_from_cdk_json_and_the_command_line() -> None:
    assert StackConfig.from_mapping(ALLOWED_DOMAINS).allowed_email_domains == ("example.com", "example.org")
    for given in ('["example.com", "example.org"]', "example.com,example.org"):
        config = StackConfig.from_mapping({**ALLOWED_DOMAINS, "allowedEmailDomains": given})
        assert config.allowed_email_domains == ("example.com", "example.org")
    assert StackConfig.from_mapping(FEDERATED).allowed_email_domains == ()
    assert StackConfig.from_mapping({**FEDERATED, "allowedEmailDomains": []}).allowed_email_domains == ()


def test_allowed_email_domains_say_why_each_provider_must_map_email() -> None:
    with pytest.raises(ConfigError) as raised:
        StackConfig.from_mapping({**ALLOWED_DOMAINS, "identityProviders": [OKTA, ENTRA]})
    message = str(raised.value)
    assert message.startswith(
        "context identityProviders[1].attributeMapping needs 'email' with allowedEmailDomains"
    )
    assert "every sign-in through Entra would be refused" in message


def test_the_pool_checks_a_new_federated_persons_domain_before_making_their_account(
    allowed_domains_synth: Synth,
) -> None:
    assert allowed_domains_synth.synth_error is None
    _, pool = _one(allowed_domains_synth, "AWS::Cognito::UserPool")
    guards = {
        logical_id: function
        for logical_id, function in allowed_domains_synth.resources("AWS::Lambda::Function").items()
        if function["Properties"]["Handler"] == "sign_up_guard.handler.lambda_handler"
    }
    ((guard_id, guard),) = guards.items()
    assert pool["Properties"]["LambdaConfig"] == {"PreSignUp": {"Fn::GetAtt": [guard_id, "Arn"]}}
    variables = guard["Properties"]["Environment"]["Variables"]
    assert variables["ALLOWED_EMAIL_DOMAINS"] == "example.com,example.org"
    # Cognito waits 5 seconds for a trigger; the guard reads nothing but its event.
    assert guard["Properties"]["Timeout"] <= 5
    (permission,) = [
        permission
        for permission in allowed_domains_synth.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [guard_id, "Arn"]}
    ]
    assert permission["Properties"]["Principal"] == "cognito-idp.amazonaws.com"
    pool_id, _ = _one(allowed_domains_synth, "AWS::Cognito::UserPool")
    assert permission["Properties"]["SourceArn"] == {"Fn::GetAtt": [pool_id, "Arn"]}
    # Its role may write its own logs and traces, nothing of the pool, the tables or the bucket.
    policies = json.dumps(
        [
            policy["Properties"]["PolicyDocument"]
            for policy in allowed_domains_synth.resources("AWS::IAM::Policy").values()
            if any(
                role.get("Ref") == guard["Properties"]["Role"]["Fn::GetAtt"][0]
                for role in policy["Properties"]["Roles"]
            )
        ]
    )
    assert "cognito-idp:" not in policies
    assert "dynamodb:" not in policies
    assert "s3:" not in policies


def test_the_trigger_passes_cdk_nag_and_cfn_lint(allowed_domains_synth: Synth) -> None:
    from cfnlint.api import lint  # type: ignore[import-untyped]

    (report,) = [
        report
        for report in allowed_domains_synth.validation_report["pluginReports"]
        if report["pluginName"] == "AwsSolutions"
    ]
    assert report["violations"] == []
    matches = lint(json.dumps(allowed_domains_synth.template_json), regions=["us-east-1", "eu-west-1"])
    assert [f"{m.rule.id} {m.message}" for m in matches if m.rule.id[0] == "E"] == []


def test_without_allowed_domains_the_pool_has_no_trigger(federated_synth: Synth) -> None:
    _, pool = _one(federated_synth, "AWS::Cognito::UserPool")
    assert "LambdaConfig" not in pool["Properties"]
    assert not [
        function
        for function in federated_synth.resources("AWS::Lambda::Function").values()
        if function["Properties"].get("Handler") == "sign_up_guard.handler.lambda_handler"
    ]
