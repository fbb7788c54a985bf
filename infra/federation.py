"""Sign-in with an organisation's identity provider (`identityProviders`, `signInDomainPrefix`), read once.

Each provider is an OpenID Connect or SAML 2.0 identity provider of the user pool (Entra ID, Okta, Google
Workspace, ...). People reach it through the pool's managed login domain (a Cognito prefix domain) with an
authorization code and PKCE; the page holds the tokens as it holds a password sign-in's. Imported by the
CDK app and the local stack alike, so it never imports the CDK.

A client secret never appears in `cdk.json`: an OIDC provider names a Secrets Manager secret
(`clientSecretName`), which CloudFormation reads at deploy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

OIDC = "OIDC"
SAML = "SAML"
DEFAULT_OIDC_SCOPES = ("openid", "email", "profile")
# Cognito's names of its own and of the social providers: a provider of the pool may not take them.
RESERVED_PROVIDER_NAMES = frozenset({"cognito", "google", "facebook", "loginwithamazon", "signinwithapple"})
# 2-32 characters; no `_`, which Cognito puts between a provider's name and the person's id in user names.
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{1,31}$")
# Cognito's rule for a prefix domain: lower-case letters, digits and hyphens, not at either end.
_DOMAIN_PREFIX = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_FORBIDDEN_IN_PREFIX = ("aws", "amazon", "cognito")
# The pool's standard attributes a provider's attribute may fill (`sub` and the `_verified` flags are
# Cognito's own); `custom:NAME` attributes are allowed too, except the one naming a person's files.
STANDARD_ATTRIBUTES = frozenset(
    {
        "address",
        "birthdate",
        "email",
        "family_name",
        "gender",
        "given_name",
        "locale",
        "middle_name",
        "name",
        "nickname",
        "phone_number",
        "picture",
        "preferred_username",
        "profile",
        "updated_at",
        "website",
        "zoneinfo",
    }
)
_CUSTOM_ATTRIBUTE = re.compile(r"^custom:[A-Za-z0-9_.-]{1,20}$")
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_COMMON_KEYS = frozenset({"type", "name", "attributeMapping"})
_KEYS = {
    OIDC: _COMMON_KEYS | {"issuer", "clientId", "clientSecretName", "scopes"},
    SAML: _COMMON_KEYS | {"metadataUrl"},
}


class FederationError(ValueError):
    """An entry of `identityProviders` (or the domain prefix) is wrong; the message names the key."""


@dataclass(frozen=True, kw_only=True)
class IdentityProvider:
    """One external identity provider of the pool, as `cdk.json` names it."""

    kind: str  # OIDC or SAML
    name: str
    attribute_mapping: Mapping[str, str] = field(default_factory=dict)
    # OIDC
    issuer: str | None = None
    client_id: str | None = None
    client_secret_name: str | None = None
    scopes: tuple[str, ...] = DEFAULT_OIDC_SCOPES
    # SAML
    metadata_url: str | None = None


_ALLOWED = (
    'a list of {"type": "OIDC", "name", "issuer", "clientId", "clientSecretName", "scopes"?, '
    '"attributeMapping"?} and {"type": "SAML", "name", "metadataUrl", "attributeMapping"?}'
)


def identity_providers(key: str, value: Any) -> tuple[IdentityProvider, ...]:
    """The providers of `identityProviders`; FederationError names the entry and the key that is wrong."""
    if not isinstance(value, list):
        raise FederationError(f"context {key}={value!r} is invalid; allowed: {_ALLOWED}")
    providers = tuple(_provider(f"{key}[{index}]", entry) for index, entry in enumerate(value))
    names = [provider.name.lower() for provider in providers]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise FederationError(
                f"context {key}[{index}].name={providers[index].name!r} is taken by another provider "
                "(Cognito compares names without case); allowed: a name of its own"
            )
    return providers


def _provider(where: str, entry: Any) -> IdentityProvider:
    if not isinstance(entry, dict):
        raise FederationError(f"context {where}={entry!r} is invalid; allowed: an object, {_ALLOWED}")
    if "clientSecret" in entry:
        raise FederationError(
            f"context {where}.clientSecret: a client secret never goes in cdk.json; store it in AWS "
            "Secrets Manager and name that secret with clientSecretName"
        )
    kind = entry.get("type")
    if kind not in _KEYS:
        raise FederationError(f"context {where}.type={kind!r} is invalid; allowed: {OIDC}, {SAML}")
    unknown = sorted(set(entry) - _KEYS[kind])
    if unknown:
        raise FederationError(
            f"context {where} has unknown keys {unknown} for a {kind} provider; allowed: "
            f"{', '.join(sorted(_KEYS[kind]))}"
        )
    name = entry.get("name")
    if not isinstance(name, str) or not _PROVIDER_NAME.fullmatch(name):
        raise FederationError(
            f"context {where}.name={name!r} is invalid; allowed: 2-32 characters of A-Z a-z 0-9 . -, "
            "starting with a letter or digit (it is shown on the page: 'Sign in with <name>')"
        )
    if name.lower() in RESERVED_PROVIDER_NAMES:
        raise FederationError(
            f"context {where}.name={name!r} is Cognito's own name for a provider; allowed: another name"
        )
    mapping = _attribute_mapping(f"{where}.attributeMapping", entry.get("attributeMapping", {}))
    if kind == SAML:
        return IdentityProvider(
            kind=SAML,
            name=name,
            attribute_mapping=mapping,
            metadata_url=_https_url(f"{where}.metadataUrl", entry.get("metadataUrl")),
        )
    client_id = entry.get("clientId")
    if not isinstance(client_id, str) or not client_id.strip():
        raise FederationError(
            f"context {where}.clientId={client_id!r} is invalid; allowed: the client id the identity "
            "provider gave the user pool's registration"
        )
    secret_name = entry.get("clientSecretName")
    if not isinstance(secret_name, str) or not _SECRET_NAME.fullmatch(secret_name):
        raise FederationError(
            f"context {where}.clientSecretName={secret_name!r} is invalid; allowed: the name of an AWS "
            "Secrets Manager secret (in the stack's account and region) whose value is the client secret"
        )
    scopes = entry.get("scopes", list(DEFAULT_OIDC_SCOPES))
    if (
        not isinstance(scopes, list)
        or "openid" not in scopes
        or not all(isinstance(scope, str) and scope and " " not in scope for scope in scopes)
    ):
        raise FederationError(
            f"context {where}.scopes={scopes!r} is invalid; allowed: a list of OIDC scopes including "
            f"'openid', e.g. {list(DEFAULT_OIDC_SCOPES)}"
        )
    return IdentityProvider(
        kind=OIDC,
        name=name,
        attribute_mapping=mapping,
        issuer=_https_url(f"{where}.issuer", entry.get("issuer")),
        client_id=client_id,
        client_secret_name=secret_name,
        scopes=tuple(scopes),
    )


def _https_url(where: str, value: Any) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme != "https" or not parts.netloc:
        raise FederationError(f"context {where}={value!r} is invalid; allowed: an https:// URL")
    return str(value)


def _attribute_mapping(where: str, value: Any) -> dict[str, str]:
    allowed = (
        'an object of user pool attribute -> the provider\'s attribute, e.g. {"email": "email"} '
        '(SAML: {"email": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress"}); '
        f"pool attributes: {', '.join(sorted(STANDARD_ATTRIBUTES))} or custom:NAME"
    )
    if not isinstance(value, dict):
        raise FederationError(f"context {where}={value!r} is invalid; allowed: {allowed}")
    for attribute, source in value.items():
        if attribute not in STANDARD_ATTRIBUTES and not _CUSTOM_ATTRIBUTE.fullmatch(str(attribute)):
            raise FederationError(
                f"context {where} maps onto {attribute!r}, not an attribute; allowed: {allowed}"
            )
        if not isinstance(source, str) or not source.strip():
            raise FederationError(f"context {where}.{attribute}={source!r} is invalid; allowed: {allowed}")
    return dict(value)


def domain_prefix(key: str, value: Any) -> str:
    """A Cognito prefix domain (`<prefix>.auth.<region>.amazoncognito.com`): unique in its region."""
    if (
        not isinstance(value, str)
        or not _DOMAIN_PREFIX.fullmatch(value)
        or any(word in value for word in _FORBIDDEN_IN_PREFIX)
    ):
        raise FederationError(
            f"context {key}={value!r} is invalid; allowed: 1-63 characters of a-z 0-9 -, not starting or "
            "ending with -, without 'aws', 'amazon' or 'cognito' (the managed login's address is "
            "https://<prefix>.auth.<region>.amazoncognito.com, unique in the region)"
        )
    return value
