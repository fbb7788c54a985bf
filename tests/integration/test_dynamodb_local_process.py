"""DynamoDB Local stops with the process that started it, even one killed with SIGKILL: no Java is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTER = """
import time
from local_stack.dynamodb_local import DynamoDBLocalProcess

process = DynamoDBLocalProcess().start()
print(process._process.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has stopped; only its exit status waits to be read


@pytest.mark.dynamodb_local
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_starter_leaves_no_dynamodb_local_behind() -> None:
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    java = 0
    try:
        assert starter.stdout is not None
        java = int(starter.stdout.readline())
        assert _alive(java)
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait(timeout=60)
        deadline = time.monotonic() + 60
        while _alive(java) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(java), f"DynamoDB Local (pid {java}) outlived the process that started it"
    finally:
        starter.kill()
        if java and _alive(java):
            os.kill(java, signal.SIGKILL)
