"""The settings the commands write with: the deployment's `cdk.json` context, with overrides.

The stack gives its functions the shard placement (`bucketIndexShards`, `hotUsers`, `multiAttributeIndex`)
and the key pattern that names a key's user (`keyLayout`) from `cdk.json`; a command that writes entries
from this machine (backfill, reconcile, migrate) reads the same file, so it places entries and names
owners as the deployed indexer does. `--cdk-json PATH` names another file; without it, `./cdk.json` is
read. `--bucket-index-shards`, `--hot-users`, `--(no-)multi-attribute-index` and `--key-layout` override
single keys, e.g. to match a deployment made with `cdk -c`.

What the command was given is then held against the deployed configuration the table records
(`file_index.store.deployment`, checked in `cli`): a difference is refused before any write, and a setting
nothing here names is taken from the record. A table without a record (a deployment older than it) is
checked against the deployed stack's indexer instead, and settings nothing names fall back to the 0.2.0
placement (one shard, no hot users, no Z-order index, the default key pattern) with a note on stderr.

The table itself tells one key apart: it has the Z-order index exactly when the deployment switched
`multiAttributeIndex` on. `check_table_placement` compares the two before a command writes, so a placement
that does not match the deployment is refused rather than writing entries that a box search cannot see.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from file_index.rules.key_pattern import InvalidKeyPatternError, KeyPattern
from file_index.rules.placement import PlacementError, ShardPlacement, check_hot_users, check_shard_count
from file_index.rules.schema import Z_ORDER_INDEX
from file_index.rules.shards import MAX_SHARD_COUNT
from file_index.store import deployment
from file_index.store.deployment import DeployedConfiguration
from file_search_admin.errors import PlacementMismatchError

DEFAULT_CDK_JSON = Path("cdk.json")


class WriterSettingsError(ValueError):
    """An option or the cdk.json file gives no usable placement; the message names the option or the key."""


@dataclass(frozen=True)
class WriterSettings:
    """The shard placement and key pattern a command writes with, and which settings were named."""

    placement: ShardPlacement
    note: str | None = None  # what the user should know about where the settings came from
    # Where multiAttributeIndex came from, for a message about it: an option, a cdk.json, or the default.
    multi_attribute_source: str = "the built-in default"
    key_pattern: KeyPattern = field(default_factory=lambda: KeyPattern.parse(None))
    # The settings (cdk.json keys) a cdk.json or an option named, each with where it came from; the others
    # are the built-in defaults, to be taken from the deployed configuration where the table records one.
    given: Mapping[str, str] = field(default_factory=dict)

    @property
    def defaulted(self) -> bool:
        """Nothing named any setting (no cdk.json, no option)."""
        return not self.given

    def own_configuration(self) -> DeployedConfiguration:
        """The named settings, to hold against the deployed configuration."""
        every = DeployedConfiguration.of(placement=self.placement, key_pattern=self.key_pattern.source)
        return DeployedConfiguration({key: every.settings[key] for key in self.given})

    def sources(self) -> str:
        """Where the named settings came from, for a message: `cdk.json`, `--hot-users`, ..."""
        return ", ".join(dict.fromkeys(self.given.values()))

    def adopt(self, recorded: DeployedConfiguration, source: str) -> WriterSettings:
        """These settings with each one nothing named taken from `recorded` (the deployed configuration)."""
        settings = {**recorded.settings, **self.own_configuration().settings}
        merged = DeployedConfiguration(settings)
        placement = merged.placement or self.placement
        return WriterSettings(
            placement,
            None,
            self.given.get(deployment.MULTI_ATTRIBUTE_INDEX, source),
            KeyPattern.parse(merged.key_pattern) if merged.key_pattern is not None else self.key_pattern,
            # Only the settings a writer uses are "given": own_configuration() names no other.
            {
                **dict.fromkeys((key for key in WRITER_SETTINGS if key in recorded.settings), source),
                **self.given,
            },
        )


_PLACEMENT_KEYS = (deployment.BUCKET_INDEX_SHARDS, deployment.HOT_USERS, deployment.MULTI_ATTRIBUTE_INDEX)
# The settings a command that writes entries places them and names their owners by.
WRITER_SETTINGS = (*_PLACEMENT_KEYS, deployment.KEY_LAYOUT)


def add_writer_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "writer settings: shard placement and key pattern (default: the cdk.json context of the deployment)"
    )
    group.add_argument(
        "--cdk-json",
        type=Path,
        metavar="PATH",
        help="the CDK app's cdk.json whose context names the shard placement and key pattern "
        "(default ./cdk.json)",
    )
    group.add_argument("--bucket-index-shards", metavar="N", help="override bucketIndexShards (1-256)")
    group.add_argument("--hot-users", metavar="JSON", help="override hotUsers, e.g. '{\"ingest-bot\": 8}'")
    group.add_argument(
        "--multi-attribute-index",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="override multiAttributeIndex (the Z-order index)",
    )
    group.add_argument(
        "--key-layout",
        dest="key_pattern",
        type=_pattern_option,
        metavar="PATTERN",
        help="override keyLayout, the key pattern that names a key's uploader: 'default' or a regular "
        "expression with the groups (?P<user>...) and (?P<file>...)",
    )


def resolve_writer_settings(args: argparse.Namespace) -> WriterSettings:
    """The settings `args` name; WriterSettingsError naming the option, file or key that is wrong."""
    source = args.cdk_json or DEFAULT_CDK_JSON
    context = _context(args.cdk_json)
    try:
        # Without a cdk.json, one shard: its entries are found by a reader of any shard count.
        base = ShardPlacement() if context is None else ShardPlacement.from_context(context)
    except PlacementError as error:
        raise WriterSettingsError(f"{source}: context {error}") from None
    given: dict[str, str] = {}
    if context is not None:
        given = dict.fromkeys(WRITER_SETTINGS, str(source))
    shards = base.bucket_shards
    if args.bucket_index_shards is not None:
        shards = _shard_option(args.bucket_index_shards)
        given[deployment.BUCKET_INDEX_SHARDS] = "--bucket-index-shards"
    hot_users = dict(base.hot_users)
    if args.hot_users is not None:
        hot_users = _hot_users_option(args.hot_users)
        given[deployment.HOT_USERS] = "--hot-users"
    multi = base.multi_attribute_index if args.multi_attribute_index is None else args.multi_attribute_index
    if args.multi_attribute_index is not None:
        multi_source = "--multi-attribute-index" if multi else "--no-multi-attribute-index"
        given[deployment.MULTI_ATTRIBUTE_INDEX] = multi_source
    elif context is not None:
        multi_source = str(source)
    else:
        multi_source = f"the built-in default: no {DEFAULT_CDK_JSON} here"
    key_pattern = _key_pattern((context or {}).get("keyLayout"), f"{source}: context keyLayout")
    if getattr(args, "key_pattern", None) is not None:
        key_pattern = _key_pattern(args.key_pattern, "--key-layout")
        given[deployment.KEY_LAYOUT] = "--key-layout"
    return WriterSettings(
        ShardPlacement(bucket_shards=shards, hot_users=hot_users, multi_attribute_index=multi),
        None if context is not None else _defaults_note(args),
        multi_source,
        key_pattern,
        given,
    )


def _pattern_option(raw: str) -> str:
    """--key-layout as given, once it compiles with the groups it needs (argparse names the problem)."""
    try:
        KeyPattern.parse(raw)
    except InvalidKeyPatternError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return raw


def _key_pattern(raw: object, name: str) -> KeyPattern:
    if raw is not None and not isinstance(raw, str):
        raise WriterSettingsError(f"{name} must be 'default' or a regular expression, got {raw!r}")
    try:
        return KeyPattern.parse(raw)
    except InvalidKeyPatternError as error:
        raise WriterSettingsError(f"{name} is invalid: {error}") from None


def _defaults_note(args: argparse.Namespace) -> str | None:
    """Without a cdk.json: the keys that fall back to the unsharded placement and no option sets; or None."""
    defaults = [
        default
        for option, default in (
            (args.bucket_index_shards, "1 bucket shard"),
            (args.hot_users, "no hot users"),
            (args.multi_attribute_index, "no Z-order index"),
            (getattr(args, "key_pattern", None), "the default key pattern"),
        )
        if option is None
    ]
    if not defaults:
        return None
    hint = "pass --cdk-json or the placement options to match the deployment"
    if len(defaults) == 4:
        placement = ", ".join(defaults)
        return f"no {DEFAULT_CDK_JSON} here: writing with the unsharded placement ({placement}); {hint}"
    listed = " and ".join(defaults) if len(defaults) < 3 else f"{', '.join(defaults[:-1])} and {defaults[-1]}"
    unset = "it" if len(defaults) == 1 else "them"
    return (
        f"no {DEFAULT_CDK_JSON} here: writing with {listed} (the built-in defaults; no option sets {unset}); "
        f"{hint}"
    )


def check_table_placement(table: str, description: Mapping[str, Any], resolved: WriterSettings) -> None:
    """PlacementMismatchError when the table's Z-order index and the placement's multiAttributeIndex differ.

    `description` is DescribeTable's `Table`. An index being deleted counts as absent: the deployment
    switched it off, and no search reads it any more.
    """
    has_index = any(
        index.get("IndexName") == Z_ORDER_INDEX.name and index.get("IndexStatus") != "DELETING"
        for index in description.get("GlobalSecondaryIndexes", [])
    )
    if has_index == resolved.placement.multi_attribute_index:
        return
    if has_index:
        raise PlacementMismatchError(
            f"table {table!r} has the Z-order index {Z_ORDER_INDEX.name}, but the shard placement has "
            f"multiAttributeIndex off ({resolved.multi_attribute_source}): the entries it wrote would be "
            "missing from box searches; run from the CDK app's folder, pass --cdk-json PATH, "
            "or --multi-attribute-index"
        )
    raise PlacementMismatchError(
        f"table {table!r} has no Z-order index {Z_ORDER_INDEX.name}, but the shard placement has "
        f"multiAttributeIndex on ({resolved.multi_attribute_source}): the placement is not the deployed one; "
        "deploy it first, pass the deployment's --cdk-json PATH, or --no-multi-attribute-index"
    )


def cdk_json_context_or_none() -> dict[str, Any] | None:
    """The context of ./cdk.json, or None without one (or one that is no usable JSON)."""
    try:
        return _context(None)
    except WriterSettingsError:
        return None


def _context(path: Path | None) -> dict[str, Any] | None:
    """The context of `path` (default ./cdk.json); None when the default file does not exist."""
    source = path or DEFAULT_CDK_JSON
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        if path is not None:
            raise WriterSettingsError(f"--cdk-json {str(path)!r}: no such file") from None
        return None
    except OSError as error:
        raise WriterSettingsError(f"--cdk-json {str(source)!r}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise WriterSettingsError(f"--cdk-json {str(source)!r} is not JSON: {error}") from None
    context = document.get("context", {}) if isinstance(document, dict) else None
    if not isinstance(context, dict):
        raise WriterSettingsError(f"--cdk-json {str(source)!r}: 'context' must be an object")
    return context


def _shard_option(raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdecimal()):
        raise WriterSettingsError(
            f"--bucket-index-shards must be a whole number from 1 to {MAX_SHARD_COUNT}, got {raw!r}"
        )
    try:
        return check_shard_count("--bucket-index-shards", int(text))
    except PlacementError as error:
        raise WriterSettingsError(str(error)) from None


def _hot_users_option(raw: str) -> dict[str, int]:
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise WriterSettingsError(
            f'--hot-users must be a JSON object of user -> shard count, e.g. {{"ingest-bot": 8}}, got {raw!r}'
        ) from None
    try:
        return check_hot_users("--hot-users", parsed)
    except PlacementError as error:
        raise WriterSettingsError(str(error)) from None
