"""Who may get an account by signing in through an organisation's identity provider (`allowedEmailDomains`).

Cognito makes a person who signs in through one of the pool's identity providers for the first time a user
of the pool, and invokes the pool's pre sign-up trigger just before, with `triggerSource`
`PreSignUp_ExternalProvider` and the attributes the provider's attribute mapping gave
(`request.userAttributes`). The sign-up is allowed only when the `email` attribute's domain is one of the
allowed domains, exactly (a sub-domain is another domain); an exception from the trigger refuses it, and
Cognito sends the person back to the page with an `error` whose `error_description` reads "PreSignUp failed
with error <message>.", which the page shows.

Only that trigger source is checked: an operator's AdminCreateUser (`PreSignUp_AdminCreateUser`) is the
operator's decision, and nobody signs themselves up (self sign-up is off). The trigger runs once per person,
at the account's creation: someone whose account exists is not checked again.

Imported by the CDK app too (`infra/config.py` checks `allowedEmailDomains` with `parse_domains`), so it
imports nothing of AWS.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

EXTERNAL_PROVIDER = "PreSignUp_ExternalProvider"
# The function's environment: the allowed domains, lower case, separated by commas.
DOMAINS_VARIABLE = "ALLOWED_EMAIL_DOMAINS"
# A DNS name of at least two labels, each 1-63 letters, digits and hyphens (not at either end), in ASCII
# (an internationalised domain in its xn-- form), at most 253 characters.
_DOMAIN = re.compile(
    r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
)
# What the person reads on the page (after Cognito's "PreSignUp failed with error "): no list of domains.
REFUSAL = (
    "your organisation account's email address is not in a domain this deployment allows, so no account "
    "was made for you; ask an administrator"
)


class SignUpRefusedError(Exception):
    """The sign-up is refused; the message is what the person is shown."""


class InvalidDomainError(ValueError):
    """A value of the allowed domains is not a domain name; the message names it."""


def parse_domains(values: Iterable[Any]) -> tuple[str, ...]:
    """The allowed domains, lower case, each once, in their order; InvalidDomainError names a bad one."""
    domains: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise InvalidDomainError(f"{value!r} is not a domain name")
        domain = value.strip().lower()
        if domain.startswith("@") or "@" in domain:
            raise InvalidDomainError(f"{value!r} is not a domain name: give it without '@' (example.com)")
        if not _DOMAIN.fullmatch(domain):
            raise InvalidDomainError(
                f"{value!r} is not a domain name such as example.com (letters, digits and hyphens, "
                "xn-- for an internationalised one)"
            )
        if domain not in domains:
            domains.append(domain)
    if not domains:
        raise InvalidDomainError("no domain given")
    return tuple(domains)


def domains_from_env(value: str) -> tuple[str, ...]:
    """The domains of the function's `ALLOWED_EMAIL_DOMAINS` (`to_env`'s text)."""
    return parse_domains(part for part in value.split(",") if part.strip())


def to_env(domains: Iterable[str]) -> str:
    return ",".join(domains)


def email_domain(event: Mapping[str, Any]) -> str | None:
    """The domain of the event's `email` attribute, lower case; None without an address."""
    request = event.get("request")
    attributes = request.get("userAttributes") if isinstance(request, Mapping) else None
    email = attributes.get("email") if isinstance(attributes, Mapping) else None
    if not isinstance(email, str):
        return None
    local, at, domain = email.strip().rpartition("@")
    if not at or not local or not domain:
        return None
    return domain.lower()


def check_sign_up(event: Mapping[str, Any], allowed: Collection[str]) -> None:
    """SignUpRefusedError unless the sign-up is not a provider's, or its address is in an allowed domain."""
    if event.get("triggerSource") != EXTERNAL_PROVIDER:
        return
    if email_domain(event) not in allowed:
        raise SignUpRefusedError(REFUSAL)
