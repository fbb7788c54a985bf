"""The search function's configuration, read and validated once per cold start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from search.errors import ConfigError

DEFAULT_DOWNLOAD_URL_EXPIRY_SECONDS = 300
# SigV4 presigned URLs are valid for at most 7 days.
MAX_DOWNLOAD_URL_EXPIRY_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class SearchConfig:
    table_name: str
    bucket_name: str  # the only bucket downloads may presign
    cursor_secret_arn: str  # Secrets Manager secret holding the HMAC key of paging cursors
    download_url_expiry_seconds: int


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"environment variable {name} is required")
    return value


def load_config(environ: Mapping[str, str] | None = None) -> SearchConfig:
    """The configuration from `environ` (default: the process environment); ConfigError names a fault."""
    env = os.environ if environ is None else environ
    raw_expiry = env.get("DOWNLOAD_URL_EXPIRY_SECONDS", "").strip()
    expiry = DEFAULT_DOWNLOAD_URL_EXPIRY_SECONDS
    if raw_expiry:
        try:
            expiry = int(raw_expiry)
        except ValueError:
            raise ConfigError(f"DOWNLOAD_URL_EXPIRY_SECONDS must be an integer, not {raw_expiry!r}") from None
        if not 1 <= expiry <= MAX_DOWNLOAD_URL_EXPIRY_SECONDS:
            raise ConfigError(
                f"DOWNLOAD_URL_EXPIRY_SECONDS must be between 1 and {MAX_DOWNLOAD_URL_EXPIRY_SECONDS}"
            )
    return SearchConfig(
        table_name=_required(env, "TABLE_NAME"),
        bucket_name=_required(env, "BUCKET_NAME"),
        cursor_secret_arn=_required(env, "CURSOR_SECRET_ARN"),
        download_url_expiry_seconds=expiry,
    )
