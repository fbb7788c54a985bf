"""`python -m local_stack.serve` (`make serve`): the local stack in the foreground.

Binds 127.0.0.1 only, on `API_PORT` (default 8000), `AWS_PORT` (default 5000) and, with `userAccess`,
`WEB_PORT` (default 8080, the page); 0 picks a free port.
The configuration is the CDK app's, from the repository's `cdk.json` context (shard counts, hot users,
the Z-order index, the key pattern); the stack logs the shard placement it uses and names it in the READY
line (`indexLayout`).
`KEY_LAYOUT`, `TOMBSTONE_TTL_DAYS`, `DOWNLOAD_URL_EXPIRY_SECONDS` and `POWERTOOLS_LOG_LEVEL` reach the
handlers as they would in Lambda.
The table lives in DynamoDB Local (installed by `make setup`, run on Java), which serve starts and stops
with the stack; where Java is missing it falls back to moto's DynamoDB and says so, since moto's queries
slow down past a few thousand files. `TABLE_ENGINE=moto` or `TABLE_ENGINE=dynamodb-local` chooses
(the latter fails rather than fall back). `AWS_ENDPOINT_URL_DYNAMODB` puts the table in a DynamoDB
engine already running instead, e.g. DynamoDB Local started with -inMemory. S3, SQS, Secrets Manager and
Cognito are moto's, whose server runs in a process of its own; the indexer runs as two execution
environments at once, each a process polling the queue (`local_stack.stack.SEPARATE_PROCESSES`). Stopping
serve stops them; they also stop by themselves when serve is gone.
Once everything answers it prints exactly one line to stdout, `READY {json}`, naming the API URL, the AWS
endpoint, the bucket, the queues, the table and the region; everything else (its own progress and the
handlers' logs) goes to stderr, so a script can read stdout without filtering. SIGINT or SIGTERM stops it
cleanly with exit status 0.

Under `make serve`, the exit status is make's: GNU make passes SIGTERM on to this process, waits for it
to stop, then kills itself with the same signal (status 143; 130 for Ctrl-C). A script that needs
status 0 runs `.venv/bin/python -m local_stack.serve` after `make setup`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from types import FrameType

from local_stack.stack import (
    AUTO,
    SEPARATE_PROCESSES,
    TABLE_ENGINES,
    LocalFileSearch,
    PortUnavailableError,
    StackStartError,
)

logger = logging.getLogger("local_stack.serve")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class InvalidPortError(ValueError):
    """A port variable that is not a port number."""


def port_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise InvalidPortError(f"{name}={raw!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise InvalidPortError(f"{name}={port} is outside 0-65535")
    return port


def main() -> int:
    # The READY line is the only thing on stdout; the handlers' Powertools loggers (created when the stack
    # imports them) and anything else that prints go to stderr.
    ready_stream = sys.stdout
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("local_stack").setLevel(logging.INFO)

    try:
        api_port = port_from_env("API_PORT", 8000)
        aws_port = port_from_env("AWS_PORT", 5000)
        web_port = port_from_env("WEB_PORT", 8080)
    except InvalidPortError as error:
        print(f"serve: {error}", file=sys.stderr)
        return EXIT_USAGE
    table_engine = os.environ.get("TABLE_ENGINE", "").strip() or AUTO
    if table_engine not in TABLE_ENGINES:
        choices = ", ".join(TABLE_ENGINES)
        print(f"serve: TABLE_ENGINE={table_engine!r} is not one of {choices}", file=sys.stderr)
        return EXIT_USAGE

    stopping = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        logger.info("%s received, stopping", signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    try:
        stack = LocalFileSearch(
            aws_port=aws_port,
            api_port=api_port,
            web_port=web_port,
            # The handlers' own settings pass through, as a deployer would set them on the functions.
            key_pattern=os.environ.get("KEY_LAYOUT") or None,
            log_level=os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO"),
            # A DynamoDB engine already running for the table; else the engine TABLE_ENGINE names.
            dynamodb_endpoint=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or None,
            table_engine=table_engine,
            **SEPARATE_PROCESSES,
        ).start()
    except PortUnavailableError as error:
        variable = {"AWS": "AWS_PORT", "API": "API_PORT"}.get(error.role, "WEB_PORT")
        print(
            f"serve: {error}; stop what uses it or choose another port, e.g. {variable}=0 for a free one",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except StackStartError as error:
        print(f"serve: {error}", file=sys.stderr)
        return EXIT_FAILED
    with stack:
        if stopping.is_set():  # a signal during start-up: never claim to be ready
            return EXIT_OK
        print(f"READY {json.dumps(stack.describe())}", file=ready_stream, flush=True)
        logger.info("ready: API %s, AWS endpoint %s; Ctrl-C stops", stack.api_url, stack.aws_endpoint)
        ready = stack.describe()
        if ready.get("webUrl"):
            logger.info(
                "the page: %s; sign in as %s / %s, or the admin %s / %s (new passwords at each start)",
                ready["webUrl"],
                ready["demoUser"],
                ready["demoPassword"],
                ready["adminUser"],
                ready["adminPassword"],
            )
        # A timed wait lets the main thread run the signal handlers promptly.
        while not stopping.wait(0.5):
            pass
    logger.info("stopped")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
