"""The checks of a request's query string that request validation does not make.

Parameters a route does not take, parameters given more than once, integers not written in digits, and
the `meta.NAME` and `tag.NAME` filters.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from search.errors import BadRequest

# What a query string looks like to these checks: each parameter with every value it was given.
QueryString = Mapping[str, Sequence[str]]

_INTEGER = re.compile(r"-?[0-9]+")


def _suggestion(name: str, known: tuple[str, ...]) -> str | None:
    """The known parameter `name` was probably meant to be: same letters in another case, or close."""
    import difflib  # only a refused request needs it

    by_lower = {candidate.lower(): candidate for candidate in known}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def refuse_unknown(
    given: QueryString, route: str, known: tuple[str, ...] = (), prefixes: tuple[str, ...] = ()
) -> None:
    """BadRequest naming each parameter of `given` that `route` does not take (`known`, and any name
    starting with one of `prefixes`), with the known one it was probably meant to be."""
    unknown = sorted(name for name in given if name not in known and not name.startswith(prefixes))
    if not unknown:
        return
    parts = []
    for name in unknown:
        suggestion = _suggestion(name, known)
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        parts.append(f"unknown query parameter {name!r}{hint}")
    takes = ", ".join([*known, *(f"{prefix}NAME" for prefix in prefixes)]) if known else "none"
    raise BadRequest(f"{'; '.join(parts)}; {route} takes {takes}")


def repeated_message(given: QueryString) -> str | None:
    """The 400's message for parameters given more than once (each named with its count), or None."""
    repeated = [
        f"{name} is given {len(values)} times" for name, values in sorted(given.items()) if len(values) > 1
    ]
    return f"query parameter {'; '.join(repeated)}: give each once" if repeated else None


def refuse_repeated(given: QueryString, names: Collection[str]) -> None:
    """BadRequest naming every parameter given more than once, if one of `names` is.

    Request validation reads such a parameter of a route's signature as a list and refuses it; a
    parameter of a query model gets its first value instead, so the model's routes check here first.
    """
    if any(len(given.get(name, ())) > 1 for name in names):
        message = repeated_message(given)
        assert message is not None
        raise BadRequest(message)


def check_whole_numbers(values: Mapping[str, str], names: tuple[str, ...]) -> None:
    """BadRequest unless each of the parameters `names` is written in digits (with a minus sign);
    `values` are the request's single-value query string parameters.

    Request validation has already read them as integers, but pydantic reads `7.0`, `+7`, ` 7` and `7_0`
    as 7 (its strict mode refuses every string, and query values are all strings).
    """
    for name in names:
        value = values.get(name)
        if value is not None and not _INTEGER.fullmatch(value):
            raise BadRequest(f"query parameter {name}: Input should be an integer written in digits only")


def named_filters(given: QueryString, prefix: str) -> tuple[tuple[str, str], ...]:
    """The (NAME, VALUE) pairs of the `{prefix}NAME=VALUE` parameters; each NAME once."""
    pairs = []
    for parameter, values in sorted(given.items()):
        if not parameter.startswith(prefix):
            continue
        name = parameter.removeprefix(prefix)
        if not name:
            raise BadRequest(
                f"query parameter {parameter}: give a name after {prefix!r}, e.g. {prefix}project"
            )
        if len(values) != 1:
            raise BadRequest(f"query parameter {parameter} is given {len(values)} times: give it once")
        pairs.append((name, values[0]))
    return tuple(pairs)
