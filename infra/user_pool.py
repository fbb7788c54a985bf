"""The Cognito user pool people sign in at (`userAccess`), with the page's app client and the admin group."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from infra.config import RemovalChoice
from infra.nag import acknowledge
from infra.people import (
    ADMIN_GROUP_DESCRIPTION,
    CUSTOM_CLAIM_PREFIX,
    PASSWORD_POLICY,
    USER_WRITABLE_ATTRIBUTES,
)


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
    ) -> None:
        """`user_pool_id`: an existing pool to use (None: the stack creates one, with the admin group).

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
        self.client = self.user_pool.add_client(
            "WebClient",
            # A browser cannot keep a secret.
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
        )


def _claim_attribute(user_claim: str) -> dict[str, cognito.ICustomAttribute] | None:
    """The pool's custom attribute for a `custom:` claim: mutable, so that an administrator can set it
    (AdminUpdateUserAttributes) for people already in the pool; people cannot (the client's write
    attributes leave it out)."""
    if not user_claim.startswith(CUSTOM_CLAIM_PREFIX):
        return None
    return {user_claim.removeprefix(CUSTOM_CLAIM_PREFIX): cognito.StringAttribute(mutable=True)}
