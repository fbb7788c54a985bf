"""`cdk synth` / `cdk deploy` entry point: the S3 File Search stack, checked by cdk-nag at every synth."""

import os
import sys
from pathlib import Path

import aws_cdk as cdk

# The table schema lives in the Lambda asset root, functions/; the venv's .pth file normally puts it on the
# path, this keeps `python3 app.py` working from an environment set up without it.
sys.path.append(str(Path(__file__).resolve().parent / "functions"))

from infra.config import ConfigError, StackConfig
from infra.nag import add_security_checks
from infra.stack import FileSearchStack

app = cdk.App()
try:
    config = StackConfig.from_context(app.node.try_get_context)
except ConfigError as error:
    # The one useful line; the traceback only for `cdk --debug` (which sets CDK_DEBUG for the app).
    if os.environ.get("CDK_DEBUG", "").lower() in ("1", "true"):
        raise
    sys.exit(f"cdk.json: {error}")
FileSearchStack(
    app,
    "S3FileSearch",
    config=config,
    description="S3 File Search: S3 events indexed into DynamoDB, searched through API Gateway",
)
add_security_checks(app)
app.synth()
