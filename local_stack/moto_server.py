"""moto's server as the local stack runs it: in a thread of the stack's process, or in a process of its own.

Either way the server carries the stack's changes to moto (`moto_changes()`):

- `local_stack.moto_sqs.fast_queues`: SQS paths that cost the same at any backlog.
- The S3 event clock: moto stamps each S3 event with the wall clock; `POST /_local_stack/event-clock` with
  `{"offsetSeconds": s}` shifts the stamps of the requests that follow by `s` seconds (`null` for none) and
  answers the offset it replaced. The stack's `s3_event_clock` talks to it, so the clock moves wherever
  the server runs. (No bucket can be named `_local_stack`: the path cannot be an S3 request.)
- Presigned URLs expire: S3 refuses a SigV4 presigned request after its `X-Amz-Date` plus `X-Amz-Expires`
  (403 `AccessDenied`, "Request has expired"); moto serves it whenever it comes, so the server answers that
  refusal itself (`with_presigned_expiry`), and a shared link or a download link expires locally as on AWS.
- DynamoDB requests one at a time: moto's DynamoDB checks a write's condition and writes without a lock,
  so two requests at once could both pass (4 of 600 compare-and-set updates from 6 threads were lost), and
  a Query walking a table while another request adds an item fails with a 500. DynamoDB is atomic per item;
  the indexer's ordering of a key's events relies on it.
- A write to S3 and its event one at a time: moto stores an object, then stamps its event with the time
  and sends it, so of two writes to one key the first stored could carry the later time, and the index
  (which orders a key's events by time, moto having no sequencers) kept the one S3 no longer held.
- Request dispatch without a directory listing: moto's server lists its own package folder (a `stat` per
  service, about 250) twice per request to tell a service name from a host name; the list never changes
  while it runs, so it is read once.

`python -m local_stack.moto_server --fd N --parent PID` serves on the listening socket it inherits as
descriptor N (the stack binds it, so a taken port fails in the stack with the port's name), until SIGTERM
or until the process PID (the stack's) is gone: a stack killed outright leaves no server behind.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from unittest import mock
from urllib.parse import parse_qs

from moto import backends
from moto.dynamodb.responses import DynamoHandler
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.s3.models import S3Backend
from werkzeug.serving import BaseWSGIServer, make_server

from local_stack.moto_sqs import fast_queues

EVENT_CLOCK_PATH = "/_local_stack/event-clock"
# moto stamps each S3 event with its own clock, read through this function at the time of the request.
EVENT_CLOCK_TARGET = "moto.s3.notifications.iso_8601_datetime_with_milliseconds"
PARENT_CHECK_SECONDS = 1.0

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class EventClock:
    """The clock S3 events are stamped with: the wall clock, shifted by an offset the stack sets."""

    def __init__(self) -> None:
        self.offset: dt.timedelta | None = None

    def stamp(self, value: dt.datetime | None = None) -> str:
        """moto's `iso_8601_datetime_with_milliseconds`, reading the shifted clock when given no time."""
        moment = value or dt.datetime.now(dt.UTC) + (self.offset or dt.timedelta())
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _offset_seconds(offset: dt.timedelta | None) -> float | None:
    return None if offset is None else offset.total_seconds()


def with_event_clock(app: WsgiApp, clock: EventClock) -> WsgiApp:
    """`app` with the event clock's control path in front of it."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != EVENT_CLOCK_PATH:
            return app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "POST":
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain")])
            return [b'POST {"offsetSeconds": seconds or null}\n']
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            seconds = json.loads(environ["wsgi.input"].read(length))["offsetSeconds"]
            offset = None if seconds is None else dt.timedelta(seconds=float(seconds))
        except (ValueError, KeyError, TypeError) as error:
            start_response("400 Bad Request", [("Content-Type", "text/plain")])
            return [f'expected {{"offsetSeconds": seconds or null}}: {error}\n'.encode()]
        previous, clock.offset = clock.offset, offset
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"previousOffsetSeconds": _offset_seconds(previous)}).encode()]

    return serve


def expired_presigned_request(query: str, now: dt.datetime) -> str | None:
    """S3's refusal (XML) of a SigV4 presigned request whose time is up at `now`; None for any other."""
    fields = parse_qs(query)
    try:
        signed_at = dt.datetime.strptime(fields["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        expires = signed_at + dt.timedelta(seconds=int(fields["X-Amz-Expires"][0]))
    except (KeyError, ValueError):
        return None  # not presigned (or not readably so): moto answers as it would
    if now <= expires:
        return None
    iso = "%Y-%m-%dT%H:%M:%SZ"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
        f"<Message>Request has expired</Message><X-Amz-Expires>{fields['X-Amz-Expires'][0]}</X-Amz-Expires>"
        f"<Expires>{expires.strftime(iso)}</Expires><ServerTime>{now.strftime(iso)}</ServerTime></Error>"
    )


def with_presigned_expiry(app: WsgiApp) -> WsgiApp:
    """`app`, refusing presigned requests past their expiry as S3 does (moto does not)."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refusal = expired_presigned_request(environ.get("QUERY_STRING") or "", dt.datetime.now(dt.UTC))
        if refusal is None:
            return app(environ, start_response)
        start_response("403 Forbidden", [("Content-Type", "application/xml")])
        return [refusal.encode()]

    return serve


# The S3 writes that notify, under one lock: moto stores an object, then stamps and sends its event.
S3_WRITE_METHODS = ("put_object", "copy_object", "complete_multipart_upload", "delete_object")
S3_WRITES = threading.RLock()


@contextlib.contextmanager
def moto_changes(clock: EventClock) -> Iterator[None]:
    """The stack's changes to moto, in this process, for the life of the block."""
    modules = tuple(backends.list_of_moto_modules())
    with contextlib.ExitStack() as changes:
        changes.enter_context(fast_queues())
        changes.enter_context(
            mock.patch.object(DynamoHandler, "call_action", _one_at_a_time(DynamoHandler.call_action))
        )
        for name in S3_WRITE_METHODS:
            write = _one_at_a_time(getattr(S3Backend, name), S3_WRITES)
            changes.enter_context(mock.patch.object(S3Backend, name, write))
        changes.enter_context(mock.patch(EVENT_CLOCK_TARGET, clock.stamp))
        changes.enter_context(mock.patch.object(backends, "list_of_moto_modules", return_value=modules))
        yield


def _one_at_a_time(
    call: Callable[..., Any], lock: contextlib.AbstractContextManager[Any] | None = None
) -> Callable[..., Any]:
    """`call` under `lock` (one of its own unless given)."""
    held = lock if lock is not None else threading.RLock()

    def locked(*args: Any, **kwargs: Any) -> Any:
        with held:
            return call(*args, **kwargs)

    return locked


def make_moto_server(host: str, port: int, clock: EventClock, *, fd: int | None = None) -> BaseWSGIServer:
    """moto's threaded server with the event clock's path (on the listening socket `fd`, if given)."""
    app = with_event_clock(with_presigned_expiry(DomainDispatcherApplication(create_backend_app)), clock)
    return make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler, fd=fd)


def _exit_with_parent(server: BaseWSGIServer, parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(PARENT_CHECK_SECONDS)
    server.shutdown()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m local_stack.moto_server", description=__doc__.split("\n", maxsplit=1)[0]
    )
    parser.add_argument("--fd", type=int, required=True, help="the listening socket's file descriptor")
    parser.add_argument(
        "--parent", type=int, required=True, help="the stack's process: the server stops when it is gone"
    )
    args = parser.parse_args(argv)
    # One log line per request would drown the stack's own lines.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    clock = EventClock()
    with moto_changes(clock):
        # Werkzeug reads the bound address from the socket itself.
        server = make_moto_server("127.0.0.1", 0, clock, fd=args.fd)

        def stop(_signum: int, _frame: object) -> None:
            threading.Thread(target=server.shutdown, daemon=True).start()

        signal.signal(signal.SIGTERM, stop)
        # Given, not read here: the stack may be gone before this process has started.
        threading.Thread(target=_exit_with_parent, args=(server, args.parent), daemon=True).start()
        server.serve_forever()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
