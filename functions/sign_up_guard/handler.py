"""The user pool's pre sign-up trigger: refuses an account to a person signing in through an identity
provider whose email address is not in an allowed domain (`sign_up_guard.guard`); thin on purpose.

The allowed domains are the environment's `ALLOWED_EMAIL_DOMAINS`, read at the first invocation: without
them the function refuses every such sign-up (a `ConfigError`), never lets one through. Cognito waits five
seconds for the trigger; it reads nothing but its event.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from file_index.rules.config import ConfigError
from sign_up_guard.guard import (
    DOMAINS_VARIABLE,
    InvalidDomainError,
    SignUpRefusedError,
    check_sign_up,
    domains_from_env,
    email_domain,
)

logger = Logger()


@functools.cache
def allowed_domains() -> tuple[str, ...]:
    try:
        return domains_from_env(os.environ.get(DOMAINS_VARIABLE, ""))
    except InvalidDomainError as error:
        raise ConfigError(f"environment variable {DOMAINS_VARIABLE}: {error}") from None


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    allowed = allowed_domains()
    try:
        check_sign_up(event, allowed)
    except SignUpRefusedError:
        # The provider (the user name's part before `_`) and the domain: enough to tell why, no address.
        provider = str(event.get("userName", "")).partition("_")[0]
        logger.info("sign-up refused", extra={"provider": provider, "emailDomain": email_domain(event)})
        raise
    return event
