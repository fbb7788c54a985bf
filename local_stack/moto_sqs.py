"""moto's SQS, made to cost the same whatever the queue holds, for the local stack's event queue.

moto 5.2's SQS reads its whole queue for each message: an S3 notification goes through `send_message`,
which computes every queue attribute (three passes over the queue, reading the clock for each message);
each received message checks its retention period the same way; each delete walks the queue twice. With
a backlog of thousands of events the emulator spends its time there, and indexing falls behind further
the longer the backlog grows.

`fast_queues()` replaces those paths, in this process and for as long as the block lasts, with ones that
do the same thing at the cost of the messages they touch:

- S3's notification puts its message on the queue directly (no attribute computation): the same message
  body, id, timestamps and queue wake-up as `send_message` makes for a standard queue. S3 notifies only
  standard queues, so FIFO rules never applied to it.
- A receive walks the visible messages lazily and stops at its batch, reading the clock once.
- The retention check reads the queue's retention period instead of all its attributes.
- A delete finds the message once and removes it in place.
- The approximate counts read the clock once per count.

moto's server answers each request on a thread of its own and its SQS takes no lock of its own, which
one poller never noticed; several pollers receive and delete at once. So a receive (from its first look
at the queue to marking what it took) and a delete run under the queue's own lock, the one moto's
`add_message` and long poll already use (a long poll releases it while it waits): two deletes cannot
remove each other's messages, nor two receives hand out the same message.

Everything else (visibility timeouts, receive counts, the redrive policy to the dead-letter queue, the
attributes GetQueueAttributes answers) is moto's own code.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any
from unittest import mock

from moto.core.utils import unix_time, unix_time_millis
from moto.moto_api._internal import mock_random as random
from moto.s3 import notifications
from moto.sqs import models
from moto.sqs.exceptions import ReceiptHandleIsInvalid


class _VisibleMessages:
    """A queue's visible, undelayed messages, read lazily with one clock reading."""

    def __init__(self, messages: list[models.Message]) -> None:
        self._messages = messages
        self._now = unix_time_millis()

    def __iter__(self) -> Iterator[models.Message]:
        now = self._now
        # A copy of the list (not of the messages): a receive moves messages to the DLQ while it walks.
        return (m for m in list(self._messages) if now > m.visible_at and now >= m.delayed_until)

    def __bool__(self) -> bool:
        return any(True for _ in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _messages(queue: models.Queue) -> _VisibleMessages:
    return _VisibleMessages(queue._messages)


def _approximate_not_visible(queue: models.Queue) -> int:
    now = unix_time_millis()
    # A copy of the list (one step under the interpreter lock): a delete may change it meanwhile.
    return sum(1 for m in list(queue._messages) if now <= m.visible_at)


def _approximate_delayed(queue: models.Queue) -> int:
    now = unix_time_millis()
    return sum(1 for m in list(queue._messages) if now < m.delayed_until)


def _delete_message(queue: models.Queue, receipt_handle: str) -> None:
    with queue._messages_lock:
        if receipt_handle in queue.deleted_messages:
            return  # deleting twice is fine, as in moto and SQS
        for index, message in enumerate(queue._messages):
            if message.had_receipt_handle(receipt_handle):
                del queue._messages[index]
                queue.pending_messages.discard(message)
                queue.deleted_messages.update(message.all_receipt_handles)  # type: ignore[arg-type]
                return
    raise ReceiptHandleIsInvalid()


def _receive_message(backend: models.SQSBackend, queue_name: str, *args: Any, **kwargs: Any) -> Any:
    with backend.get_queue(queue_name)._messages_lock:
        return _MOTO_RECEIVE(backend, queue_name, *args, **kwargs)


def _is_retained(backend: models.SQSBackend, queue_name: str, message: models.Message) -> bool:
    retention_period = int(backend.get_queue(queue_name).message_retention_period)  # type: ignore[attr-defined]
    return bool(retention_period + message.sent_timestamp / 1000 > unix_time())  # type: ignore[operator]


def _send_notification(account_id: str, event_body: Any, queue_name: str, region_name: str) -> None:
    try:
        queue = models.sqs_backends[account_id][region_name].get_queue(queue_name)
    except Exception:  # as moto: a notification to a missing queue is dropped)
        return
    if queue.fifo_queue:  # S3 refuses FIFO targets; keep moto's own path for anything unusual
        _MOTO_SEND(account_id, event_body, queue_name, region_name)
        return
    message = models.Message(str(random.uuid4()), json.dumps(event_body), None)
    message.mark_sent(delay_seconds=int(queue.delay_seconds))  # type: ignore[attr-defined]
    queue.add_message(message)


_MOTO_SEND = notifications._send_sqs_message
_MOTO_RECEIVE = models.SQSBackend.receive_message


@contextlib.contextmanager
def fast_queues() -> Iterator[None]:
    """Patch moto's SQS (and S3's notifications to it) in this process for the life of the block."""
    with contextlib.ExitStack() as patches:
        for target, attribute, value in (
            (models.Queue, "messages", property(_messages)),
            (models.Queue, "approximate_number_of_messages_not_visible", property(_approximate_not_visible)),
            (models.Queue, "approximate_number_of_messages_delayed", property(_approximate_delayed)),
            (models.Queue, "delete_message", _delete_message),
            (models.SQSBackend, "receive_message", _receive_message),
            (models.SQSBackend, "is_message_valid_based_on_retention_period", _is_retained),
            (notifications, "_send_sqs_message", _send_notification),
        ):
            patches.enter_context(mock.patch.object(target, attribute, value))
        yield
