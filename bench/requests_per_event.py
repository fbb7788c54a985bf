"""Measure 1: DynamoDB requests per S3 event, the indexer against the guideline's listener.

Both consume the same delivered stream (duplicates, local reordering, deletes that overtake their
create) on moto's in-process DynamoDB, each into its own copy of the table. The indexer gets the stream
as Lambda would, in SQS batches of 10; the guideline's listener one message at a time, as its
`concurrency = "1"` demands. Afterwards both indexes are compared with the ground truth (per key, the
event with the greatest sequencer), because fewer requests are worth nothing if the index is wrong.
"""

from __future__ import annotations

from typing import Any

from bench import aws, events, instrument
from bench.guideline_listener import GuidelineListener
from bench.report import Row, progress
from file_index.rules import schema
from file_index.rules.objects import is_record_key

GUIDELINE_TABLE = "FileMetaDataGuideline"
SQS_BATCH_SIZE = 10


def indexed_state(items: list[dict[str, Any]]) -> dict[str, int | None]:
    """Key -> size of what a search would find; tombstones count as absent. The table's records are
    skipped as the product's own scans skip them (`objects.is_record_key`): the index state, the deployed
    configuration and the indexer's upload statistics, items with no `size` that no search returns."""
    return {
        str(item[schema.OBJECT_KEY]): (None if item.get(schema.DELETED) else int(item[schema.SIZE]))
        for item in items
        if not is_record_key(str(item[schema.OBJECT_KEY]))
    }


def wrong_keys(truth: dict[str, int | None], index: dict[str, int | None]) -> int:
    """Keys whose indexed state (absent, or present with a size) differs from the latest event's."""
    return sum(1 for key, size in truth.items() if index.get(key) != size)


def run(*, keys: int) -> list[Row]:
    from moto import mock_aws

    from indexer.handler import lambda_handler

    stream = events.event_stream(keys=keys)
    truth = events.final_state(stream)
    duplicates = len(stream) - len(set(stream))
    progress(f"requests per event: {len(stream)} events over {keys} keys ({duplicates} duplicates)")

    with aws.fake_credentials(), mock_aws():
        ours_table = aws.create_table(schema.TABLE_NAME)
        guideline_table = aws.create_table(GUIDELINE_TABLE)
        context = aws.BenchLambdaContext()
        failures = 0
        with (
            aws.environment({"TABLE_NAME": schema.TABLE_NAME, "BUCKET_NAME": aws.BUCKET}),
            instrument.recording() as ours,
        ):
            for batch in events.batches(stream, SQS_BATCH_SIZE):
                response = lambda_handler(events.sqs_event(batch), context)
                failures += len(response.get("batchItemFailures", []))
        progress(f"requests per event: indexer done ({ours.count('dynamodb')} calls); guideline port next")

        with instrument.recording() as guideline:
            GuidelineListener(guideline_table).process(event.message_body() for event in stream)

        ours_wrong = wrong_keys(truth, indexed_state(aws.scan_all(ours_table)))
        guideline_wrong = wrong_keys(truth, indexed_state(aws.scan_all(guideline_table)))

    def breakdown(log: instrument.CallLog) -> str:
        return ", ".join(f"{op} {n}" for op, n in log.by_operation("dynamodb").items())

    stream_note = f"{len(stream)} events, {keys} keys, {duplicates} duplicates, reordered in windows of 8"
    rows = [
        Row.versus(
            "1. DynamoDB requests per S3 event",
            "requests/event",
            ours.count("dynamodb") / len(stream),
            guideline.count("dynamodb") / len(stream),
            "guideline listener",
            note=f"guideline ÷ ours; floor 1; {stream_note}; ours: {breakdown(ours)}; "
            f"guideline: {breakdown(guideline)}",
        ),
        Row(
            "1. keys indexed wrong after that stream",
            "keys",
            ours_wrong,
            guideline_wrong,
            "guideline listener",
            None,
            f"of {len(truth)} keys vs the latest event per key; ours reported {failures} batch item failures",
        ),
    ]
    return rows
