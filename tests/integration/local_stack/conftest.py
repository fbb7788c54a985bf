"""Fixtures of the local stack tests: an in-process stack, and `python -m local_stack.serve` as a process.

The in-process stack is function-scoped because the shared autouse fixture resets the AWS environment
variables for every test, and the stack's handlers read theirs at cold start.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from local_stack.stack import LocalFileSearch

REPO_ROOT = Path(__file__).resolve().parents[3]
READY_TIMEOUT_S = 60.0
# Short enough that a failing message reaches the dead-letter queue within seconds.
VISIBILITY_TIMEOUT_S = 1
MAX_RECEIVE_COUNT = 3


@contextlib.contextmanager
def dead_letter_soon_stack(*, ready_timeout: float = 30.0, **options: Any) -> Iterator[LocalFileSearch]:
    """A stack on free ports whose failing messages reach the dead-letter queue within seconds, once the
    s3:TestEvent sent when the notifications were configured is settled; `options` go to the stack."""
    with LocalFileSearch(
        aws_port=0,
        api_port=0,
        visibility_timeout=VISIBILITY_TIMEOUT_S,
        max_receive_count=MAX_RECEIVE_COUNT,
        log_level="WARNING",
        **options,
    ) as stack:
        stack.wait_until_indexed(timeout=ready_timeout)
        yield stack


@pytest.fixture
def running_stack() -> Iterator[LocalFileSearch]:
    with dead_letter_soon_stack() as stack:
        yield stack


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SERVE_COMMAND = (sys.executable, "-m", "local_stack.serve")


class ServeProcess:
    """`python -m local_stack.serve` (or `command`) with stdout read line by line, stderr kept in a file."""

    def __init__(self, env: dict[str, str], command: Sequence[str] = SERVE_COMMAND) -> None:
        # A file, not a pipe: serve logs freely to stderr and nothing has to drain it while a test waits.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            list(command),
            cwd=REPO_ROOT,
            # The page's port too is any free one unless a test names it: serve's default is fixed (8080).
            env={**os.environ, "WEB_PORT": "0", **env},
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        assert self.process.stdout is not None
        self._stdout = self.process.stdout
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)

    def read_line(self, timeout: float) -> str | None:
        """The next stdout line, or None at end of output; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._selector.select(timeout=0.2):
                line = self._stdout.readline()
                return line.decode() if line else None
        pytest.fail(f"no output from serve within {timeout:.0f} s; stderr:\n{self.stderr()}")

    def wait_ready(self) -> dict[str, Any]:
        line = self.read_line(READY_TIMEOUT_S)
        if line is None:
            pytest.fail(f"serve exited ({self.process.wait(10)}) before READY; stderr:\n{self.stderr()}")
        assert line.startswith("READY "), f"first stdout line is not READY: {line!r}"
        ready: dict[str, Any] = json.loads(line.removeprefix("READY "))
        return ready

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 30.0) -> tuple[int, str]:
        """Send `signum`, wait for the exit; returns the exit status and the rest of stdout."""
        self.process.send_signal(signum)
        status = self.process.wait(timeout)  # stdout holds at most the READY line: no pipe can fill up
        return status, self._stdout.read().decode()

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._selector.close()
        self._stdout.close()
        self._stderr.close()


@contextlib.contextmanager
def moto_server_with(patch: contextlib.AbstractContextManager[Any]) -> Iterator[str]:
    """moto's server as the stack runs it (`moto_changes`), with `patch` applied too: its endpoint."""
    from local_stack.moto_server import EventClock, make_moto_server, moto_changes

    clock = EventClock()
    with moto_changes(clock), patch:
        server = make_moto_server("127.0.0.1", 0, clock)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()
            thread.join(30)


@contextlib.contextmanager
def serving() -> Iterator[dict[str, Any]]:
    """One `serve` process for a whole module (the `start_serve` fixture is per test): its READY object.

    It must stop with status 0 when the module is done.
    """
    with serving_process() as (_, ready):
        yield ready


@contextlib.contextmanager
def serving_process() -> Iterator[tuple[ServeProcess, dict[str, Any]]]:
    """`serving`, with the process too (its stderr is what a failing test reports)."""
    serve = ServeProcess({"API_PORT": "0", "AWS_PORT": "0", "POWERTOOLS_LOG_LEVEL": "WARNING"})
    try:
        yield serve, serve.wait_ready()
        assert serve.stop()[0] == 0, serve.stderr()
    finally:
        serve.close()


@pytest.fixture
def start_serve() -> Iterator[Any]:
    started: list[ServeProcess] = []

    def start(**env: str) -> ServeProcess:
        serve = ServeProcess(env)
        started.append(serve)
        return serve

    yield start
    for serve in started:
        serve.close()


@pytest.fixture(scope="module")
def module_aws_environment() -> Iterator[None]:
    """The shared reset of the AWS environment, for the whole module instead of each test.

    A stack lives through many tests here, and it owns the process's AWS environment while it runs (its
    endpoint, fake credentials); a per-test reset would remove the endpoint its handlers read when they
    first answer. Before the stack starts, the same guarantee as elsewhere: fake credentials, a fixed
    region, no profile or endpoint from the caller's shell.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }.items():
            patch.setenv(name, value)
        for name in [
            name for name in os.environ if name == "AWS_PROFILE" or name.startswith("AWS_ENDPOINT_URL")
        ]:
            patch.delenv(name)
        yield
