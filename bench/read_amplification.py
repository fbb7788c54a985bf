"""Measure 4: search read amplification, and how reads per page grow with the table, against listing.

Ours: the real search handler (`search.handler.lambda_handler`, REST proxy events from
`local_stack.api_gateway.to_rest_event`) over moto's in-process DynamoDB. Items read are what DynamoDB
reports (`ScannedCount` of every Query, one item per GetItem), counted by a botocore `after-call` hook,
so a handler that filtered after reading could not hide it. Items returned are the items of the answer.

The naive alternative the guideline rejects (5.4.4.1): list the bucket with ListObjectsV2 and filter and
sort on the client. Every list answer has to read the whole listing (sorting by date or size needs all
candidates), so one real listing per table size gives the objects listed and the LIST requests of every
list query. Up to `s3_list_max` objects the bucket really holds the objects (moto S3, uploaded with
PutObject, listed with the paginator); above it the listing is modelled as N objects in ceil(N / 1000)
LIST requests (S3's page size), and the row says so. The naive filter is applied to the listed keys with
the same metadata the table holds, so both sides answer the same question.

The table grows by batch_write_item in place, size after size; moto evaluates a GSI query by sorting the
whole partition in Python, so the largest size is slow (100k: minutes); `--sizes` chooses them.
"""

from __future__ import annotations

import math
import random
import secrets
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from bench import aws, events, instrument
from bench.report import Measured, Row, progress
from file_index.rules import schema
from file_index.rules.objects import iso_utc_millis

USERS = 50
PAGE = 100  # the API's default limit
S3_PAGE = 1000  # ListObjectsV2 returns at most 1000 keys per request
_EPOCH = datetime(2017, 8, 20, 0, 0, 0, tzinfo=UTC)
_SPACING = timedelta(seconds=37)  # 100k objects span about six weeks


@dataclass(frozen=True)
class FileMeta:
    key: str
    user: str
    upload_date: str
    size: int


def file_meta(index: int, rng: random.Random) -> FileMeta:
    moment = _EPOCH + index * _SPACING
    user = index % USERS
    return FileMeta(
        key=events.object_key(user, index),
        user=f"USER{user:03d}",
        upload_date=iso_utc_millis(moment),
        size=rng.randint(1, 10_000_000),
    )


def table_item(meta: FileMeta, bucket: str) -> dict[str, Any]:
    sequencer = f"{0x0055AED6DCD9028100 + zlib.crc32(meta.key.encode()):018X}"
    return {
        schema.OBJECT_KEY: meta.key,
        schema.BUCKET_NAME: bucket,
        schema.FILE_ID: meta.key.split("_", 1)[-1].split("/", 1)[-1],
        schema.SIZE: meta.size,
        schema.UPLOAD_USER: meta.user,
        schema.UPLOAD_DATE: meta.upload_date,
        schema.SEQUENCER: sequencer,
        schema.ORDER_KEY: sequencer,
        schema.E_TAG: "d41d8cd98f00b204e9800998ecf8427e",
    }


@dataclass(frozen=True)
class QueryType:
    """One kind of search: its API path and the naive filter that answers the same question."""

    name: str
    path: str
    matches: Callable[[FileMeta], bool]


def query_types(bucket: str, files: list[FileMeta]) -> list[QueryType]:
    user = "USER007"
    mine = [f for f in files if f.user == user]
    day = mine[len(mine) // 2].upload_date[:10]
    low, high = mine[len(mine) // 4].upload_date, mine[3 * len(mine) // 4].upload_date
    return [
        QueryType("user", f"/files?{urlencode({'user': user})}", lambda f: f.user == user),
        QueryType(
            "user + date",
            f"/files?{urlencode({'user': user, 'date': day})}",
            lambda f: f.user == user and f.upload_date.startswith(day),
        ),
        QueryType(
            "user + from/to",
            f"/files?{urlencode({'user': user, 'from': low, 'to': high})}",
            lambda f: f.user == user and low <= f.upload_date <= high,
        ),
        QueryType("bucket", f"/files?{urlencode({'bucket': bucket})}", lambda f: True),
        QueryType(
            "bucket + minSize/maxSize",
            f"/files?{urlencode({'bucket': bucket, 'minSize': 1_000_000, 'maxSize': 1_500_000})}",
            lambda f: 1_000_000 <= f.size <= 1_500_000,
        ),
    ]


@dataclass(frozen=True)
class Answer:
    returned: int
    read: int
    requests: int
    next_cursor: str | None


class Searcher:
    """Calls the search handler as API Gateway would and reads the DynamoDB hooks' counts."""

    def __init__(self) -> None:
        from local_stack.api_gateway import to_rest_event
        from search.handler import lambda_handler

        self._event = to_rest_event
        self._handler = lambda_handler
        self._context = aws.BenchLambdaContext(function_name="search")

    def get(self, path: str) -> tuple[dict[str, Any], instrument.CallLog]:
        import json

        with instrument.recording() as log:
            response = self._handler(self._event("GET", path), self._context)
        if response["statusCode"] != 200:
            raise RuntimeError(f"GET {path} answered {response['statusCode']}: {response.get('body')}")
        return json.loads(response["body"]), log

    def list_page(self, path: str) -> Answer:
        body, log = self.get(path)
        # Queries only: a list also reads the index state record, at most once per STATE_MAX_AGE_SECONDS.
        return Answer(
            len(body["items"]), log.items_scanned, log.count("dynamodb", "Query"), body["nextCursor"]
        )

    def get_file(self, key: str) -> Answer:
        _body, log = self.get(f"/files/{quote(key, safe='')}")
        # A GetItem reads the one item under its key.
        return Answer(1, log.count("dynamodb", "GetItem"), log.count("dynamodb"), None)


@dataclass(frozen=True)
class Listing:
    keys: list[str]
    requests: int
    modelled: bool


def list_bucket(s3: Any, bucket: str, files: list[FileMeta], *, real: bool) -> Listing:
    if not real:
        return Listing([f.key for f in files], math.ceil(len(files) / S3_PAGE), modelled=True)
    keys: list[str] = []
    with instrument.recording() as log:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
    return Listing(keys, log.count("s3", "ListObjectsV2"), modelled=False)


def naive_returned(listing: Listing, by_key: dict[str, FileMeta], query: QueryType) -> int:
    """What the naive client returns for one page: the matching listed objects, at most a page."""
    return min(PAGE, sum(1 for key in listing.keys if query.matches(by_key[key])))


def run(*, sizes: list[int], s3_list_max: int) -> Measured:
    import boto3
    from moto import mock_aws

    bucket = aws.BUCKET
    rng = random.Random(11)
    rows: list[Row] = []
    growth: list[Row] = []
    # The chart's data: items read for one page of each query, and by listing, per table size.
    chart: dict[str, Any] = {"sizes": [], "itemsRead": {}, "listed": [], "modelled": []}
    with aws.fake_credentials(), mock_aws():
        table = aws.create_table()
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=bucket)
        secret_arn = boto3.client("secretsmanager").create_secret(
            Name="bench/cursor-key", SecretString=secrets.token_urlsafe(32)
        )["ARN"]
        sqs = boto3.client("sqs")
        env = {
            "TABLE_NAME": schema.TABLE_NAME,
            "BUCKET_NAME": bucket,
            "CURSOR_SECRET_ARN": secret_arn,
            "QUEUE_URL": sqs.create_queue(QueueName="bench-events")["QueueUrl"],
            "DEAD_LETTER_QUEUE_URL": sqs.create_queue(QueueName="bench-events-dlq")["QueueUrl"],
        }
        with aws.environment(env):
            searcher = Searcher()
            files: list[FileMeta] = []
            for size in sorted(sizes):
                added = [file_meta(index, rng) for index in range(len(files), size)]
                progress(f"read amplification: table grows to {size} items")
                with table.batch_writer() as writer:
                    for meta in added:
                        writer.put_item(Item=table_item(meta, bucket))
                real_s3 = size <= s3_list_max
                if real_s3:
                    progress(f"read amplification: uploading {len(added)} objects to moto S3")
                    for meta in added:
                        s3.put_object(Bucket=bucket, Key=meta.key, Body=b"x")
                files.extend(added)
                by_key = {f.key: f for f in files}
                listing = list_bucket(s3, bucket, files, real=real_s3)
                how = "modelled: N/1000 LIST requests" if listing.modelled else "real moto S3 listing"
                types = query_types(bucket, files)
                largest = size == max(sizes)

                chart["sizes"].append(size)
                chart["listed"].append(len(listing.keys))
                chart["modelled"].append(listing.modelled)
                if largest:
                    answer = searcher.get_file(files[len(files) // 2].key)
                    rows.append(
                        Row.versus(
                            f"4. read amplification, GET /files/{{key}}, {size:,} objects",
                            "items read/returned",
                            answer.read / answer.returned,
                            1.0,
                            "S3 HeadObject by key",
                            note="S3 finds one key by itself: no gain claimed here",
                        )
                    )
                for query in types:
                    progress(f"read amplification: {query.name} at {size} items")
                    answer = searcher.list_page(query.path)
                    chart["itemsRead"].setdefault(query.name, []).append(answer.read)
                    naive = naive_returned(listing, by_key, query)
                    if largest:
                        rows.append(
                            Row.versus(
                                f"4. read amplification, {query.name}, {size:,} objects",
                                "items read/returned",
                                answer.read / answer.returned if answer.returned else None,
                                len(listing.keys) / naive if naive else None,
                                "list bucket + filter",
                                note=f"naive ÷ ours; ours read {answer.read} for {answer.returned} "
                                f"in {answer.requests} Query; naive listed {len(listing.keys):,} for {naive} "
                                f"in {listing.requests} LIST ({how})",
                            )
                        )
                    if query.name in ("user", "bucket"):
                        second = ""
                        if answer.next_cursor:
                            page2 = searcher.list_page(
                                f"{query.path}&{urlencode({'cursor': answer.next_cursor})}"
                            )
                            second = f"; page 2 read {page2.read} for {page2.returned}"
                        growth.append(
                            Row.versus(
                                f"4. items read per page, {query.name}, {size:,} objects",
                                "items",
                                answer.read,
                                len(listing.keys),
                                "list bucket + filter",
                                note=f"naive ÷ ours; page of {answer.returned}{second}; naive "
                                f"{listing.requests} LIST requests per answer ({how})",
                            )
                        )
    return Measured(rows + growth, {"read_amplification": chart})
