"""Parsing S3 notifications: decoding, test events, malformed bodies, and the sequencer rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import zip_longest
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from file_index.rules.key_pattern import KeyPattern
from file_index.rules.objects import ObjectEvent, iso_utc_millis, order_key_for_sequencer, order_key_for_time
from indexer.events import MalformedMessageError, parse_message


def record(
    event_name: str = "ObjectCreated:Put", key: str = "USER001_FILE001.txt", **obj: Any
) -> dict[str, Any]:
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventTime": "2017-08-20T09:15:02.113Z",
        "eventName": event_name,
        "s3": {"bucket": {"name": "fileupload.a"}, "object": {"key": key, "size": 12, **obj}},
    }


def body(*records: dict[str, Any]) -> str:
    return json.dumps({"Records": list(records)})


def only(events: list[ObjectEvent]) -> ObjectEvent:
    assert len(events) == 1
    return events[0]


@pytest.mark.parametrize(
    ("encoded", "decoded"),
    [
        ("my+file.txt", "my file.txt"),
        ("a%2Bb.txt", "a+b.txt"),
        ("100%25.csv", "100%.csv"),
        ("USER001%2Freports%2Fq1.pdf", "USER001/reports/q1.pdf"),
        ("USER001/reports/q1.pdf", "USER001/reports/q1.pdf"),
        ("%E6%97%A5%E6%9C%AC%E8%AA%9E.txt", "日本語.txt"),
        ("caf%C3%A9+%26+cr%C3%A8me.md", "café & crème.md"),
    ],
)
def test_keys_are_url_decoded(encoded: str, decoded: str) -> None:
    assert only(parse_message(body(record(key=encoded)))).key == decoded


def test_a_create_carries_what_the_index_needs() -> None:
    event = only(
        parse_message(
            body(
                record(key="USER001_FILE+001.txt", eTag="abc", versionId="v1", sequencer="0055AED6DCD90281E5")
            )
        )
    )
    assert event == ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket="fileupload.a",
        key="USER001_FILE 001.txt",
        event_time=datetime(2017, 8, 20, 9, 15, 2, 113000, tzinfo=UTC),
        sequencer="0055AED6DCD90281E5",
        size=12,
        e_tag="abc",
        version_id="v1",
        upload_user="USER001",
        file_id="FILE 001.txt",
    )
    assert event.upload_date == "2017-08-20T09:15:02.113Z"
    assert not event.is_removal


@pytest.mark.parametrize(
    ("name", "version_id", "removes_one_version"),
    [
        ("ObjectRemoved:Delete", None, False),
        ("ObjectRemoved:Delete", "v1", True),
        ("ObjectRemoved:DeleteMarkerCreated", "marker", False),
        ("LifecycleExpiration:Delete", None, False),
        ("LifecycleExpiration:Delete", "v1", True),
        ("LifecycleExpiration:DeleteMarkerCreated", "marker", False),
    ],
)
def test_removals(name: str, version_id: str | None, removes_one_version: bool) -> None:
    raw = record(name, versionId=version_id)
    del raw["s3"]["object"]["size"]  # S3 sends no size on removals
    event = only(parse_message(body(raw)))
    assert event.is_removal
    assert event.removes_one_version is removes_one_version
    assert event.size is None


def test_several_records_in_one_message_and_other_event_types_skipped() -> None:
    events = parse_message(
        body(
            record(key="a_1"),
            record("ObjectRestore:Completed", key="a_2"),
            record("s3:ObjectRemoved:Delete", key="a_3"),
        )
    )
    assert [(e.key, e.event_name) for e in events] == [
        ("a_1", "ObjectCreated:Put"),
        ("a_3", "ObjectRemoved:Delete"),
    ]


def test_a_test_event_is_acknowledged_with_no_events() -> None:
    assert parse_message(json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"})) == []


def test_a_key_outside_the_placement_has_no_user_and_says_why() -> None:
    event = only(
        parse_message(
            body(record(key="archive%2F2024%2Fsummary.pdf")), KeyPattern.parse(r"(?P<user>U\d+)_(?P<file>.+)")
        )
    )
    assert event.upload_user is None
    assert event.file_id == "summary.pdf"
    assert event.no_user_reason is not None
    assert "does not match" in event.no_user_reason


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ("{}", "no S3 Records"),
        ('{"Records": []}', "no S3 Records"),
        (json.dumps({"Type": "Notification", "Message": "{}"}), "no S3 Records"),
        (body({**record(), "eventSource": "aws:sqs"}), "eventSource"),
        (body({**record(), "eventName": None}), "eventName"),
        (body({**record(), "eventTime": "yesterday"}), "eventTime"),
        (body({**record(), "s3": {"bucket": {"name": "b"}}}), "s3.object"),
        (body(record(key="")), "key is missing"),
        (body(record(sequencer="XYZ")), "sequencer"),
        (body(record(sequencer="0" * 65)), "sequencer"),
        (body(record(size=-1)), "size"),
        (body(record(size="12")), "size"),
        (body(record(size=10**40 + 1)), "size"),  # DynamoDB numbers hold 38 digits
        (body(record(size=10**18)), "size"),
        (body(record(size=1.5)), "size"),
        (body(record(size=True)), "size"),
        (json.dumps({"Records": [record(), "not a record"]}), "record 1"),
        # Out of datetime's range once converted to UTC.
        (body({**record(), "eventTime": "0001-01-01T00:00:00+01:00"}), "eventTime"),
        (body({**record(), "eventTime": "9999-12-31T23:59:59-01:00"}), "eventTime"),
        # JSON can carry a lone surrogate; UTF-8 (and so DynamoDB) cannot.
        (body(record(key="u_\ud800")), "key is not valid UTF-8"),
        (
            body({**record(), "s3": {"bucket": {"name": "b\udfff"}, "object": {"key": "k", "size": 1}}}),
            "name",
        ),
        (body(record(eTag="\ud800")), "eTag"),
        (body(record(versionId="v\udc00")), "versionId"),
        (body(record(key="U_" + "x" * 1023)), "longer than S3's 1024 bytes"),
        (body(record(key="U_" + "%C3%A9" * 512)), "longer than S3's 1024 bytes"),  # 1026 bytes decoded
    ],
)
def test_malformed_messages_fail_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(MalformedMessageError, match=reason):
        parse_message(raw)


# The sequencer rule, as AWS documents it: right-pad the shorter with zeros, compare; the greater is later.
def aws_compare(a: str, b: str) -> int:
    for x, y in zip_longest(a.upper(), b.upper(), fillvalue="0"):
        if x != y:
            return -1 if x < y else 1
    return 0


def compare(a: str, b: str) -> int:
    key_a, key_b = order_key_for_sequencer(a), order_key_for_sequencer(b)
    return (key_a > key_b) - (key_a < key_b)


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("0A", "0B"),
        ("0055AED6DCD90281E5", "0055AED6DCD90281E6"),
        ("0055AED6DCD90281E5", "0055AED6DCD90281E50001"),  # longer, same prefix
        ("0FFFFFFFFFFF", "1"),  # shorter and greater after padding
        ("00599E9964323435D9", "00599E99643234360"),
    ],
)
def test_sequencer_order_follows_the_right_pad_rule(earlier: str, later: str) -> None:
    assert compare(earlier, later) == -1
    assert compare(later, earlier) == 1


@pytest.mark.parametrize(("a", "b"), [("0A", "0A"), ("0A", "0A000"), ("0a", "0A"), ("1", "10000000")])
def test_equal_sequencers_after_padding(a: str, b: str) -> None:
    assert compare(a, b) == 0


@given(
    st.text("0123456789ABCDEFabcdef", min_size=1, max_size=24),
    st.text("0123456789ABCDEF", min_size=1, max_size=24),
)
def test_order_key_comparison_equals_the_aws_rule(a: str, b: str) -> None:
    assert compare(a, b) == aws_compare(a, b)


def test_times_are_normalised_to_utc() -> None:
    tokyo = datetime.fromisoformat("2017-08-20T18:15:02.113456+09:00")
    assert iso_utc_millis(tokyo) == "2017-08-20T09:15:02.113Z"
    assert order_key_for_time(tokyo) == "#2017-08-20T09:15:02.113456Z"
    # Every time-ordered key sorts before every sequencer-ordered key.
    assert order_key_for_time(datetime(9999, 12, 31, tzinfo=UTC)) < order_key_for_sequencer("0")


def test_the_longest_key_and_size_are_accepted() -> None:
    event = only(parse_message(body(record(key="U_" + "x" * 1022, size=10**18 - 1))))
    assert len(event.key) == 1024
    assert event.size == 10**18 - 1


def test_the_event_time_is_kept_in_utc() -> None:
    event = only(parse_message(body({**record(), "eventTime": "0001-01-01T01:00:00+01:00"})))
    assert event.event_time == datetime(1, 1, 1, tzinfo=UTC)
    assert event.event_time.utcoffset() is not None
    # Four year digits even below year 1000, so every time-ordered key has the same width.
    assert event.order_key == "#0001-01-01T00:00:00.000000Z"
    assert event.upload_date == "0001-01-01T00:00:00.000Z"


def test_an_event_without_sequencer_orders_by_time() -> None:
    event = only(parse_message(body(record())))
    assert event.sequencer is None
    assert event.order_key == "#2017-08-20T09:15:02.113000Z"
