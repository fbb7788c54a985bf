"""Measure 6: the indexer's own CPU cost, in records per second per core.

DynamoDB answers every call at once from a stub (`instrument.instant_dynamodb`), so what remains is our
code: parsing, Powertools' batch processing, logging and metrics, request serialisation and signing,
response parsing, the thread pool. `time.process_time` counts the CPU of all the process's threads, so
records ÷ CPU seconds is records per second per core whatever the concurrency. Batches have the deployed
size and the handler the deployed shard placement (`cdk.json` context, `bench.deployment`); the Powertools
settings are the deployed ones (INFO logs, metrics on), written to /dev/null.

The guideline's listener runs under the same stub for comparison (its GetItem finds nothing, so each
record is a GetItem and a PutItem).
"""

from __future__ import annotations

import time

from bench import aws, deployment, events, instrument
from bench.report import Row, progress
from file_index.rules import schema
from file_index.rules.placement import ShardPlacement


def measure_cpu(records: int, *, batch_size: int, placement: ShardPlacement) -> float:
    """CPU seconds of this process for the real indexer handler to index `records` new uploads.

    Batches of `batch_size`, the shard placement given to the handler as the deployment gives it
    (`ShardPlacement.to_env`); the cold start (imports, clients, first batch) is left out.
    """
    from indexer.handler import cold_start, lambda_handler

    stream = events.creates(records)
    sqs_events = [events.sqs_event(batch) for batch in events.batches(stream, batch_size)]
    context = aws.BenchLambdaContext()
    env = {"TABLE_NAME": schema.TABLE_NAME, "BUCKET_NAME": aws.BUCKET, **placement.to_env()}
    with aws.fake_credentials(), aws.environment(env), instrument.instant_dynamodb():
        cold_start.cache_clear()  # the handler reads this placement, not a previous call's
        lambda_handler(events.sqs_event(events.creates(10, first=records)), context)  # cold start
        cpu = time.process_time()
        for sqs_event in sqs_events:
            lambda_handler(sqs_event, context)
        return time.process_time() - cpu


def run(*, records: int) -> list[Row]:
    import boto3

    from bench.guideline_listener import GuidelineListener

    sizing = deployment.indexer_sizing()
    placement = deployment.shard_placement()
    bodies = [event.message_body() for event in events.creates(records)]
    # The process runs with the deployed Powertools settings (`aws.PROCESS_ENVIRONMENT`): INFO logs, metrics.
    progress(f"throughput: {records} records in batches of {sizing.batch_size}, DynamoDB stubbed")
    ours_cpu = measure_cpu(records, batch_size=sizing.batch_size, placement=placement)
    with aws.fake_credentials(), instrument.instant_dynamodb():
        guideline = GuidelineListener(boto3.resource("dynamodb").Table("FileMetaDataGuideline"))
        guideline.receive(bodies[0])  # its client's first call builds the endpoint; keep it out
        cpu = time.process_time()
        guideline.process(bodies)
        guideline_cpu = time.process_time() - cpu

    ours_rate = records / ours_cpu if ours_cpu else None
    guideline_rate = records / guideline_cpu if guideline_cpu else None
    return [
        Row(
            "6. indexer CPU throughput, DynamoDB stubbed",
            "records/s/core",
            ours_rate,
            guideline_rate,
            "guideline listener, same stub",
            ours_rate / guideline_rate if ours_rate and guideline_rate else None,
            f"ours ÷ guideline (higher is better); {records} records; ours "
            f"{ours_cpu / records * 1e6:.0f} µs CPU/record incl. Powertools logging and metrics",
        )
    ]
