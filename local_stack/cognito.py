"""Sign-in on the local stack: moto's Cognito user pool, and the authorizer API Gateway would run.

`create_user_pool` builds what the CDK stack deploys (infra/people.py): a pool with the same password
policy and optional MFA, an app client without a secret whose write attributes leave out every claim that
names a person, the admin group, and demo people the page can sign in with. Cognito's own API answers at
the stack's AWS endpoint (moto), so the page signs in there as it would at
`cognito-idp.{region}.amazonaws.com`, and the password never reaches the search API.

`IdTokenAuthorizer` is the API Gateway stand-in's Cognito authorizer for the `/me/...` routes. Like API
Gateway's it takes the token raw or after `Bearer `, checks its RS256 signature against the pool's key
set (read once, from the pool's own address, never from a request), the issuer, the expiry, and the
app client (`aud`) of an ID token (`token_use: id`; access tokens are refused), then hands the function
the claims as strings. Anything else is answered 401 `{"message": "Unauthorized"}`, as API Gateway does.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from infra.people import (
    ADMIN_GROUP_DESCRIPTION,
    PASSWORD_POLICY,
    USER_POOL_CLIENT_AUTH_FLOWS,
    USER_WRITABLE_ATTRIBUTES,
)

logger = logging.getLogger(__name__)

DEMO_USER = "demo"
DEMO_ADMIN = "admin"
# Cognito's clock tolerance is none: a token is refused from the second its `exp` names.
_BEARER = "bearer "


@dataclass(frozen=True)
class LocalUserPool:
    """The local pool's ids, issuer, and the demo people's passwords (made afresh at each start)."""

    pool_id: str
    client_id: str
    issuer: str
    jwks_url: str
    admin_group: str
    passwords: Mapping[str, str]


POOL_NAME = "s3-file-search-users"


def generated_password() -> str:
    # Meets the pool's policy: upper and lower case letters, digits and symbols, 20 characters.
    alphabet = string.ascii_letters + string.digits
    body = "".join(secrets.choice(alphabet) for _ in range(16))
    return f"{body}Aa1!"


def create_user_pool(cognito: Any, *, endpoint: str, region: str, admin_group: str) -> LocalUserPool:
    """The pool, its app client, the admin group and two demo people: `demo`, and `admin` in the group."""
    pool = cognito.create_user_pool(
        PoolName=POOL_NAME,
        Policies={"PasswordPolicy": PASSWORD_POLICY},
        # OPTIONAL MFA needs a second factor configured (an authenticator app, set per pool with
        # set_user_pool_mfa_config), as the CDK construct does.
        MfaConfiguration="OFF",
        AdminCreateUserConfig={"AllowAdminCreateUserOnly": True},
        AutoVerifiedAttributes=["email"],
    )["UserPool"]
    pool_id = pool["Id"]
    client_id = cognito.create_user_pool_client(
        UserPoolId=pool_id,
        ClientName="web",
        GenerateSecret=False,
        ExplicitAuthFlows=list(USER_POOL_CLIENT_AUTH_FLOWS),
        PreventUserExistenceErrors="ENABLED",
        # As the deployed client: people may write their locale and nothing the product reads. moto does
        # not enforce write attributes (docs/page.md says what that leaves open locally).
        WriteAttributes=list(USER_WRITABLE_ATTRIBUTES),
    )["UserPoolClient"]["ClientId"]
    cognito.create_group(GroupName=admin_group, UserPoolId=pool_id, Description=ADMIN_GROUP_DESCRIPTION)
    passwords = {}
    for username in (DEMO_USER, DEMO_ADMIN):
        passwords[username] = generated_password()
        cognito.admin_create_user(
            UserPoolId=pool_id,
            Username=username,
            MessageAction="SUPPRESS",
            UserAttributes=[{"Name": "email", "Value": f"{username}@example.com"}],
        )
        cognito.admin_set_user_password(
            UserPoolId=pool_id, Username=username, Password=passwords[username], Permanent=True
        )
    cognito.admin_add_user_to_group(UserPoolId=pool_id, Username=DEMO_ADMIN, GroupName=admin_group)
    return LocalUserPool(
        pool_id=pool_id,
        client_id=client_id,
        # The issuer Cognito (and moto) write into the tokens: the regional address, wherever it is served.
        issuer=f"https://cognito-idp.{region}.amazonaws.com/{pool_id}",
        jwks_url=f"{endpoint}/{pool_id}/.well-known/jwks.json",
        admin_group=admin_group,
        passwords=passwords,
    )


def read_key_set(url: str) -> KeySet:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (the local pool's own address)
        return KeySet.import_key_set(json.loads(response.read()))


def _claim_text(value: Any) -> str:
    """A claim as API Gateway hands it to the function: a string; a list's items joined by commas."""
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


class IdTokenAuthorizer:
    """Checks the Authorization header of a `/me/...` request as API Gateway's Cognito authorizer."""

    def __init__(self, *, issuer: str, client_id: str, keys: KeySet, clock: Any = time.time) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._keys = keys
        self._clock = clock

    def claims(self, authorization: str | None) -> dict[str, str] | None:
        """The token's claims as strings, or None: the request is answered 401 without the function."""
        if not authorization:
            return None
        token = authorization.strip()
        if token[: len(_BEARER)].lower() == _BEARER:
            token = token[len(_BEARER) :].strip()
        try:
            # Only RS256: `alg: none`, HS256 with the public key as secret and the like never verify.
            decoded = jwt.decode(token, self._keys, algorithms=["RS256"])
        except (JoseError, ValueError, TypeError) as error:
            logger.info("authorizer: token refused (%s)", type(error).__name__)
            return None
        claims = decoded.claims
        header = decoded.header
        if header.get("alg") != "RS256" or "kid" not in header:
            return None
        exp = claims.get("exp")
        if (
            claims.get("iss") != self.issuer
            or claims.get("token_use") != "id"
            or claims.get("aud") != self.client_id
            or not isinstance(exp, int | float)
            or exp <= self._clock()
        ):
            logger.info("authorizer: token refused (claims)")
            return None
        return {name: _claim_text(value) for name, value in claims.items()}
