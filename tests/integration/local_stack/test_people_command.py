"""`python -m local_stack.people`: a person added to the local pool signs in at once with the password it
prints (moto sends no mail, so `admin-create-user` alone leaves them unable to), an admin in the group."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError

from local_stack import people
from local_stack.cognito import create_user_pool

REGION = "us-east-1"


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch, unused_port: int) -> Iterator[tuple[str, Any, Any]]:
    """A moto server of its own process (its pools are nobody else's), with the local stack's pool."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    endpoint = f"http://127.0.0.1:{unused_port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(unused_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        cognito = boto3.client(
            "cognito-idp",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        for _ in range(600):  # up to a minute on a busy machine
            try:
                cognito.list_user_pools(MaxResults=1)
                break
            except (BotoCoreError, ClientError):
                time.sleep(0.1)
        made = create_user_pool(cognito, endpoint=endpoint, region=REGION, admin_group="admins")
        yield endpoint, cognito, made
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def sign_in(cognito: Any, made: Any, username: str, password: str) -> dict[str, Any]:
    answer: dict[str, Any] = cognito.initiate_auth(
        ClientId=made.client_id,
        AuthFlow="USER_PASSWORD_AUTH",
        AuthParameters={"USERNAME": username, "PASSWORD": password},
    )
    return answer


def test_a_person_added_signs_in_with_the_password_printed(
    pool: tuple[str, Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint, cognito, made = pool
    assert people.main(["--aws-endpoint", endpoint, "alice", "--name", "Alice Archer"]) == 0
    printed = capsys.readouterr().out
    password = re.fullmatch(r"alice signs in with password (\S+)\n", printed)
    assert password is not None, printed
    assert "AuthenticationResult" in sign_in(cognito, made, "alice", password[1])
    user = cognito.admin_get_user(UserPoolId=made.pool_id, Username="alice")
    assert user["UserStatus"] == "CONFIRMED"
    assert {"Name": "name", "Value": "Alice Archer"} in user["UserAttributes"]
    groups = cognito.admin_list_groups_for_user(UserPoolId=made.pool_id, Username="alice")["Groups"]
    assert groups == []


def test_an_admin_is_in_the_group_and_a_password_may_be_given(
    pool: tuple[str, Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint, cognito, made = pool
    assert people.main(["--aws-endpoint", endpoint, "bob", "--admin", "--password", "Bob-secret-2026!"]) == 0
    assert capsys.readouterr().out == "bob signs in with password Bob-secret-2026!, in the admins group\n"
    assert "AuthenticationResult" in sign_in(cognito, made, "bob", "Bob-secret-2026!")
    groups = cognito.admin_list_groups_for_user(UserPoolId=made.pool_id, Username="bob")["Groups"]
    assert [group["GroupName"] for group in groups] == ["admins"]


def test_a_name_taken_or_no_stack_there_is_one_line_and_status_1(
    pool: tuple[str, Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoint, _, _ = pool
    assert people.main(["--aws-endpoint", endpoint, "demo"]) == 1
    assert capsys.readouterr().err == "local_stack.people: the pool already has a person named 'demo'\n"
    assert people.main(["--aws-endpoint", "http://127.0.0.1:9", "carol"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("local_stack.people: no local stack answered at http://127.0.0.1:9: ")
    assert error.count("\n") == 1
