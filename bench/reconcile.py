"""Measure 8: what a reconcile costs in requests, per object when nothing is wrong and per difference.

On the local stack (notifications off), a bucket of `objects` objects (`bench.seeding`) is backfilled,
then reconciled by `file_search_admin.reconcile.run_reconcile`, the code behind `python -m
file_search_admin reconcile`. Every S3 and DynamoDB request of the run is counted by a botocore
`before-call` hook (`bench.instrument`); the local stack's own SQS polling is not counted.

- Nothing wrong: the aim is the listing and the table's Scan and nothing per object; the comparison is
  those two alone (ListObjectsV2 and Scan pages of this very run), so the ratio is the share of the
  requests that were the unavoidable reads (1× = no request of its own for any object).
- Then `differences` entries of each kind are broken in the table (entries deleted: missing; sizes
  changed: stale; entries for keys the bucket never held: orphaned) and the reconcile runs again; the
  requests beyond the clean run's, divided by the differences it found, are the cost of one difference
  (the aim: a HEAD to confirm it and one conditional write). A third run must find nothing.
"""

from __future__ import annotations

from typing import Any

from bench import instrument, seeding
from bench.report import Row, progress
from file_index.rules import schema

SERVICES = ("s3", "dynamodb")


def _requests(log: instrument.CallLog) -> int:
    return sum(log.count(service) for service in SERVICES)


def _breakdown(log: instrument.CallLog) -> str:
    return ", ".join(
        f"{operation} {count}"
        for service in SERVICES
        for operation, count in log.by_operation(service).items()
    )


def _break_index(dynamodb: Any, table: str, differences: int) -> None:
    """`differences` missing, stale and orphaned entries each, in disjoint parts of the seeded bucket."""
    key = schema.OBJECT_KEY
    for index in range(differences):
        dynamodb.delete_item(TableName=table, Key={key: {"S": seeding.object_key(index)}})
    for index in range(differences, 2 * differences):
        dynamodb.update_item(
            TableName=table,
            Key={key: {"S": seeding.object_key(index)}},
            UpdateExpression="SET #size = :size",
            ExpressionAttributeNames={"#size": schema.SIZE},
            ExpressionAttributeValues={":size": {"N": "999999999"}},
        )
    for index in range(2 * differences, 3 * differences):
        item = dynamodb.get_item(TableName=table, Key={key: {"S": seeding.object_key(index)}})["Item"]
        dynamodb.put_item(TableName=table, Item={**item, key: {"S": f"USER000_gone {index:06d}.txt"}})


def run(*, objects: int, differences: int, concurrency: int) -> list[Row]:
    from file_index.rules.key_pattern import KeyPattern
    from file_search_admin.aws import Aws
    from file_search_admin.backfill import run_backfill
    from file_search_admin.reconcile import run_reconcile
    from local_stack.stack import LocalFileSearch

    if 3 * differences > objects:
        raise ValueError(f"{differences} differences of each kind need at least {3 * differences} objects")
    key_pattern = KeyPattern.parse(None)
    with (
        LocalFileSearch(aws_port=0, api_port=0, log_level="WARNING") as stack,
        stack.notifications_disabled(),
    ):
        clients = Aws.from_options(profile=None, region=stack.region, max_connections=concurrency + 4)
        s3, dynamodb = clients.client("s3"), clients.client("dynamodb")
        table = stack.table_name
        progress(f"reconcile: seeding and backfilling {objects:,} objects")
        seeding.seed_bucket(stack.bucket, 0, objects)
        run_backfill(s3=s3, dynamodb=dynamodb, bucket=stack.bucket, table=table, key_pattern=key_pattern)

        def reconcile() -> tuple[instrument.CallLog, dict[str, int]]:
            with instrument.recording() as log:
                summary = run_reconcile(
                    s3=s3, dynamodb=dynamodb, bucket=stack.bucket, table=table, key_pattern=key_pattern,
                    concurrency=concurrency,
                )  # fmt: skip
            return log, dict(summary.to_json()["found"])

        progress("reconcile: nothing wrong")
        clean, found = reconcile()
        if any(found.values()):
            raise RuntimeError(f"a reconcile right after the backfill found differences: {found}")
        progress(f"reconcile: {differences} missing, {differences} stale, {differences} orphaned entries")
        _break_index(dynamodb, table, differences)
        broken, found = reconcile()
        expected = {"missing": differences, "stale": differences, "orphaned": differences}
        if found != expected:
            raise RuntimeError(f"the reconcile found {found}, not {expected}")
        again, found = reconcile()
        if any(found.values()):
            raise RuntimeError(f"a second reconcile still found differences: {found}")

    reads = clean.count("s3", "ListObjectsV2") + clean.count("dynamodb", "Scan")
    found_total = sum(expected.values())
    extra = _requests(broken) - _requests(clean)
    extra_ops = {
        f"{service}:{op}": n - clean.calls[service, op]
        for service in SERVICES
        for op, n in broken.by_operation(service).items()
        if n != clean.calls[service, op]
    }
    return [
        Row(
            f"8. reconcile requests per object, nothing wrong, {objects:,} objects",
            "requests/object",
            _requests(clean) / objects,
            reads / objects,
            "listing + table Scan alone",
            reads / _requests(clean),
            f"listing+Scan ÷ ours; {reads} listing and Scan pages and {_requests(clean) - reads} other "
            f"requests (state record, versioning check), none per object; {_breakdown(clean)}",
        ),
        Row(
            f"8. reconcile requests per difference found, {objects:,} objects",
            "requests/difference",
            extra / found_total,
            2.0,
            "one HEAD + one conditional write",
            2.0 / (extra / found_total) if extra else None,
            f"{found_total} differences ({differences} each missing/stale/orphaned), all fixed; requests "
            f"beyond the clean run: {', '.join(f'{k} {v:+d}' for k, v in extra_ops.items())}; "
            f"a third run found nothing ({_requests(again)} requests)",
        ),
    ]
