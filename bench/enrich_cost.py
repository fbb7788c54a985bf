"""Measure 17: what `enrich` costs: S3 requests per upload event, counted, and priced per million uploads.

The real indexer handler (`indexer.handler.lambda_handler`) on moto in-process indexes `uploads` creates
(each object uploaded with a content type, user metadata and tags) under each `enrich` setting; every
request its S3 client makes is counted by a botocore `before-call` hook. Dollars: S3 GET-class requests
(HeadObject and GetObjectTagging are both billed as GET) at the us-east-1 list price of $0.0004 per 1,000
requests (S3 Standard, as listed on 2026-11-01), Lambda time and DynamoDB's larger items left out.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from bench.report import Row, progress

SETTINGS = ("", "contentType", "contentType,metadata", "tags", "contentType,metadata,tags")
S3_GET_PER_THOUSAND_USD = 0.0004
PER_MILLION = 1_000_000
BUCKET = "fileupload.bench"
TABLE = "FileMetaData"


def requests_per_upload(setting: str, uploads: int) -> dict[str, float]:
    """S3 requests per create event, by operation, for one `enrich` setting."""
    import boto3
    from moto import mock_aws

    from bench import aws, events
    from file_index.rules import schema
    from indexer import handler

    calls: list[str] = []
    original = boto3.session.Session.client

    def counting_client(self: Any, service: str, *args: Any, **kwargs: Any) -> Any:
        made = original(self, service, *args, **kwargs)
        if service == "s3":
            made.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
        return made

    variables = {"TABLE_NAME": TABLE, "BUCKET_NAME": BUCKET, "POWERTOOLS_SERVICE_NAME": "file-indexer"}
    if setting:
        variables["ENRICH"] = setting
    failed: list[Any] = []
    with mock_aws(), mock.patch.dict(os.environ, variables):
        if not setting:
            os.environ.pop("ENRICH", None)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        boto3.client("dynamodb", region_name="us-east-1").create_table(**schema.create_table_request(TABLE))
        moment = datetime(2017, 8, 20, 9, 0, tzinfo=UTC)
        records = []
        for number in range(uploads):
            key = f"USER{number % 10:03d}/photo-{number}.png"
            s3.put_object(
                Bucket=BUCKET,
                Key=key,
                Body=b"x",
                ContentType="image/png",
                Metadata={"n": str(number)},
                Tagging="a=b",
            )
            records.append(events.S3Event("ObjectCreated:Put", BUCKET, key, 1, f"{number + 1:016X}", moment))
        handler.cold_start.cache_clear()
        with mock.patch.object(boto3.session.Session, "client", counting_client):
            context = aws.BenchLambdaContext()
            for start in range(0, uploads, 10):
                answer = handler.lambda_handler(events.sqs_event(records[start : start + 10]), context)
                failed += answer.get("batchItemFailures", [])
        handler.cold_start.cache_clear()
    if failed:
        raise RuntimeError(f"{len(failed)} messages failed")
    counts: dict[str, float] = {}
    for name in calls:
        counts[name] = counts.get(name, 0) + 1 / uploads
    return counts


def run(*, uploads: int) -> list[Row]:
    rows = []
    for setting in SETTINGS:
        progress(f"enrich cost: {uploads} uploads with enrich={setting or 'off'}")
        counts = requests_per_upload(setting, uploads)
        per_upload = sum(counts.values())
        dollars = per_upload * PER_MILLION / 1000 * S3_GET_PER_THOUSAND_USD
        split = ", ".join(f"{name} {value:.2f}" for name, value in sorted(counts.items())) or "none"
        rows.append(
            Row(
                f"17. S3 requests per upload, enrich={setting or 'off'}",
                "requests/upload",
                round(per_upload, 3),
                None,
                "",
                note=f"{split}; ${dollars:,.2f} per million uploads in S3 GET requests",
            )
        )
    return rows
