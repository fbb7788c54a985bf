"""Parsing EventBridge events of S3: AWS's documented events, moto's variant, and bad input."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from file_index.rules.objects import ObjectEvent, order_key_for_sequencer
from indexer.events import MalformedMessageError, eventbridge_key, parse_message

# AWS's examples, as the S3 user guide documents them ("Using EventBridge", event message structure).
AWS_OBJECT_CREATED: dict[str, Any] = {
    "version": "0",
    "id": "17793124-05d4-b198-2fde-7ededc63b103",
    "detail-type": "Object Created",
    "source": "aws.s3",
    "account": "111122223333",
    "time": "2021-11-12T00:00:00Z",
    "region": "ca-central-1",
    "resources": ["arn:aws:s3:::amzn-s3-demo-bucket1"],
    "detail": {
        "version": "0",
        "bucket": {"name": "amzn-s3-demo-bucket1"},
        "object": {
            "key": "example-key",
            "size": 5,
            "etag": "b1946ac92492d2347c6235b4d2611184",
            "version-id": "IYV3p45BhZA5.GMQWS.NsRAhXAvDPrDo",
            "sequencer": "617f08299329d189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "PutObject",
    },
}
AWS_OBJECT_DELETED: dict[str, Any] = {
    "version": "0",
    "id": "2ee9cc15-d022-99ea-1fb8-1b1bac4850f9",
    "detail-type": "Object Deleted",
    "source": "aws.s3",
    "account": "111122223333",
    "time": "2021-11-12T00:00:00Z",
    "region": "ca-central-1",
    "resources": ["arn:aws:s3:::amzn-s3-demo-bucket1"],
    "detail": {
        "version": "0",
        "bucket": {"name": "amzn-s3-demo-bucket1"},
        "object": {
            "key": "example-key",
            "etag": "d41d8cd98f00b204e9800998ecf8427e",
            "version-id": "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF",
            "sequencer": "617f08299329d189",
        },
        "request-id": "0BH729840619AG5K",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "DeleteObject",
        "deletion-type": "Delete Marker Created",
    },
}
# What moto 5.2.5 delivers for an upload to a bucket without versioning (recorded from a run).
MOTO_OBJECT_CREATED: dict[str, Any] = {
    "version": "0",
    "id": "17793124-05d4-b198-2fde-7ededc63b103",
    "detail-type": "Object Created",
    "source": "aws.s3",
    "account": "123456789012",
    "time": "2026-11-22T19:15:02Z",
    "region": "us-east-1",
    "resources": ["arn:aws:s3:::bkt-plain"],
    "detail": {
        "version": "0",
        "bucket": {"name": "bkt-plain"},
        "object": {
            "key": "U1_my file+x.txt",
            "size": 5,
            "eTag": "5d41402abc4b2a76b9719d911017c592",
            "version-id": "null",
            "sequencer": "617f08299329d189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "ObjectCreated",
    },
}


def changed(event: dict[str, Any], **detail: Any) -> dict[str, Any]:
    """A copy of `event` with detail fields replaced (None removes one); `object` merges."""
    result = copy.deepcopy(event)
    for name, value in detail.items():
        name = name.replace("_", "-")
        if name == "object":
            result["detail"]["object"].update(value)
        elif value is None:
            result["detail"].pop(name, None)
        else:
            result["detail"][name] = value
    return result


def parse_one(event: dict[str, Any]) -> ObjectEvent:
    events = parse_message(json.dumps(event))
    assert len(events) == 1
    return events[0]


def test_aws_object_created() -> None:
    assert parse_one(AWS_OBJECT_CREATED) == ObjectEvent(
        event_name="ObjectCreated:Put",
        bucket="amzn-s3-demo-bucket1",
        key="example-key",
        event_time=datetime(2021, 11, 12, tzinfo=UTC),
        sequencer="617f08299329d189",
        size=5,
        e_tag="b1946ac92492d2347c6235b4d2611184",
        version_id="IYV3p45BhZA5.GMQWS.NsRAhXAvDPrDo",
        upload_user=None,  # "example-key" names no user in the default placement
        file_id="example-key",
        no_user_reason=parse_one(AWS_OBJECT_CREATED).no_user_reason,
    )


def test_aws_object_deleted_with_a_delete_marker_hides_the_object() -> None:
    event = parse_one(AWS_OBJECT_DELETED)
    assert (event.event_name, event.version_id, event.size) == (
        "ObjectRemoved:DeleteMarkerCreated",
        "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF",
        None,
    )
    assert event.is_removal
    assert not event.removes_one_version


@pytest.mark.parametrize(
    ("reason", "deletion_type", "name"),
    [
        ("DeleteObject", "Permanently Deleted", "ObjectRemoved:Delete"),
        ("DeleteObject", "Delete Marker Created", "ObjectRemoved:DeleteMarkerCreated"),
        ("Lifecycle Expiration", "Permanently Deleted", "LifecycleExpiration:Delete"),
        ("Lifecycle Expiration", "Delete Marker Created", "LifecycleExpiration:DeleteMarkerCreated"),
    ],
)
def test_deletes_keep_the_marker_and_permanent_distinction(
    reason: str, deletion_type: str, name: str
) -> None:
    event = parse_one(changed(AWS_OBJECT_DELETED, reason=reason, deletion_type=deletion_type))
    assert event.event_name == name
    assert event.removes_one_version is name.endswith(":Delete")


@pytest.mark.parametrize(
    ("reason", "name"),
    [
        ("PutObject", "ObjectCreated:Put"),
        ("POST Object", "ObjectCreated:Post"),
        ("CopyObject", "ObjectCreated:Copy"),
        ("CompleteMultipartUpload", "ObjectCreated:CompleteMultipartUpload"),
        (None, "ObjectCreated:Put"),
    ],
)
def test_create_reasons_become_s3_event_names(reason: str | None, name: str) -> None:
    assert parse_one(changed(AWS_OBJECT_CREATED, reason=reason)).event_name == name


def test_both_shapes_order_by_the_same_sequencer_rule() -> None:
    event = parse_one(changed(AWS_OBJECT_CREATED, object={"sequencer": "0055aed6dcd9028"}))
    assert event.order_key == order_key_for_sequencer("0055AED6DCD90280")


@pytest.mark.parametrize(
    "detail_type",
    ["Object Restore Completed", "Object ACL Updated", "Object Storage Class Changed"],
)
def test_other_s3_detail_types_change_no_object(detail_type: str) -> None:
    assert parse_message(json.dumps({**AWS_OBJECT_CREATED, "detail-type": detail_type})) == []


@pytest.mark.parametrize(
    ("detail_type", "name"),
    [("Object Tags Added", "ObjectTagging:Put"), ("Object Tags Deleted", "ObjectTagging:Delete")],
)
def test_tag_changes_are_tagging_events(detail_type: str, name: str) -> None:
    """Applied only where the deployment enriches tags (file_index.store.enrich); they change no object."""
    event = parse_one({**AWS_OBJECT_CREATED, "detail-type": detail_type})
    assert event.event_name == name
    assert event.is_tagging
    assert not event.is_removal
    assert event.size is None


def test_keys_are_decoded_in_one_place() -> None:
    # AWS's shape: decoded as an S3 notification's key would be (unverified against a real account).
    assert eventbridge_key("my+file%2B1.txt") == "my file+1.txt"
    assert eventbridge_key("USER001%2Freports%2F%E6%97%A5.pdf") == "USER001/reports/日.pdf"
    # moto's shape: as it is.
    assert eventbridge_key("U1_my file+x.txt", emulated=True) == "U1_my file+x.txt"
    assert parse_one(changed(AWS_OBJECT_CREATED, object={"key": "USER001_a+b.txt"})).key == "USER001_a b.txt"


def test_moto_shape_is_ordered_by_time_and_null_is_no_version() -> None:
    event = parse_one(MOTO_OBJECT_CREATED)
    assert (event.key, event.e_tag, event.version_id, event.size) == (
        "U1_my file+x.txt",
        "5d41402abc4b2a76b9719d911017c592",
        None,
        5,
    )
    # moto's sequencer is one constant for every event: kept, every later event of a key would be stale.
    assert event.sequencer is None
    assert event.order_key.startswith("#2026-11-22T19:15:02")


def test_moto_shape_delete_removes_the_object() -> None:
    deleted = {**MOTO_OBJECT_CREATED, "detail-type": "Object Deleted"}
    event = parse_one(changed(deleted, reason="ObjectRemoved"))
    assert (event.event_name, event.version_id, event.size) == ("ObjectRemoved:Delete", None, None)
    assert event.is_removal
    assert not event.removes_one_version


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({**AWS_OBJECT_CREATED, "source": "aws.ec2"}, "source 'aws.ec2', not 'aws.s3'"),
        ({**AWS_OBJECT_CREATED, "detail": "x"}, "no detail.bucket / detail.object"),
        (changed(AWS_OBJECT_CREATED, bucket={}), "name is missing"),
        (changed(AWS_OBJECT_DELETED, deletion_type=None), "deletion-type None"),
        (changed(AWS_OBJECT_DELETED, deletion_type="Shredded"), "deletion-type 'Shredded'"),
        (changed(AWS_OBJECT_CREATED, object={"sequencer": "xyz"}), "not 1-64 hex digits"),
        (changed(AWS_OBJECT_CREATED, object={"size": "5"}), "no valid object size"),
        (changed(AWS_OBJECT_CREATED, object={"key": ""}), "key is missing"),
        (changed(AWS_OBJECT_CREATED, object={"key": "U_" + "x" * 1023}), "longer than S3's 1024 bytes"),
        ({**AWS_OBJECT_CREATED, "time": "yesterday"}, "time 'yesterday' is not an ISO-8601"),
        ({**AWS_OBJECT_CREATED, "detail-type": 7}, "detail-type is missing or not a string"),
    ],
)
def test_bad_events_fail_with_the_reason(event: dict[str, Any], reason: str) -> None:
    with pytest.raises(MalformedMessageError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_message(json.dumps(event))
