"""The `python -m file_search_admin` command line: backfill, reconcile, migrate, index-names, redrive,
status.

Every command takes `--json` (its summary as one JSON object on stdout, counts as numbers), the AWS SDK's
usual configuration (`--profile`, `--region`, `AWS_PROFILE`, `AWS_ENDPOINT_URL` for the local stack), and
exits 1 with one line on stderr naming the problem (a missing bucket, table or queue, a permission
denied); argument errors exit 2, as do a placement that is not valid and a migrate with the Z-order index
off. The commands that write entries (backfill, reconcile, migrate) place them and name their owners by
the deployment's settings (`file_search_admin.writer_settings`: cdk.json context, overridable), held
against the deployed configuration the table records (`file_index.store.deployment`; settings nothing names
are taken from it), and refuse with exit 2, before any write, settings that differ from it or a
multiAttributeIndex the table's indexes contradict (a dry-run reconcile, which writes nothing, only
warns). No command writes to a bucket.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from file_index.rules.objects import DEFAULT_TOMBSTONE_TTL_DAYS
from file_index.rules.schema import NAME_TABLE_NAME, TABLE_NAME
from file_index.store.deployment import DeployedConfigurationStore, mismatch_message
from file_index.store.state import IndexStateStore, State, effective_state
from file_index.store.unprocessed import UnprocessedError
from file_index.write.differences import Difference
from file_index.write.name_sync import sync_names
from file_index.write.names import NameIndex
from file_search_admin import __version__
from file_search_admin.aws import Aws, check_bucket, check_queue, check_table
from file_search_admin.backfill import run_backfill
from file_search_admin.deployed import (
    DEFAULT_STACK_NAME,
    deployed_settings,
    start_execution,
    state_machine_arn,
)
from file_search_admin.errors import AdminError, MigrateNotNeededError, PlacementMismatchError, one_line
from file_search_admin.migrate import DEFAULT_SEGMENTS, run_migrate
from file_search_admin.progress import BackfillProgress, MigrateProgress, NameSyncProgress
from file_search_admin.reconcile import DEFAULT_MAX_KEYS, run_reconcile
from file_search_admin.redrive import redrive
from file_search_admin.writer_settings import (
    WRITER_SETTINGS,
    WriterSettings,
    WriterSettingsError,
    add_writer_options,
    cdk_json_context_or_none,
    check_table_placement,
    resolve_writer_settings,
)

# `s3-file-search-admin` when installed as a package, `python -m file_search_admin` from a clone.
PROG = "s3-file-search-admin" if Path(sys.argv[0]).name == "s3-file-search-admin" else "file_search_admin"
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# The commands that write entries, and so need the shard placement.
WRITERS = ("backfill", "reconcile", "migrate")

EXAMPLES = """\
examples:
  # build the index from what the bucket holds (resumes an interrupted run)
  python -m file_search_admin backfill --bucket my-bucket --table FileMetaData
  # the same at scale, through the deployed stack's state machine
  python -m file_search_admin backfill --deployed --stack-name S3FileSearch
  # what is wrong with the index, without changing it; then repair it
  python -m file_search_admin reconcile --bucket my-bucket --table FileMetaData --dry-run
  python -m file_search_admin reconcile --bucket my-bucket --table FileMetaData --json
  # after switching multiAttributeIndex on and deploying: give existing entries their Z-order address
  python -m file_search_admin migrate --bucket my-bucket --table FileMetaData
  # after an upgrade from 0.3.0 (no name index): build the bucket's name index
  python -m file_search_admin index-names --bucket my-bucket --table FileMetaData
  # move dead-lettered events back to the queue
  python -m file_search_admin redrive --dlq-url "$DLQ_URL" --queue-url "$QUEUE_URL"
  # is the index complete?
  python -m file_search_admin status --bucket my-bucket --table FileMetaData
  # the local stack (make serve): point the SDK at it
  AWS_ENDPOINT_URL=http://127.0.0.1:5000 python -m file_search_admin backfill --bucket fileupload.a
"""
# Installed, the examples name the command that runs them.
if PROG != "file_search_admin":
    EXAMPLES = EXAMPLES.replace("python -m file_search_admin", PROG)


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{raw!r} must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--profile", help="AWS profile (default: the SDK's, e.g. AWS_PROFILE)")
    common.add_argument("--region", help="AWS region (default: the SDK's, e.g. AWS_DEFAULT_REGION)")
    common.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")

    index = argparse.ArgumentParser(add_help=False)
    index.add_argument("--bucket", help="the indexed bucket")
    index.add_argument("--table", default=TABLE_NAME, help=f"the index table (default {TABLE_NAME})")
    index.add_argument(
        "--name-table",
        help=f"the name index table (default: the deployed configuration's, else {NAME_TABLE_NAME}); "
        "backfill and reconcile bring it in step too when the deployment keeps one",
    )

    writes = argparse.ArgumentParser(add_help=False)
    writes.add_argument("--concurrency", type=_positive, default=16, help="requests in flight (default 16)")

    stack = argparse.ArgumentParser(add_help=False)
    stack.add_argument(
        "--stack-name",
        help=f"the deployed stack (default {DEFAULT_STACK_NAME}): where the table records no deployed "
        "configuration, its indexer's settings must be the ones the command writes with; with --deployed, "
        "its output names the state machine",
    )

    deployed = argparse.ArgumentParser(add_help=False, parents=[stack])
    deployed.add_argument("--deployed", action="store_true", help="start the stack's state machine instead")
    deployed.add_argument("--state-machine-arn", help="with --deployed: the state machine itself")

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Build, verify, repair and redrive the S3 File Search index.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    backfill = commands.add_parser(
        "backfill",
        parents=[common, index, writes, deployed],
        help="index every object the bucket holds (resumable)",
        description="List the bucket's current objects and index each one the index has no item for.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    backfill.add_argument("--restart", action="store_true", help="start afresh instead of resuming")
    backfill.add_argument(
        "--page-size",
        type=_positive,
        default=1000,
        help="objects per listing page and checkpoint (default 1000)",
    )

    reconcile = commands.add_parser(
        "reconcile",
        parents=[common, index, writes, deployed],
        help="compare the bucket with the index and repair the differences",
        description="Find objects missing from the index, entries of another version and entries of "
        "objects that no longer exist; confirm each with a HEAD and repair it with one conditional write.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reconcile.add_argument("--dry-run", action="store_true", help="report the differences, write nothing")
    reconcile.add_argument(
        "--tombstone-ttl-days",
        type=_positive,
        default=DEFAULT_TOMBSTONE_TTL_DAYS,
        help="expiry of the tombstones it writes, as the stack's tombstoneTtlDays "
        f"(default {DEFAULT_TOMBSTONE_TTL_DAYS})",
    )
    reconcile.add_argument(
        "--max-keys", type=_positive, default=DEFAULT_MAX_KEYS, help="keys shown per kind of difference"
    )

    migrate = commands.add_parser(
        "migrate",
        parents=[common, index, stack],
        help="give existing entries their Z-order address (after multiAttributeIndex was switched on)",
        description="Scan the table in parallel and set zAddress on every live entry of the bucket that "
        "lacks it, each with one update that a concurrent event wins; then let searches use the Z-order "
        "index. Run it after the deployment that switched the index on; running it again changes nothing.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    migrate.add_argument(
        "--segments",
        type=_positive,
        default=DEFAULT_SEGMENTS,
        help=f"parallel Scan segments, one thread each (default {DEFAULT_SEGMENTS})",
    )
    for writer in (backfill, reconcile, migrate):
        add_writer_options(writer)

    index_names = commands.add_parser(
        "index-names",
        parents=[common, index],
        help="build the bucket's name index: each entry's items, the bucket marked complete, strays removed",
        description="Scan the entries of the bucket and put the name items each live entry lacks (its key "
        "item and its term items, ordered by upload time); mark the bucket's name index complete, so that "
        "searches by name, folder and extension answer; then remove the items no live entry has. Builds "
        "the name index of a table that has none (a table of 0.3.0). Safe while events flow; an interrupted "
        "run is finished by running it again, and a second run changes nothing.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    index_names.add_argument(
        "--segments",
        type=_positive,
        default=DEFAULT_SEGMENTS,
        help=f"parallel Scan segments, one thread each (default {DEFAULT_SEGMENTS})",
    )

    redrive_parser = commands.add_parser(
        "redrive",
        parents=[common],
        help="move dead-lettered messages back to the queue",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    redrive_parser.add_argument("--dlq-url", required=True, help="the dead-letter queue's URL")
    redrive_parser.add_argument("--queue-url", required=True, help="the indexer's queue URL")

    commands.add_parser(
        "status",
        parents=[common, index],
        help="the index state of a bucket (BUILDING or READY, with progress)",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, then check what argparse cannot: which options go together."""
    args = parser.parse_args(argv)
    if args.command in ("backfill", "reconcile") and args.deployed:
        if bool(args.stack_name) == bool(args.state_machine_arn):
            parser.error(f"{args.command} --deployed needs exactly one of --stack-name, --state-machine-arn")
        if args.bucket:
            parser.error(f"{args.command} --deployed runs on the stack's bucket: leave out --bucket")
    elif args.command in (*WRITERS, "status", "index-names"):
        if not args.bucket:
            parser.error(f"{args.command} needs --bucket")
        if getattr(args, "state_machine_arn", None):
            parser.error("--state-machine-arn goes with --deployed")
    return args


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    args = parse_args(parser, argv)
    args.shard_placement = None
    args.writer_settings = None
    if args.command in WRITERS and not getattr(args, "deployed", False):
        try:
            args.writer_settings = resolve_writer_settings(args)
        except WriterSettingsError as error:
            print(f"{PROG}: error: {error}", file=err)
            return EXIT_USAGE
        args.shard_placement = args.writer_settings.placement
        if args.command == "migrate" and "multiAttributeIndex" in args.writer_settings.given:
            try:
                _check_migrate_needed(args)  # before any request: cdk.json or an option says it is off
            except MigrateNotNeededError as error:
                print(f"{PROG}: error: {error}", file=err)
                return EXIT_USAGE
    try:
        summary = _run(args, err)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted (a backfill resumes from its last checkpoint when run again)", file=err)
        return EXIT_INTERRUPTED
    except (PlacementMismatchError, MigrateNotNeededError) as error:
        print(f"{PROG}: error: {one_line(error)}", file=err)
        return EXIT_USAGE
    except (AdminError, ClientError, BotoCoreError, UnprocessedError) as error:
        print(f"{PROG}: error: {one_line(error)}", file=err)
        return EXIT_FAILED
    if args.json:
        out.write(json.dumps(summary, ensure_ascii=False) + "\n")
    else:
        out.write(_human(summary) + "\n")
    out.flush()
    return EXIT_OK


def _run(args: argparse.Namespace, err: TextIO) -> dict[str, Any]:
    aws = Aws.from_options(
        profile=args.profile,
        region=args.region,
        max_connections=max(getattr(args, "concurrency", 10), getattr(args, "segments", 0)) + 4,
    )
    if args.command in ("backfill", "reconcile") and args.deployed:
        arn = args.state_machine_arn or state_machine_arn(aws.client("cloudformation"), args.stack_name)
        execution = start_execution(aws.client("stepfunctions"), arn, args.command)
        return {"command": args.command, "deployed": True, "stateMachineArn": arn, "executionArn": execution}
    if args.command == "redrive":
        sqs = aws.client("sqs")
        check_queue(sqs, args.dlq_url)
        check_queue(sqs, args.queue_url)
        return redrive(sqs, dlq_url=args.dlq_url, queue_url=args.queue_url).to_json()

    dynamodb = aws.client("dynamodb")
    table = check_table(dynamodb, args.table)
    recorded = DeployedConfigurationStore(dynamodb, args.table).read(args.bucket) if args.bucket else None
    if args.name_table is None:
        # The deployment's name index; a deployment that keeps none has its table absent, as checked below.
        args.name_table = (recorded.name_table if recorded is not None else None) or NAME_TABLE_NAME
    if getattr(args, "writer_settings", None) is not None:
        if recorded is not None:
            _check_recorded_configuration(args, recorded, err)
        else:
            if args.writer_settings.note:
                print(f"{PROG}: note: {args.writer_settings.note}", file=err)
            _check_deployed_placement(args, aws, err)
        if args.command == "migrate":
            _check_migrate_needed(args)
        _check_table_placement(args, table, args.writer_settings, err)
    if args.command == "index-names":
        check_table(dynamodb, args.name_table)
        check_bucket(aws.client("s3"), args.bucket)
        synced = _sync_names(dynamodb, args, err, complete=True)
        return {"command": "index-names", "bucket": args.bucket, **synced, "totalSeconds": synced["seconds"]}
    s3 = aws.client("s3")
    check_bucket(s3, args.bucket)  # also for status: a typo in the name must not read as "never built"
    if args.command == "status":
        # The same answer as GET /status: the record, or the state of a bucket that has none.
        initial = initial_state(args.bucket)
        state = effective_state(IndexStateStore(dynamodb, args.table).read(args.bucket), args.bucket, initial)
        return {"command": "status", **state.to_json()}

    # A dry run writes nothing: it has no name index to keep in step; nor does a deployment without one.
    keeps_names = recorded is None or recorded.name_table is not None
    names = (
        None if getattr(args, "dry_run", False) or not keeps_names else _name_index_if_kept(dynamodb, args)
    )
    if args.command == "backfill":
        with BackfillProgress(enabled=err.isatty() and not args.json) as progress:
            summary = run_backfill(
                s3=s3,
                dynamodb=dynamodb,
                bucket=args.bucket,
                table=args.table,
                key_pattern=args.writer_settings.key_pattern,
                concurrency=args.concurrency,
                restart=args.restart,
                page_size=args.page_size,
                on_progress=progress.update,
                shard_placement=args.shard_placement,
                names=names,
            )
        return _with_names(summary.to_json(), dynamodb, args, names, err)
    if args.command == "migrate":
        with MigrateProgress(enabled=err.isatty() and not args.json) as migrate_progress:
            migrated = run_migrate(
                dynamodb=dynamodb,
                bucket=args.bucket,
                table=args.table,
                placement=args.shard_placement,
                segments=args.segments,
                on_progress=migrate_progress.update,
            )
        return migrated.to_json()
    result = run_reconcile(
        s3=s3,
        dynamodb=dynamodb,
        bucket=args.bucket,
        table=args.table,
        key_pattern=args.writer_settings.key_pattern,
        dry_run=args.dry_run,
        concurrency=args.concurrency,
        tombstone_ttl_days=args.tombstone_ttl_days,
        max_keys=args.max_keys,
        shard_placement=args.shard_placement,
        names=names,
        # A guessed placement (no cdk.json, no option, no deployed stack) never moves entries between shards.
        judge_shards=not args.writer_settings.defaulted,
    )
    return _with_names(result.to_json(), dynamodb, args, None if args.dry_run else names, err)


def _name_index_if_kept(dynamodb: Any, args: argparse.Namespace) -> NameIndex | None:
    """The name index a backfill or reconcile keeps in step, when the deployment has one."""
    try:
        dynamodb.describe_table(TableName=args.name_table)
    except dynamodb.exceptions.ResourceNotFoundException:
        return None
    return NameIndex(dynamodb, args.name_table, entry_table=args.table)


def initial_state(bucket: str) -> State:
    """The state of a bucket without a state record, as the stack sets it from cdk.json: BUILDING for the
    existing bucket it was deployed on (`existingBucketName`), READY for one it created."""
    context = cdk_json_context_or_none()
    existing = (context or {}).get("existingBucketName") or None
    return State.BUILDING if existing == bucket else State.READY


def _sync_names(
    dynamodb: Any, args: argparse.Namespace, err: TextIO, *, complete: bool = False
) -> dict[str, Any]:
    """Bring the bucket's name items in step with its entries (`complete`: and mark its name index
    complete), with a live line on a terminal."""
    started = time.monotonic()
    with NameSyncProgress(enabled=err.isatty() and not args.json) as progress:
        synced = sync_names(
            dynamodb,
            args.table,
            args.name_table,
            args.bucket,
            on_progress=progress.update,
            complete=complete,
            segments=getattr(args, "segments", DEFAULT_SEGMENTS),
        )
    return {**synced.to_json(), "seconds": round(time.monotonic() - started, 3)}


def _with_names(
    summary: dict[str, Any], dynamodb: Any, args: argparse.Namespace, names: NameIndex | None, err: TextIO
) -> dict[str, Any]:
    """After a backfill or a reconcile: what no single write could see (items of no entry) set right, and
    the whole command's time (`totalSeconds`), the name index's step included."""
    if names is None:
        return {**summary, "totalSeconds": summary["seconds"]}
    synced = _sync_names(dynamodb, args, err)
    return {**summary, "names": synced, "totalSeconds": round(summary["seconds"] + synced["seconds"], 3)}


def _check_migrate_needed(args: argparse.Namespace) -> None:
    if not args.shard_placement.multi_attribute_index:
        raise MigrateNotNeededError(
            f"migrate: the Z-order index is off (multiAttributeIndex is false in "
            f"{args.writer_settings.multi_attribute_source}): nothing to migrate; switch it on and "
            "deploy first, or pass --multi-attribute-index"
        )


def _check_recorded_configuration(args: argparse.Namespace, recorded: Any, err: TextIO) -> None:
    """Write with the deployed configuration the table records: refuse a different one (exit 2), and take
    every setting nothing named (no cdk.json, no option) from it."""
    resolved: WriterSettings = args.writer_settings
    source = f"the deployed configuration recorded in table {args.table}"
    message = mismatch_message(
        recorded,
        resolved.own_configuration(),
        table=args.table,
        bucket=args.bucket,
        writer=f"this command ({resolved.sources()})",
    )
    if message is not None:
        message += (
            "; run with the deployment's settings (its cdk.json, or the options), or deploy these first"
        )
        if not getattr(args, "dry_run", False):
            raise PlacementMismatchError(message)
        print(f"{PROG}: warning: {message}", file=err)
        return
    adopted = resolved.adopt(recorded, source)
    # Only what the command writes with: the shard placement and the key pattern.
    taken = [key for key in WRITER_SETTINGS if key not in resolved.given]
    if taken:
        print(f"{PROG}: note: writing with {recorded.describe(taken)} ({source})", file=err)
    args.writer_settings = adopted
    args.shard_placement = adopted.placement


def _check_deployed_placement(args: argparse.Namespace, aws: Aws, err: TextIO) -> None:
    """Without a recorded configuration: write with the deployed stack's settings, never others (exit 2).

    The settings given (cdk.json, options) may be ahead of the deployment (cdk.json edited, not deployed
    yet): its entries would land in shards the deployed search never queries, or name other owners.
    Without a cdk.json or options, the deployed settings are the ones written with. A stack named by
    --stack-name must be readable; without it, a missing default stack (or a stack of another name)
    leaves the given settings unchecked.
    """
    resolved: WriterSettings = args.writer_settings
    name = args.stack_name or DEFAULT_STACK_NAME
    deployed, source = deployed_settings(aws.client("cloudformation"), aws.client("lambda"), name)
    if deployed is None:
        if args.stack_name:  # named on purpose: it must be there
            raise PlacementMismatchError(f"cannot check the deployed shard placement: {source}")
        return
    if resolved.defaulted:
        adopted = resolved.adopt(deployed, source)
        if adopted.placement != resolved.placement or adopted.key_pattern != resolved.key_pattern:
            print(f"{PROG}: note: writing with the deployed shard placement of {source}", file=err)
        args.writer_settings = adopted
        args.shard_placement = adopted.placement
        return
    given = resolved.own_configuration()
    differences = deployed.differences(given)
    if not differences:
        return
    message = (
        f"the deployment writes and reads with {deployed.describe(given.settings)} ({source}), but this "
        f"command was given {given.describe(deployed.settings)} ({resolved.sources()}): its entries "
        "would land where the deployed search does not look, or name other owners; deploy those settings "
        "first, or run with the deployment's (its cdk.json, or the options)"
    )
    if getattr(args, "dry_run", False):
        print(f"{PROG}: warning: {message}", file=err)
        return
    raise PlacementMismatchError(message)


def _check_table_placement(
    args: argparse.Namespace, table: dict[str, Any], resolved: WriterSettings, err: TextIO
) -> None:
    """Refuse a placement the table contradicts; a dry run writes nothing, so it only warns."""
    try:
        check_table_placement(args.table, table, resolved)
    except PlacementMismatchError as error:
        if not getattr(args, "dry_run", False):
            raise
        print(f"{PROG}: warning: {one_line(error)}", file=err)


def _human(summary: dict[str, Any]) -> str:
    command = summary["command"]
    if summary.get("deployed"):
        return f"started {command} on {summary['stateMachineArn']}\nexecution {summary['executionArn']}"
    if command == "backfill":
        resumed = f" (resumed after {summary['resumedAfter']!r})" if summary["resumed"] else ""
        lines = [
            f"backfill of s3://{summary['bucket']} into {summary['table']}{resumed}: "
            f"listed {summary['listed']:,}, written {summary['written']:,}, skipped {summary['skipped']:,} "
            f"in {summary['seconds']:.1f} s ({summary['objectsPerSecond']:,.0f} objects/s)"
        ]
        if "names" in summary:
            lines.append(_human_names("  name index", summary["names"]))
        lines.append(f"{summary['totalSeconds']:.1f} s in all; index {summary['state']}")
        return "\n".join(lines)
    if command == "reconcile":
        return _human_reconcile(summary)
    if command == "index-names":
        return _human_names(f"index-names of s3://{summary['bucket']}", summary)
    if command == "migrate":
        pending = (
            "still pending (run it again)" if summary["zOrderPending"] else "complete: searches may use it"
        )
        return (
            f"migrate of {summary['table']} for s3://{summary['bucket']}: "
            f"scanned {summary['scanned']:,} items, "
            f"updated {summary['updated']:,}, already placed {summary['already']:,}, "
            f"skipped {summary['skipped']:,} (changed by a live event) in {summary['seconds']:.1f} s; "
            f"Z-order index {pending}"
        )
    if command == "redrive":
        failed = f", {summary['failed']} failed (left in the dead-letter queue)" if summary["failed"] else ""
        return f"moved {summary['moved']} message(s) back to {summary['queueUrl']}{failed}"
    if summary.get("runId") is None:
        why = (
            "a bucket the stack created: indexed from its first object"
            if summary["state"] == "READY"
            else "an existing bucket (existingBucketName) not backfilled yet"
        )
        return f"bucket {summary['bucket']}: {summary['state']} (no backfill or reconcile has run; {why})"
    lines = [
        f"bucket {summary['bucket']}: {summary['state']} ({summary['operation']}, run {summary['runId']})"
    ]
    for name in ("startedAt", "updatedAt", "finishedAt", "lastError"):
        if summary.get(name):
            lines.append(f"  {name}: {summary[name]}")
    if summary["progress"]:
        lines.append("  " + ", ".join(f"{name} {value:,}" for name, value in summary["progress"].items()))
    return "\n".join(lines)


def _human_reconcile(summary: dict[str, Any]) -> str:
    mode = " (dry run: nothing written)" if summary["dryRun"] else ""
    lines = [
        f"reconcile of s3://{summary['bucket']} against {summary['table']}{mode}: "
        f"listed {summary['listed']:,} objects, scanned {summary['scanned']:,} items "
        f"in {summary['seconds']:.1f} s"
    ]
    labels = {
        Difference.MISSING.value: "missing from the index",
        Difference.STALE.value: "entry of another version",
        Difference.ORPHANED.value: "entry of a deleted object",
    }
    for kind, label in labels.items():
        found, fixed = summary["found"][kind], summary["fixed"][kind]
        keys = summary["keys"][kind]
        shown = f": {', '.join(keys)}{', ...' if found > len(keys) else ''}" if keys else ""
        lines.append(f"  {label:<26} found {found:>6,}, fixed {fixed:>6,}{shown}")
    if summary["unplaced"]["found"]:
        unplaced = summary["unplaced"]
        lines.append(
            f"  {'entry out of place':<26} found {unplaced['found']:>6,}, fixed {unplaced['fixed']:>6,} "
            "(in a shard the placement's readers never query, or without its zAddress)"
        )
    if summary["conflicts"]:
        lines.append(f"  changed by a live event meanwhile (left to it): {summary['conflicts']:,}")
    if not any(summary["found"].values()) and not summary["unplaced"]["found"]:
        lines.append("  the index matches the bucket")
    if "names" in summary:
        lines.append(_human_names("  name index", summary["names"]))
    if summary["state"]:
        lines.append(f"{summary['totalSeconds']:.1f} s in all; index {summary['state']}")
    return "\n".join(lines)


def _human_names(label: str, names: dict[str, Any]) -> str:
    return (
        f"{label}: {names['entries']:,} entries, {names['nameItems']:,} name items; put {names['put']:,}, "
        f"removed {names['removed']:,} in {names['seconds']:.1f} s; name index "
        + ("complete" if names["termItemsComplete"] else "not complete yet (run index-names)")
    )
