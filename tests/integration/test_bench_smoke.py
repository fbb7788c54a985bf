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
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from bench import (
    aws,
    backfill_batch,
    box_reads,
    charts,
    entries,
    events,
    instrument,
    models,
    partition_heat,
    report,
    write_cost,
)
from bench.__main__ import DEFAULT_CHARTS, parse_args
from bench.guideline_listener import GuidelineListener, data_split, is_new_entry
from bench.partition_heat import Kind
from bench.runner import MEASURES
from file_index.rules import schema, zorder
from file_index.rules.placement import ShardPlacement

pytestmark = pytest.mark.slow  # `make test-slow` (CI runs it after `make test`)

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
    "--heat-seconds=1",
    "--heat-rate=200",
    "--fan-out-objects=120",
    "--page-sizes=10,100",
    "--box-objects=1500",
    "--box-check-objects=200",
    "--box-check-shapes=1",
    "--cost-uploads=100",
    "--name-sizes=200",
    "--page-runs=1",
    "--local-stack-files=60",
    "--upload-files=5",
    "--layout-files=300",
    "--served-files=12",
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
    "partition_heat": ("11.",),
    "fan_out": ("12.",),
    "box_reads": ("13.",),
    "write_cost": ("14.",),
    "pipeline": ("15.",),
    "name_reads": ("16.",),
    "enrich_cost": ("17.",),
    "page": ("18.",),
    "local_stack": ("19.",),
    "name_maintenance": ("20.",),
    "upload_writes": ("21.",),
    "name_layouts": ("22.",),
    "served_writes": ("23.",),
}
# Seconds a measure's tiny run may take; more for those that start DynamoDB Local and write on it a lot.
MEASURE_TIMEOUTS = {"upload_writes": 300, "served_writes": 300}
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
        timeout=MEASURE_TIMEOUTS.get(measure, 120),
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
    if measure == "box_reads":
        # The memory table the figures are read on answers as moto does, page for page, on every plan.
        checks = [row for row in rows if "cross-check" in row]
        assert len(checks) == 4, rows
        assert all("equal for every box" in row for row in checks), checks
        # Every shape in both deployments, and the chosen plan against the cheapest in hindsight.
        assert sum("13. bucket box," in row for row in rows) >= len(box_reads.SHAPES), rows  # empty: no row
        assert any("chosen ÷ cheapest" in row for row in rows)
    if measure == "name_reads":
        # The model checked against the reader, every shape, and the write side.
        assert any("models = reader" in row for row in rows), rows
        assert sum("16. name '" in row for row in rows) >= 20, rows
        for kind in ("new keys", "overwrites", "deletes"):
            assert any(f"write units per million {kind}" in row for row in rows), rows
        assert any("busiest partition at 10,000 overwrites/s" in row for row in rows), rows
    if measure == "batch_latency":
        # What concurrent writes save, per batch size: the same handler with one write in flight.
        one_writer = [row for row in rows if "(ours, WRITE_CONCURRENCY=1)" in row]
        assert len(one_writer) == 2, rows
        assert all(" | round trips | " in row for row in one_writer), one_writer


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
    "name_layouts": {
        "layouts": [
            {
                "label": "today",
                "busyUnits": 41.2,
                "aloneUnits": 41.2,
                "p90ItemsRead": 18.0,
                "readUnits": 0.5,
                "secondStage": False,
            },
            {
                "label": "staged",
                "busyUnits": 9.1,
                "aloneUnits": 23.1,
                "p90ItemsRead": 18.0,
                "readUnits": 0.5,
                "secondStage": True,
            },
        ],
        "targets": {"busy": 10.0, "ceiling": 20.0, "alone": 25.0},
    },
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
    # 10 million entries of 5 write units each (the table and its four GSIs): 50 million write units.
    assert fast.dynamodb_usd == pytest.approx(50 * backfill_batch.PRICES.dynamodb_per_million_write_units)
    # Sharded, the index sustains more than the writers: they bound it.
    sharded = backfill_batch.model(10_000_000, batch_seconds=0.5, index_bound=15_000)
    assert sharded.hours == sharded.hours_without_index_bound == pytest.approx(10_000_000 / 10_000 / 3600)
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


def _upload(key: str, size: int, second: int, placement: ShardPlacement) -> dict[str, object]:
    moment = events._EPOCH + timedelta(seconds=second)
    event = entries.create_event(
        bucket=aws.BUCKET, key=key, user="USER001", size=size, moment=moment, sequence=1
    )
    return entries.entry(event, None, placement)


def test_write_units_follow_dynamodbs_accounting_per_index() -> None:
    placement = ShardPlacement(bucket_shards=16, multi_attribute_index=True)
    indexes = schema.global_indexes(True)
    new = _upload("USER001/a.bin", 10, 0, placement)
    first = entries.index_writes(None, new, indexes)
    assert sorted((w.index, w.units) for w in first) == sorted(
        [(entries.TABLE, 1), *((index.name, 1) for index in indexes)]
    )
    assert {w.partition for w in first if w.index == schema.BUCKET_SIZE_INDEX.name} == {new["bucketName"]}
    # An overwrite with a new size and time moves the entry in every index: out, then in (2 each).
    moved = entries.index_writes(new, _upload("USER001/a.bin", 20, 5, placement), indexes)
    assert {index.name: 2 for index in indexes} == {
        name: sum(w.units for w in moved if w.index == name) for name in (i.name for i in indexes)
    }
    # The same key in an index: one write in place, at the same shard (the shard follows the object key).
    same = dict(new, eTag="other")
    in_place = entries.index_writes(new, same, indexes)
    assert len(in_place) == 1 + len(indexes)
    assert all(w.units == 1 for w in in_place)
    # An entry of more than 1 KB costs a unit per started KB, in the table and in every index.
    large = _upload("USER001/" + "k" * 600, 10, 0, placement)  # the key twice: as objectKey and fileId
    assert 1024 < entries.item_bytes(large) <= 2048
    assert {w.units for w in entries.index_writes(None, large, indexes)} == {2}
    assert [entries.write_units(size) for size in (0, 1024, 1025)] == [1, 1, 2]


def test_heat_model_puts_a_bucket_on_one_partition_before_and_spreads_it_after() -> None:
    before = partition_heat.simulate(ShardPlacement(), Kind.NEW, rate=400, seconds=2, hot_share=0.5)
    assert before.busiest_bucket == 400  # every upload of the bucket hits its one partition
    assert 150 <= before.busiest_hot_user <= 250
    after = partition_heat.simulate(partition_heat.AFTER, Kind.NEW, rate=400, seconds=2, hot_share=0.5)
    assert after.busiest_bucket < 400 / 16 * 3
    assert after.busiest[schema.Z_ORDER_INDEX.name] == after.busiest[schema.BUCKET_SIZE_INDEX.name]
    assert after.busiest_hot_user < before.busiest_hot_user / 2
    assert after.units[entries.TABLE] == 800  # sharding moves writes, it adds none
    overwrites = partition_heat.simulate(ShardPlacement(), Kind.OVERWRITE, rate=100, seconds=1, hot_share=0.5)
    assert overwrites.busiest_bucket == 200  # out and in: two units an overwrite
    assert (
        partition_heat.sustainable(ShardPlacement(), Kind.NEW, hot_user=False, guess=300, seconds=1).rate
        == 1000
    )
    assert (
        partition_heat.sustainable(ShardPlacement(), Kind.OVERWRITE, hot_user=True, guess=300, seconds=1).rate
        == 500
    )


def test_box_model_counts_what_the_key_conditions_read() -> None:
    placement = ShardPlacement(bucket_shards=4, multi_attribute_index=True)
    data = box_reads.dataset(800, placement, seed=3)
    model = box_reads.Model(data, placement.bucket_shards)
    for shape in box_reads.SHAPES:
        ranges = zorder.z_ranges(shape.box, box_reads.MAX_RANGES)
        expected = models.read_cost(ranges, [(e.upload_ms, e.size) for e in data], shape.box)
        z = model.z_order(shape.box)
        assert (z.read, model.matches(shape.box)) == (expected.read, expected.matched)
        assert z.requests >= len(ranges) * placement.bucket_shards
        assert z.depth_all_at_once == 1
        low, high = shape.box.min_size or 0, shape.box.max_size or zorder.MAX_SIZE
        assert model.size_index(shape.box).read == sum(1 for e in data if low <= e.size <= high)
        user_in_time = sum(
            1
            for e in data
            if e.user == box_reads.USER
            and (shape.box.from_ms or 0) <= e.upload_ms <= (shape.box.to_ms or zorder.MAX_TIME_MS)
        )
        assert model.user_index(shape.box, box_reads.USER).read == user_in_time


def test_write_cost_per_upload_by_placement() -> None:
    sharded = ShardPlacement(bucket_shards=16)
    with_z = ShardPlacement(bucket_shards=16, multi_attribute_index=True)
    # (placement, 0.4's bucket time and user size indexes): 0.2.0, 0.3.0's default, today's default, with
    # the Z-order index.
    placements = ((ShardPlacement(), False), (sharded, False), (sharded, True), (with_z, True))
    assert [
        write_cost.write_units_per_upload(
            placement, Kind.NEW, uploads=50, bucket_time_index=new, user_size_index=new
        )[0]
        for placement, new in placements
    ] == [3, 3, 5, 6]
    overwrite = [
        write_cost.write_units_per_upload(
            placement, Kind.OVERWRITE, uploads=50, bucket_time_index=new, user_size_index=new
        )[0]
        for placement, new in placements
    ]
    assert overwrite == [5, 5, 9, 11]
