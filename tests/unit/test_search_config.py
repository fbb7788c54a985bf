"""The search function's configuration: every missing or bad variable is named."""

from __future__ import annotations

import pytest

from search.config import SearchConfig, load_config
from search.errors import ConfigError

COMPLETE = {"TABLE_NAME": "FileMetaData", "BUCKET_NAME": "b", "CURSOR_SECRET_ARN": "arn:secret"}


def test_complete_environment() -> None:
    assert load_config(COMPLETE) == SearchConfig("FileMetaData", "b", "arn:secret", 300)
    assert load_config({**COMPLETE, "DOWNLOAD_URL_EXPIRY_SECONDS": "60"}).download_url_expiry_seconds == 60


@pytest.mark.parametrize("name", sorted(COMPLETE))
@pytest.mark.parametrize("value", [None, "", "  "])
def test_a_missing_variable_is_named(name: str, value: str | None) -> None:
    env = {k: v for k, v in COMPLETE.items() if k != name}
    if value is not None:
        env[name] = value
    with pytest.raises(ConfigError, match=name):
        load_config(env)


@pytest.mark.parametrize("value", ["soon", "0", "-5", "604801"])
def test_a_bad_expiry_is_named(value: str) -> None:
    with pytest.raises(ConfigError, match="DOWNLOAD_URL_EXPIRY_SECONDS"):
        load_config({**COMPLETE, "DOWNLOAD_URL_EXPIRY_SECONDS": value})
