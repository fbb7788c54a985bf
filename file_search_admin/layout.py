"""The index layout the commands write with: the deployment's `cdk.json` context, with overrides.

The stack gives its functions the layout from `cdk.json` (`bucketIndexShards`, `hotUsers`,
`multiAttributeIndex`); a command that writes entries from this machine (backfill, reconcile, migrate)
reads the same file, so it places entries where the deployed indexer does. `--cdk-json PATH` names
another file; without it, `./cdk.json` is read, and when there is none the 0.2.0 layout applies (one
shard, no hot users, no Z-order index) to the keys no option overrides, with a note on stderr naming them.
`--bucket-index-shards`, `--hot-users` and `--(no-)multi-attribute-index` override single keys, e.g. to
match a deployment made with `cdk -c`.

The table itself tells one key apart: it has the Z-order index exactly when the deployment switched
`multiAttributeIndex` on. `check_table_layout` compares the two before a command writes, so a layout that
does not match the deployment (no cdk.json here, another app's) is refused rather than writing entries
that a box search over the Z-order index cannot see.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from file_index.layout import IndexLayout, LayoutError, check_hot_users, check_shard_count
from file_index.schema import Z_ORDER_INDEX
from file_index.shards import MAX_SHARD_COUNT
from file_search_admin.errors import TableLayoutMismatchError

DEFAULT_CDK_JSON = Path("cdk.json")


class LayoutOptionError(ValueError):
    """An option or the cdk.json file gives no usable layout; the message names the option or the key."""


@dataclass(frozen=True)
class ResolvedLayout:
    layout: IndexLayout
    note: str | None = None  # what the user should know about where the layout came from
    # Where multiAttributeIndex came from, for a message about it: an option, a cdk.json, or the default.
    multi_attribute_source: str = "the 0.2.0 default"
    # Nothing named it (no cdk.json, no option): the deployed layout, when known, takes its place.
    defaulted: bool = False


def add_layout_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("index layout (default: the cdk.json context of the deployment)")
    group.add_argument(
        "--cdk-json",
        type=Path,
        metavar="PATH",
        help="the CDK app's cdk.json whose context names the layout (default ./cdk.json)",
    )
    group.add_argument("--bucket-index-shards", metavar="N", help="override bucketIndexShards (1-256)")
    group.add_argument("--hot-users", metavar="JSON", help="override hotUsers, e.g. '{\"ingest-bot\": 8}'")
    group.add_argument(
        "--multi-attribute-index",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="override multiAttributeIndex (the Z-order index)",
    )


def resolve_layout(args: argparse.Namespace) -> ResolvedLayout:
    """The layout `args` name; LayoutOptionError naming the option, file or key that is wrong."""
    source = args.cdk_json or DEFAULT_CDK_JSON
    context = _context(args.cdk_json)
    try:
        # Without a cdk.json, one shard: its entries are found by a reader of any shard count.
        base = IndexLayout() if context is None else IndexLayout.from_context(context)
    except LayoutError as error:
        raise LayoutOptionError(f"{source}: context {error}") from None
    shards = base.bucket_shards
    if args.bucket_index_shards is not None:
        shards = _shard_option(args.bucket_index_shards)
    hot_users = dict(base.hot_users)
    if args.hot_users is not None:
        hot_users = _hot_users_option(args.hot_users)
    multi = base.multi_attribute_index if args.multi_attribute_index is None else args.multi_attribute_index
    if args.multi_attribute_index is not None:
        multi_source = "--multi-attribute-index" if multi else "--no-multi-attribute-index"
    elif context is not None:
        multi_source = str(source)
    else:
        multi_source = f"the 0.2.0 default: no {DEFAULT_CDK_JSON} here"
    options = (args.bucket_index_shards, args.hot_users, args.multi_attribute_index)
    return ResolvedLayout(
        IndexLayout(bucket_shards=shards, hot_users=hot_users, multi_attribute_index=multi),
        None if context is not None else _defaults_note(args),
        multi_source,
        defaulted=context is None and all(option is None for option in options),
    )


def _defaults_note(args: argparse.Namespace) -> str | None:
    """Without a cdk.json: which keys fall back to the 0.2.0 layout, those no option overrides; or None."""
    defaults = [
        default
        for option, default in (
            (args.bucket_index_shards, "1 bucket shard"),
            (args.hot_users, "no hot users"),
            (args.multi_attribute_index, "no Z-order index"),
        )
        if option is None
    ]
    if not defaults:
        return None
    hint = "pass --cdk-json or the layout options to match the deployment"
    if len(defaults) == 3:
        layout = ", ".join(defaults)
        return f"no {DEFAULT_CDK_JSON} here: writing with the 0.2.0 index layout ({layout}); {hint}"
    unset = "it" if len(defaults) == 1 else "them"
    return (
        f"no {DEFAULT_CDK_JSON} here: writing with the 0.2.0 index layout's {' and '.join(defaults)} "
        f"(no option sets {unset}); {hint}"
    )


def check_table_layout(table: str, description: Mapping[str, Any], resolved: ResolvedLayout) -> None:
    """TableLayoutMismatchError when the table's Z-order index and the layout's multiAttributeIndex differ.

    `description` is DescribeTable's `Table`. An index being deleted counts as absent: the deployment
    switched it off, and no search reads it any more.
    """
    has_index = any(
        index.get("IndexName") == Z_ORDER_INDEX.name and index.get("IndexStatus") != "DELETING"
        for index in description.get("GlobalSecondaryIndexes", [])
    )
    if has_index == resolved.layout.multi_attribute_index:
        return
    if has_index:
        raise TableLayoutMismatchError(
            f"table {table!r} has the Z-order index {Z_ORDER_INDEX.name}, but the index layout has "
            f"multiAttributeIndex off ({resolved.multi_attribute_source}): the entries it wrote would be "
            "missing from box searches; run from the CDK app's folder, pass --cdk-json PATH, "
            "or --multi-attribute-index"
        )
    raise TableLayoutMismatchError(
        f"table {table!r} has no Z-order index {Z_ORDER_INDEX.name}, but the index layout has "
        f"multiAttributeIndex on ({resolved.multi_attribute_source}): the layout is not the deployed one; "
        "deploy it first, pass the deployment's --cdk-json PATH, or --no-multi-attribute-index"
    )


def cdk_json_context_or_none() -> dict[str, Any] | None:
    """The context of ./cdk.json, or None without one (or one that is no usable JSON)."""
    try:
        return _context(None)
    except LayoutOptionError:
        return None


def _context(path: Path | None) -> dict[str, Any] | None:
    """The context of `path` (default ./cdk.json); None when the default file does not exist."""
    source = path or DEFAULT_CDK_JSON
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        if path is not None:
            raise LayoutOptionError(f"--cdk-json {str(path)!r}: no such file") from None
        return None
    except OSError as error:
        raise LayoutOptionError(f"--cdk-json {str(source)!r}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise LayoutOptionError(f"--cdk-json {str(source)!r} is not JSON: {error}") from None
    context = document.get("context", {}) if isinstance(document, dict) else None
    if not isinstance(context, dict):
        raise LayoutOptionError(f"--cdk-json {str(source)!r}: 'context' must be an object")
    return context


def _shard_option(raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdecimal()):
        raise LayoutOptionError(
            f"--bucket-index-shards must be a whole number from 1 to {MAX_SHARD_COUNT}, got {raw!r}"
        )
    try:
        return check_shard_count("--bucket-index-shards", int(text))
    except LayoutError as error:
        raise LayoutOptionError(str(error)) from None


def _hot_users_option(raw: str) -> dict[str, int]:
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise LayoutOptionError(
            f'--hot-users must be a JSON object of user -> shard count, e.g. {{"ingest-bot": 8}}, got {raw!r}'
        ) from None
    try:
        return check_hot_users("--hot-users", parsed)
    except LayoutError as error:
        raise LayoutOptionError(str(error)) from None
