"""The local stack builds what the CDK stack deploys: same redrive policy, same S3 event subscriptions."""

from __future__ import annotations

import re

from infra import ingest
from local_stack import stack


def test_dead_letter_after_as_many_receives_as_deployed():
    assert stack.MAX_RECEIVE_COUNT == ingest.MAX_RECEIVE_COUNT


def cdk_event_name(s3_event: str) -> str:
    """`s3:ObjectCreated:*` is what CDK calls `EventType.OBJECT_CREATED`."""
    _, family, detail = s3_event.split(":")
    assert detail == "*"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", family).upper()


def test_the_queue_gets_the_events_the_deployed_queue_gets():
    deployed = {event.name for event in ingest.OBJECT_EVENTS}
    assert {cdk_event_name(event) for event in stack.NOTIFICATION_EVENTS} == deployed
