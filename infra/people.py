"""Sign-in for people: the Cognito user pool, its app client and admin group (`userAccess`).

The settings below are said once and used twice: by the CDK construct (infra/user_pool.py, which this
module keeps apart so that the local stack never starts the CDK) and by the local stack's pool
(local_stack/cognito.py), so that a password the page accepts locally is one the deployed pool accepts.
"""

from __future__ import annotations

from typing import Any

# Cognito's password policy, in its API's terms: 12 characters of four kinds.
PASSWORD_POLICY: dict[str, Any] = {
    "MinimumLength": 12,
    "RequireUppercase": True,
    "RequireLowercase": True,
    "RequireNumbers": True,
    "RequireSymbols": True,
    "TemporaryPasswordValidityDays": 7,
}


def page_password_policy(policy: dict[str, Any] = PASSWORD_POLICY) -> dict[str, Any]:
    """The policy as the page's config.json says it (`passwordPolicy`): the page shows these rules under
    every new password's field and checks them before sending one to Cognito."""
    return {
        "minimumLength": policy["MinimumLength"],
        "requireLowercase": policy["RequireLowercase"],
        "requireUppercase": policy["RequireUppercase"],
        "requireNumbers": policy["RequireNumbers"],
        "requireSymbols": policy["RequireSymbols"],
    }


# The page signs in with USER_PASSWORD_AUTH over TLS to Cognito itself (never to the search API), and
# refreshes with the refresh token; SRP stays allowed for other clients.
USER_POOL_CLIENT_AUTH_FLOWS = ("ALLOW_USER_PASSWORD_AUTH", "ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH")
ADMIN_GROUP_DESCRIPTION = "May list any user's files and the whole bucket, and download any file"
# What people may write about themselves with their access token (Cognito's UpdateUserAttributes), as the
# app client's write attributes: only their locale, which the product never reads. Cognito takes an empty
# list as "every standard attribute" (and custom ones), so the list names one harmless attribute, never
# none. The claim that names a person's files (`userClaim`) is never in it.
USER_WRITABLE_ATTRIBUTES = ("locale",)
CUSTOM_CLAIM_PREFIX = "custom:"
