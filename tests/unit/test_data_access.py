"""Only the data access calls AWS: in the functions' code, every call of an AWS operation (a DynamoDB, S3,
SQS, Cognito, Step Functions or CloudWatch client's or table's method) is made in `file_index/store/` or
in the search function's own data access (`search/dal.py` for DynamoDB and S3, `search/directory.py` for
the user pool), so the layers of docs/architecture.md hold by
what the code calls, not only by what it imports."""

from __future__ import annotations

import ast
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
DATA_ACCESS = ("file_index/store/", "search/dal.py", "search/directory.py")
SERVICES = ("dynamodb", "s3", "sqs", "cognito-idp", "stepfunctions", "cloudwatch")
# What a client or a table resource offers beside its operations.
CLIENT_METHODS = {"get_paginator", "get_waiter", "generate_presigned_url", "generate_presigned_post"}


def aws_methods() -> frozenset[str]:
    session = botocore.session.get_session()
    names = set(CLIENT_METHODS)
    for service in SERVICES:
        names.update(xform_name(name) for name in session.get_service_model(service).operation_names)
    return frozenset(names)


def aws_calls(source: str, methods: frozenset[str]) -> list[tuple[int, str]]:
    """(line, method) of each call of an attribute named as an AWS operation."""
    return [
        (node.lineno, node.func.attr)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
    ]


def outside_data_access(root: Path) -> list[str]:
    methods = aws_methods()
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(DATA_ACCESS):
            continue
        found += [f"{relative}:{line}: .{method}()" for line, method in aws_calls(path.read_text(), methods)]
    return found


def test_only_the_data_access_calls_aws() -> None:
    assert outside_data_access(FUNCTIONS) == []


@pytest.mark.parametrize(
    ("line", "method"),
    [
        ("response = self.client.query(**request)", "query"),
        ("table.get_item(Key={'objectKey': key})", "get_item"),
        ("s3.head_object(Bucket=bucket, Key=key)", "head_object"),
        ("client.get_paginator('scan')", "get_paginator"),
        ("cognito.admin_get_user(UserPoolId=pool, Username=name)", "admin_get_user"),
    ],
)
def test_a_call_outside_the_data_access_is_found(tmp_path: Path, line: str, method: str) -> None:
    module = tmp_path / "file_index" / "read" / "reader.py"
    module.parent.mkdir(parents=True)
    arguments = "client, table, s3, cognito, request, key, bucket, pool, name"
    module.write_text(f"def read({arguments}):\n    {line}\n")
    (tmp_path / "file_index" / "store").mkdir()
    (tmp_path / "file_index" / "store" / "queries.py").write_text(f"def read(client):\n    {line}\n")
    assert outside_data_access(tmp_path) == [f"file_index/read/reader.py:2: .{method}()"]
