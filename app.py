"""`cdk synth` / `cdk deploy` entry point: the S3 File Search stack, checked by cdk-nag at every synth."""

import sys
from pathlib import Path

import aws_cdk as cdk

# The table schema lives in the Lambda asset root, functions/; the venv's .pth file normally puts it on the
# path, this keeps `python3 app.py` working from an environment set up without it.
sys.path.append(str(Path(__file__).resolve().parent / "functions"))

from infra.config import StackConfig
from infra.nag import add_security_checks
from infra.stack import FileSearchStack

app = cdk.App()
FileSearchStack(
    app,
    "S3FileSearch",
    config=StackConfig.from_context(app.node.try_get_context),
    description="S3 File Search: S3 events indexed into DynamoDB, searched through API Gateway",
)
add_security_checks(app)
app.synth()
