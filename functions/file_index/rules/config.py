"""Reading a function's configuration from its environment: the error type, the readers of one variable,
shared by every function and admin tool (`file_index.store.sdk` builds their boto3 clients).

Every reader takes the environment as a mapping (the process environment or a test's dict), treats a
variable that is empty or only white space as unset, and raises `ConfigError` naming the variable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from file_index.rules.key_pattern import InvalidKeyPatternError, KeyPattern


class ConfigError(RuntimeError):
    """A variable is missing or invalid: a deployment fault, not a client's. The message names it."""


def required(env: Mapping[str, str], name: str, purpose: str | None = None) -> str:
    """The variable's value, stripped; `purpose` says in the error what the function needs it for."""
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"environment variable {name} is required" + (f": {purpose}" if purpose else ""))
    return value


def positive_int(env: Mapping[str, str], name: str, default: int, *, maximum: int | None = None) -> int:
    """A whole number from 1 to `maximum` (unbounded when None), in digits; `default` when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    bound = f" up to {maximum}" if maximum is not None else ""
    if not (raw.isascii() and raw.isdecimal()):
        raise ConfigError(f"{name} must be a positive integer{bound}, got {raw!r}")
    value = int(raw)
    if value < 1 or (maximum is not None and value > maximum):
        raise ConfigError(f"{name} must be a positive integer{bound}, got {raw!r}")
    return value


def positive_seconds(env: Mapping[str, str], name: str, default: float, *, maximum: float) -> float:
    """A duration in seconds above 0 and at most `maximum`, fractions allowed; `default` when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    # NaN fails both comparisons, so "nan", "inf" and words all land here.
    if not 0 < value <= maximum:
        raise ConfigError(f"{name} must be a number of seconds above 0 and at most {maximum:g}, got {raw!r}")
    return value


def key_pattern(env: Mapping[str, str]) -> KeyPattern:
    """`KEY_LAYOUT`: how a key names its uploading user (see `file_index.rules.key_pattern`)."""
    try:
        return KeyPattern.parse(env.get("KEY_LAYOUT"))
    except InvalidKeyPatternError as error:
        raise ConfigError(f"KEY_LAYOUT is invalid: {error}") from error
