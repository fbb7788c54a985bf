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
