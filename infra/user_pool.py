"""The Cognito user pool people sign in at (`userAccess`), with the page's app client and the admin group.

With `identityProviders` the pool also has its organisations' identity providers (OIDC, SAML 2.0), a
managed login domain, and the page's app client takes the authorization code grant (PKCE; the client has
no secret) back to the page's own address, which is also its only sign-out URL (the page ends the managed
login's session at the domain's `/logout`, which sends the browser back there). With `allowedEmailDomains`
the pool's pre sign-up trigger (`functions/sign_up_guard`) refuses an account to a person whose address,
as their provider gives it, is in no allowed domain.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, SecretValue
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from infra.config import RemovalChoice
from infra.federation import OIDC, IdentityProvider
from infra.nag import acknowledge
from infra.people import (
    ADMIN_GROUP_DESCRIPTION,
    CUSTOM_CLAIM_PREFIX,
    PASSWORD_POLICY,
    USER_WRITABLE_ATTRIBUTES,
    page_password_policy,
)
from infra.powertools_function import FunctionBasics, PowertoolsFunction
from sign_up_guard.guard import DOMAINS_VARIABLE, to_env

# Cognito waits at most 5 seconds for a trigger; the guard reads nothing but its event.
SIGN_UP_GUARD_TIMEOUT = Duration.seconds(5)


class People(Construct):
    """The user pool people sign in at (or an existing one), the page's app client, the admin group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        user_pool_id: str | None,
        admin_group: str,
        removal: RemovalChoice,
        user_claim: str,
        identity_providers: tuple[IdentityProvider, ...] = (),
        sign_in_domain_prefix: str | None = None,
        allowed_email_domains: tuple[str, ...] = (),
        basics: FunctionBasics | None = None,
    ) -> None:
        """`user_pool_id`: an existing pool to use (None: the stack creates one, with the admin group).

        `identity_providers` (with `sign_in_domain_prefix`): the pool's external providers and its
        managed login domain; the app client is added by `add_page_client`, once the page's address is
        known. `allowed_email_domains` (with `basics`, for its function): the pre sign-up trigger that
        refuses an account to a person signing in through a provider from any other email domain.

        `user_claim` names a person's files; a `custom:` claim becomes an attribute of the stack's pool
        that only administrators set. The app client may write `USER_WRITABLE_ATTRIBUTES` only, so no
        person can change the claim with their own access token.
        """
        super().__init__(scope, construct_id)
        self.creates_pool = user_pool_id is None
        if user_pool_id is not None:
            # The operator's pool: its settings and groups are theirs; the stack adds only an app client.
            self.user_pool: cognito.IUserPool = cognito.UserPool.from_user_pool_id(
                self, "UserPool", user_pool_id
            )
        else:
            pool = cognito.UserPool(
                self,
                "UserPool",
                # People are added by an operator (README, "Adding people"): nobody signs themselves up.
                self_sign_up_enabled=False,
                sign_in_aliases=cognito.SignInAliases(username=True, email=True),
                password_policy=cognito.PasswordPolicy(
                    min_length=PASSWORD_POLICY["MinimumLength"],
                    require_lowercase=PASSWORD_POLICY["RequireLowercase"],
                    require_uppercase=PASSWORD_POLICY["RequireUppercase"],
                    require_digits=PASSWORD_POLICY["RequireNumbers"],
                    require_symbols=PASSWORD_POLICY["RequireSymbols"],
                    temp_password_validity=Duration.days(PASSWORD_POLICY["TemporaryPasswordValidityDays"]),
                ),
                mfa=cognito.Mfa.OPTIONAL,
                mfa_second_factor=cognito.MfaSecondFactor(sms=False, otp=True),
                account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
                deletion_protection=removal is not RemovalChoice.DESTROY,
                removal_policy=removal.policy,
                custom_attributes=_claim_attribute(user_claim),
            )
            self.user_pool = pool
            cognito.CfnUserPoolGroup(
                self,
                "AdminGroup",
                user_pool_id=pool.user_pool_id,
                group_name=admin_group,
                description=ADMIN_GROUP_DESCRIPTION,
            )
            acknowledge(
                pool,
                "AwsSolutions-COG2",
                "MFA is optional, as the product specifies: people may add an authenticator app (TOTP); an "
                "operator who needs it for everyone sets MfaConfiguration ON on the pool.",
            )
            acknowledge(
                pool,
                "AwsSolutions-COG8",
                "The Essentials feature plan: the Plus plan's threat protection is billed per monthly "
                "active user; an operator who wants it switches the pool's plan.",
            )
            acknowledge(
                pool,
                "AwsSolutions-COG3",
                "Threat protection (advanced security) needs Cognito's Plus feature plan, billed per "
                "monthly active user; an operator who wants it switches the pool's plan.",
            )
        self._identity_providers = identity_providers
        self.providers: list[Construct] = []
        # The managed login's address (https://<prefix>.auth.<region>.amazoncognito.com); None: no domain.
        self.sign_in_domain: str | None = None
        self._domain: cognito.UserPoolDomain | None = None
        if identity_providers and sign_in_domain_prefix is not None:
            self._add_federation(identity_providers, sign_in_domain_prefix)
        self.sign_up_guard: PowertoolsFunction | None = None
        if allowed_email_domains:
            assert isinstance(self.user_pool, cognito.UserPool), "allowedEmailDomains needs the stack's pool"
            assert basics is not None
            self.sign_up_guard = self._add_sign_up_guard(self.user_pool, allowed_email_domains, basics)

    def _add_federation(self, identity_providers: tuple[IdentityProvider, ...], domain_prefix: str) -> None:
        self._domain = self.user_pool.add_domain(
            "SignInDomain",
            cognito_domain=cognito.CognitoDomainOptions(domain_prefix=domain_prefix),
            managed_login_version=cognito.ManagedLoginVersion.NEWER_MANAGED_LOGIN,
        )
        self.sign_in_domain = self._domain.base_url()
        for provider in identity_providers:
            mapping = cognito.AttributeMapping(
                custom={
                    attribute: cognito.ProviderAttribute.other(source)
                    for attribute, source in provider.attribute_mapping.items()
                }
            )
            if provider.kind == OIDC:
                assert provider.issuer
                assert provider.client_id
                assert provider.client_secret_name
                self.providers.append(
                    cognito.UserPoolIdentityProviderOidc(
                        self,
                        f"Provider{provider.name}",
                        user_pool=self.user_pool,
                        name=provider.name,
                        issuer_url=provider.issuer,
                        client_id=provider.client_id,
                        # A dynamic reference: CloudFormation reads the secret at deploy, the template
                        # holds only its name.
                        client_secret=SecretValue.secrets_manager(
                            provider.client_secret_name
                        ).unsafe_unwrap(),
                        scopes=list(provider.scopes),
                        attribute_mapping=mapping,
                    )
                )
            else:
                assert provider.metadata_url
                self.providers.append(
                    cognito.UserPoolIdentityProviderSaml(
                        self,
                        f"Provider{provider.name}",
                        user_pool=self.user_pool,
                        name=provider.name,
                        metadata=cognito.UserPoolIdentityProviderSamlMetadata.url(provider.metadata_url),
                        attribute_mapping=mapping,
                    )
                )

    def _add_sign_up_guard(
        self, pool: cognito.UserPool, domains: tuple[str, ...], basics: FunctionBasics
    ) -> PowertoolsFunction:
        """The pre sign-up trigger (functions/sign_up_guard): Cognito invokes it before it makes the account
        of a person signing in through a provider for the first time, and makes none if it fails."""
        guard = PowertoolsFunction(
            self,
            "SignUpGuard",
            handler="sign_up_guard.handler.lambda_handler",
            description="Refuses an account to a person signing in through a provider from another domain",
            service_name="sign-up-guard",
            environment={DOMAINS_VARIABLE: to_env(domains)},
            timeout=SIGN_UP_GUARD_TIMEOUT,
            memory_size=256,
            basics=basics,
        )
        pool.add_trigger(cognito.UserPoolOperation.PRE_SIGN_UP, guard.function)
        return guard

    def add_page_client(self, *, page_url: str) -> cognito.UserPoolClient:
        """The page's app client; with identity providers, the code grant back to `page_url` (the page)."""
        federation: dict[str, Any] = {}
        if self._domain is not None:
            federation = {
                "o_auth": cognito.OAuthSettings(
                    flows=cognito.OAuthFlows(authorization_code_grant=True),
                    scopes=[cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE],
                    callback_urls=[page_url],
                    # Where the managed login's /logout sends the browser back to (web/session.js's
                    # `logout_uri`: config.json's `signInRedirectUri`, this same address).
                    logout_urls=[page_url],
                ),
                "supported_identity_providers": [
                    cognito.UserPoolClientIdentityProvider.COGNITO,
                    *(
                        cognito.UserPoolClientIdentityProvider.custom(p.name)
                        for p in self._identity_providers
                    ),
                ],
            }
        self.client = self.user_pool.add_client(
            "WebClient",
            # A browser cannot keep a secret: the code grant is protected by PKCE instead.
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_password=True, user_srp=True),
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            id_token_validity=Duration.hours(1),
            access_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
            # People change nothing of themselves that the product reads (infra/people.py).
            write_attributes=cognito.ClientAttributes().with_standard_attributes(
                **dict.fromkeys(USER_WRITABLE_ATTRIBUTES, True)
            ),
            **federation,
        )
        if self._domain is not None:
            # The client names the providers: they must exist first.
            for provider in self.providers:
                self.client.node.add_dependency(provider)
            # Managed login (version 2) serves its pages once the client has a style: Cognito's own.
            cognito.CfnManagedLoginBranding(
                self,
                "ManagedLoginStyle",
                user_pool_id=self.user_pool.user_pool_id,
                client_id=self.client.user_pool_client_id,
                use_cognito_provided_values=True,
            )
        self._page_url = page_url
        return self.client

    def page_config(self) -> dict[str, Any]:
        """What the page's config.json says of signing in beyond the pool and its client: the stack's pool's
        password policy (an existing pool's is not known at synth: Cognito then names a broken rule itself);
        with identity providers, the managed login domain, the providers' names and the page's own
        callback URL."""
        config: dict[str, Any] = {}
        if self.creates_pool:
            config["passwordPolicy"] = page_password_policy()
        if self._domain is not None:
            config |= {
                "signInDomain": self.sign_in_domain,
                "identityProviders": [provider.name for provider in self._identity_providers],
                "signInRedirectUri": self._page_url,
            }
        return config


def _claim_attribute(user_claim: str) -> dict[str, cognito.ICustomAttribute] | None:
    """The pool's custom attribute for a `custom:` claim: mutable, so that an administrator can set it
    (AdminUpdateUserAttributes) for people already in the pool; people cannot (the client's write
    attributes leave it out)."""
    if not user_claim.startswith(CUSTOM_CLAIM_PREFIX):
        return None
    return {user_claim.removeprefix(CUSTOM_CLAIM_PREFIX): cognito.StringAttribute(mutable=True)}
