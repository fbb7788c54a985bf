"""The event source mapping's concurrency: several execution environments of a function, each a process.

In AWS the mapping runs several batches at once (up to the function's maximum concurrency), each in an
execution environment of its own that handles one invocation at a time. `ConcurrentEventSource` does the
same with `count` worker processes: each imports the function afresh (a cold start, with the environment
the stack set) and runs its own `SqsEventSourcePoller` on the queue. Processes, not threads: an execution
environment's module state (Powertools' batch processor, the cold start's clients) serves one invocation
at a time, and one interpreter lock would bound them all.

The pollers share a `BatchGate`, so the stack still counts the messages in flight across all of them and
disables them together. A worker stops when told to, or when the process that started it is gone. Workers
never wait on a condition another process signals: such a wait, cut short by its process's end, would
leave the others waiting for good.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

import boto3
from botocore.config import Config

from local_stack.event_source import BatchGate, SqsEventSourcePoller

logger = logging.getLogger(__name__)

STOP_TIMEOUT_S = 30.0
WATCH_SECONDS = 0.2


@dataclass(frozen=True)
class WorkerSettings:
    """What each worker needs to poll the queue and invoke its function."""

    handler: str  # `module.function`, as Lambda's handler setting
    service: str  # the function's Powertools service name
    function_name: str
    queue_url: str
    queue_arn: str
    region: str
    endpoint_url: str
    credential: str
    batch_size: int
    wait_seconds: int
    memory_mb: int
    log_level: int  # of the `local_stack` loggers (the poller's lines)


class ConcurrentEventSource:
    """`count` worker processes, each an execution environment with its own poller; `start()` to begin."""

    def __init__(self, settings: WorkerSettings, *, count: int) -> None:
        if count < 1:
            raise ValueError(f"count must be 1 or more, not {count}")
        # Spawned, not forked: a fork copies this process's threads' locks in whatever state they are.
        context = multiprocessing.get_context("spawn")
        self._gate = BatchGate.shared(context)
        # A flag in shared memory, read without a lock: see the module's docstring.
        self._stopping = context.Value("b", 0, lock=False)
        self._processes: list[BaseProcess] = [
            context.Process(
                target=_work,
                args=(settings, self._gate, self._stopping, os.getpid()),
                name=f"{settings.function_name}-{index}",
                daemon=True,
            )
            for index in range(count)
        ]

    @property
    def in_flight(self) -> int:
        """Messages received by any worker and not yet deleted or given back to the queue."""
        return self._gate.in_flight

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes if process.pid is not None]

    def start(self) -> ConcurrentEventSource:
        for process in self._processes:
            process.start()
        return self

    def disable(self) -> None:
        """No worker starts a batch from now on; returns once none is running."""
        self._gate.disable()

    def enable(self) -> None:
        self._gate.enable()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Let every worker finish its batch and exit; end the ones that do not within `timeout`."""
        self._stopping.value = 1
        for process in self._processes:
            if process.pid is not None:
                process.join(timeout)
        for process in self._processes:
            if process.is_alive():
                logger.warning("%s did not stop within %.0f s; ending it", process.name, timeout)
                process.kill()
                process.join()


def _work(settings: WorkerSettings, gate: BatchGate, stop_flag: Any, parent: int) -> None:
    """A worker's life: import the function, then poll until told to stop."""
    # The function logs to stdout, as in Lambda; here stdout may be a READY line's stream: use stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("local_stack").setLevel(settings.log_level)
    stopping = threading.Event()
    threading.Thread(target=_watch, args=(stop_flag, parent, stopping), name="stop-watch").start()
    from local_stack.stack import load_handler  # the stack module imports this one

    try:
        sqs = boto3.client(
            "sqs",
            endpoint_url=settings.endpoint_url,
            region_name=settings.region,
            aws_access_key_id=settings.credential,
            aws_secret_access_key=settings.credential,
            aws_session_token=settings.credential,
            config=Config(retries={"mode": "standard"}),
        )
        SqsEventSourcePoller(
            sqs=sqs,
            queue_url=settings.queue_url,
            queue_arn=settings.queue_arn,
            region=settings.region,
            handler=load_handler(settings.handler, service=settings.service),
            function_name=settings.function_name,
            batch_size=settings.batch_size,
            wait_seconds=settings.wait_seconds,
            memory_mb=settings.memory_mb,
            gate=gate,
        ).run(stopping)
    finally:
        stopping.set()  # ends the watch, so that the process can end


def _watch(stop_flag: Any, parent: int, stopping: threading.Event) -> None:
    """Set `stopping` once the stack says stop, or once `parent` (which started this process) is gone.

    `parent` is given rather than read here: it may be gone before this process has started.
    """
    while not stop_flag.value and os.getppid() == parent and not stopping.wait(WATCH_SECONDS):
        pass
    stopping.set()
