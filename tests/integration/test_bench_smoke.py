"""The benchmarks still run: each measure at tiny sizes through `python -m bench`, checked for its rows.

Figures are not checked (benchmarks assert no timings); what is checked is that each measure finishes,
prints its rows with figures in the text and markdown tables, and that the pieces the figures rest on
(the guideline port, the call counter, the instant DynamoDB) behave as the benchmarks assume.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from bench import aws, events, instrument, report
from bench.guideline_listener import GuidelineListener, data_split, is_new_entry
from file_index import schema

REPO = Path(__file__).resolve().parents[2]

TINY = [
    "--quick",
    "--keys=12",
    "--latency-ms=1",
    "--repeats=1",
    "--cold-start-runs=1",
    "--sizes=40,80",
    "--s3-list-max=80",
    "--uploads=3",
    "--records=40",
]


@pytest.fixture(autouse=True)
def _hooks_only_for_these_tests() -> Iterator[None]:
    """The call hooks wrap botocore's client factory; take them off again for the worker's other tests."""
    instrument.install()
    yield
    instrument.uninstall()


# measure -> the row numbers it prints
MEASURE_ROWS = {
    "requests_per_event": "1.",
    "batch_latency": "2.",
    "cold_start": "3.",
    "read_amplification": "4.",
    "freshness": "5.",
    "throughput": "6.",
}


@pytest.mark.parametrize("measure", sorted(MEASURE_ROWS))
def test_each_measure_runs_and_prints_its_rows(measure: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", *TINY, f"--only={measure}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    markdown = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    header, _rule, *rows = markdown
    assert header == "| " + " | ".join(report.HEADER) + " |"
    assert rows, result.stdout
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        measure_name, unit, ours = cells[0], cells[1], cells[2]
        assert measure_name.startswith(MEASURE_ROWS[measure]), row
        assert unit, row
        assert ours != "n/a", row  # every row carries our figure
    assert "[bench]" not in result.stdout  # progress stays on stderr


def test_tables_escape_cells_and_align_columns() -> None:
    rows = [
        report.Row.versus("a | b", "ms", 2.0, 6.0, "other"),
        report.Row("c", "items", 1234.5, None, "", None, "note"),
    ]
    markdown = report.markdown_table(rows).splitlines()
    assert markdown[2] == "| a \\| b | ms | 2 | 6 (other) | 3× |  |"
    assert markdown[3] == "| c | items | 1,234 | n/a | n/a | note |"
    text = report.text_table(rows).splitlines()
    assert len({line.index("ms") for line in text if " ms " in line}) == 1
    assert text[2].index("ms") == text[0].index("unit")


def test_sequencers_compare_after_right_padding() -> None:
    assert not is_new_entry("0055AED6DCD90281E5", "0055AED6DCD90281E500")  # equal once padded
    assert is_new_entry("0055AED6DCD90281E500", "0055AED6DCD90281E6")
    assert not is_new_entry("0055AED6DCD90281E6", "0055AED6DCD90281E5FF")
    assert data_split("USER001_FILE001.txt") == ("USER001", "FILE001.txt")
    assert data_split("USER001/a_b.txt") == ("USER001", "a_b.txt")


def test_final_state_takes_the_latest_sequencer_per_key() -> None:
    stream = events.event_stream(keys=30, seed=3)
    truth = events.final_state(stream)
    assert len(truth) == 30
    assert len(stream) > len(set(stream))  # duplicates were delivered
    replayed = events.final_state(reversed(stream))
    assert replayed == truth  # delivery order does not change the truth


def _event(name: str, sequencer: str, size: int = 10) -> events.S3Event:
    return events.S3Event(name, aws.BUCKET, "USER001_my file.txt", size, sequencer, events._EPOCH)


def test_guideline_port_issues_the_guidelines_calls_and_loses_an_early_delete() -> None:
    with aws.fake_credentials(), mock_aws():
        table = aws.create_table("FileMetaDataGuideline")
        listener = GuidelineListener(table)
        created = _event("ObjectCreated:Put", "00A0")
        with instrument.recording() as log:
            listener.receive(created.message_body())
        assert log.by_operation("dynamodb") == {"GetItem": 1, "PutItem": 1}

        with instrument.recording() as log:
            listener.receive(created.message_body())  # a duplicate: read, compare, stop
        assert log.by_operation("dynamodb") == {"GetItem": 1}

        with instrument.recording() as log:
            listener.receive(_event("ObjectCreated:Put", "00B0", size=20).message_body())
        assert log.by_operation("dynamodb") == {"GetItem": 1, "UpdateItem": 1}
        item = table.get_item(Key={schema.OBJECT_KEY: "USER001_my file.txt"})["Item"]
        assert (item[schema.SIZE], item["version"]) == (20, 2)

        # A delete, then an older create delivered late: the guideline's design resurrects the file.
        listener.receive(_event("ObjectRemoved:Delete", "00C0").message_body())
        listener.receive(_event("ObjectCreated:Put", "00B8").message_body())
        assert "Item" in table.get_item(Key={schema.OBJECT_KEY: "USER001_my file.txt"})


def test_guideline_port_rereads_and_retries_on_a_version_conflict() -> None:
    with aws.fake_credentials(), mock_aws():
        table = aws.create_table("FileMetaDataGuideline")
        listener = GuidelineListener(table)
        listener.receive(_event("ObjectCreated:Put", "00A0").message_body())
        stale = table.get_item(Key={schema.OBJECT_KEY: "USER001_my file.txt"})["Item"]
        listener.receive(_event("ObjectCreated:Put", "00B0").message_body())  # version 2 now

        record = json.loads(_event("ObjectCreated:Put", "00C0", size=30).message_body())["Records"][0]
        with instrument.recording() as log:
            listener._update_record(stale, record)  # as if another listener wrote since our read
        assert log.errors == {"ConditionalCheckFailedException": 1}
        assert log.by_operation("dynamodb") == {"GetItem": 1, "UpdateItem": 2}
        item = table.get_item(Key={schema.OBJECT_KEY: "USER001_my file.txt"})["Item"]
        assert (item[schema.SIZE], item["version"]) == (30, 3)


def test_instant_dynamodb_answers_without_an_emulator_and_is_counted() -> None:
    with aws.fake_credentials(), instrument.instant_dynamodb(), instrument.recording() as log:
        client = boto3.client("dynamodb", region_name=aws.REGION)
        client.put_item(TableName="Nowhere", Item={schema.OBJECT_KEY: {"S": "k"}})
        page = client.query(
            TableName="Nowhere",
            KeyConditionExpression="#k = :k",
            ExpressionAttributeNames={"#k": schema.OBJECT_KEY},
            ExpressionAttributeValues={":k": {"S": "k"}},
        )
    assert page["Items"] == []
    assert log.by_operation("dynamodb") == {"PutItem": 1, "Query": 1}
