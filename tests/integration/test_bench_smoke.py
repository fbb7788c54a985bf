"""The benchmarks still run: each measure at tiny sizes through `python -m bench`, checked for its rows.

Figures are not checked (benchmarks assert no timings); what is checked is that each measure finishes,
prints its rows with figures in the text and markdown tables, draws its chart, and that the pieces the
figures rest on (the guideline port, the call counter, the instant DynamoDB, the charts, the on-paper
model) behave as the benchmarks assume.
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

from bench import aws, backfill_batch, charts, events, instrument, report
from bench.__main__ import DEFAULT_CHARTS, parse_args
from bench.guideline_listener import GuidelineListener, data_split, is_new_entry
from bench.runner import MEASURES
from file_index import schema

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
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
    "--backfill-sizes=60",
    "--reconcile-objects=60",
    "--differences=3",
]


@pytest.fixture(autouse=True)
def _hooks_only_for_these_tests() -> Iterator[None]:
    """The call hooks wrap botocore's client factory; take them off again for the worker's other tests."""
    instrument.install()
    yield
    instrument.uninstall()


# measure -> the row numbers it prints
MEASURE_ROWS = {
    "requests_per_event": ("1.",),
    "batch_latency": ("2.",),
    "cold_start": ("3.",),
    "read_amplification": ("4.",),
    "freshness": ("5.",),
    "throughput": ("6.",),
    "backfill": ("7.",),
    "reconcile": ("8.",),
    "backfill_batch": ("9.", "10."),
}
# measure -> the chart it draws
MEASURE_CHARTS = {name: f"{name}.png" for name in charts.CHARTS}


def test_every_measure_is_run_by_these_tests() -> None:
    assert set(MEASURE_ROWS) == set(MEASURES)


@pytest.mark.parametrize("measure", sorted(MEASURE_ROWS))
def test_each_measure_runs_and_prints_its_rows(measure: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", *TINY, f"--only={measure}", f"--charts={tmp_path}"],
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
    drawn = sorted(path.name for path in tmp_path.iterdir())
    assert drawn == ([MEASURE_CHARTS[measure]] if measure in MEASURE_CHARTS else [])
    for name in drawn:
        assert (tmp_path / name).read_bytes().startswith(PNG_SIGNATURE)


def test_a_quick_run_draws_no_chart_unless_asked() -> None:
    assert parse_args(["--quick"]).charts is None
    assert parse_args([]).charts == DEFAULT_CHARTS
    assert parse_args(["--no-charts"]).charts is None
    assert parse_args(["--quick", "--charts", "out"]).charts == Path("out")


SAMPLES = {
    "freshness": {"samplesMs": [5.0, 6.0, 9.5, 30.0], "oneGetMs": 4.0},
    "read_amplification": {
        "sizes": [100, 1000],
        "itemsRead": {"user": [20, 100], "bucket": [100, 100]},
        "listed": [100, 1000],
        "modelled": [False, True],
    },
    "batch_latency": {
        "latencyMs": 5.0,
        "batchSizes": [10, 100],
        "ms": {"concurrent (ours)": [[11.0, 12.0], [90.0, 95.0]], "sequential": [[60.0], [600.0]]},
    },
    "backfill": {"sizes": [100], "backfillPerSecond": [300.0], "listingPerSecond": [4000.0]},
}


def test_charts_are_drawn_as_png_from_raw_samples(tmp_path: Path) -> None:
    written = charts.write_charts(SAMPLES, tmp_path / "charts")

    assert sorted(path.name for path in written) == sorted(MEASURE_CHARTS.values())
    for path in written:
        assert path.read_bytes().startswith(PNG_SIGNATURE)
        assert path.stat().st_size > 10_000  # axes, bars and labels, not an empty canvas


def test_chart_samples_that_lack_a_field_or_name_no_chart_are_refused(tmp_path: Path) -> None:
    with pytest.raises(charts.ChartDataError, match="chart 'freshness': the samples have no 'oneGetMs'"):
        charts.write_charts({"freshness": {"samplesMs": [1.0]}}, tmp_path)
    with pytest.raises(charts.ChartDataError, match="no chart draws the samples \\['latency'\\]"):
        charts.write_charts({"latency": {}}, tmp_path)


def test_the_on_paper_backfill_is_bounded_by_the_bucket_index_partition() -> None:
    fast = backfill_batch.model(10_000_000, batch_seconds=0.5)
    # 10 writers x 500 items / 0.5 s = 10,000 objects/s, but one index partition takes 1,000 writes/s.
    assert fast.hours == pytest.approx(10_000_000 / 1000 / 3600)
    assert fast.hours_without_index_bound == pytest.approx(10_000_000 / 10_000 / 3600)
    assert fast.dynamodb_usd == pytest.approx(30 * backfill_batch.PRICES.dynamodb_per_million_write_units)
    slow = backfill_batch.model(1_000_000, batch_seconds=10.0)  # 500 objects/s: the writers bound it
    assert slow.hours == slow.hours_without_index_bound == pytest.approx(1_000_000 / 500 / 3600)
    # CPU-bound in a 512 MB function: 512/1769 of a vCPU.
    assert backfill_batch.lambda_batch_seconds(0.2, 0.3) == pytest.approx(0.3 * 1769 / 512)
    assert backfill_batch.lambda_batch_seconds(2.0, 0.1) == 2.0


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
