"""The shard placement guard, a CloudFormation custom resource (`Custom::IndexLayoutGuard`).

CloudFormation invokes the function with the resource's properties (`configuration_guard.guard`): the table
name, the bucket and the placement. The table, the functions and the event source mapping wait for this
resource, so it runs before any of them changes, and its answer decides:

- Create: accepted. If the Z-order index is on and the table already exists with entries (a stack upgraded
  from a release without the guard), the bucket's index state is marked `zOrderPending`.
- Update: refused (the deployment fails and rolls back, nothing else changed) when a shard count goes
  down, with a message naming both values. Switching the Z-order index on marks `zOrderPending`.
  A rollback is never refused: when a deployment that raised a count fails later, CloudFormation rolls
  the guard back to the lower count, and refusing that would leave the stack in UPDATE_ROLLBACK_FAILED.
  Entries written under the higher count in the meantime are found again once it is deployed again.
- Delete: accepted; nothing to undo.

The same function serves `Custom::DeployedConfiguration` (`record_configuration`): on create and update it
writes the deployed configuration record of the bucket into the table (`file_index.store.deployment`), which
the writers check their own settings against, and marks an empty name table complete when the table holds
no live entry yet (else `file_search_admin index-names` builds and marks it); on delete it leaves the
record (the table may be kept).

The function answers CloudFormation itself (an HTTPS PUT of the result to the request's presigned
`ResponseURL`) and answers on every path, errors included: a custom resource that never answers holds
the stack for an hour.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from configuration_guard.guard import (
    GuardedPlacement,
    InvalidPropertiesError,
    PlacementChangeRefusedError,
    check_change,
    holds_entries,
    z_order_turns_on,
)
from file_index.rules.config import ConfigError
from file_index.store.deployment import DeployedConfiguration, DeployedConfigurationStore
from file_index.store.name_index_flag import mark_table_complete
from file_index.store.sdk import SdkSettings
from file_index.store.state import IndexStateStore, now_iso

logger = Logger()

CONFIGURATION_RESOURCE_TYPE = "Custom::DeployedConfiguration"
SETTINGS_PROPERTY = "Settings"  # the deployed configuration's settings, one JSON object in cdk.json's terms
# The name table, when the deployment has one: marked complete where it and the entry table are empty
# (`names.mark_table_complete`).
NAME_TABLE_PROPERTY = "NameTableName"
SUCCESS = "SUCCESS"
FAILED = "FAILED"
# CloudFormation shows at most 4 KB of a reason.
MAX_REASON_CHARS = 3800
RESPONSE_TIMEOUT_SECONDS = 10


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> None:
    physical_id = (
        event.get("PhysicalResourceId") or f"index-configuration-guard-{event.get('LogicalResourceId')}"
    )
    try:
        sdk = SdkSettings()
        cloudformation = sdk.client("cloudformation")
        if event.get("ResourceType") == CONFIGURATION_RESOURCE_TYPE:
            data = record_configuration(event, dynamodb=sdk.client("dynamodb"))
        else:
            data = handle(
                event,
                dynamodb=sdk.client("dynamodb"),
                stack_status=lambda stack_id: cloudformation.describe_stacks(StackName=stack_id)["Stacks"][0][
                    "StackStatus"
                ],
            )
    except (PlacementChangeRefusedError, InvalidPropertiesError, ConfigError) as error:
        logger.error("shard placement change refused", extra={"reason": str(error)})
        respond(event, FAILED, physical_id, reason=str(error))
        return
    except Exception as error:  # an unanswered custom resource holds the stack for an hour
        logger.exception("shard placement guard failed")
        respond(event, FAILED, physical_id, reason=f"the shard placement guard failed: {error!r}")
        return
    respond(event, SUCCESS, physical_id, data=data)


def handle(event: dict[str, Any], *, dynamodb: Any, stack_status: Callable[[str], str]) -> dict[str, str]:
    """Decide one request; returns the resource's attributes, raises when the change is refused.

    `stack_status(stack_id)`: the stack's status (CloudFormation's DescribeStacks), asked only when a
    change would be refused, to let a rollback through.
    """
    request = event["RequestType"]
    if request == "Delete":
        return {}
    new = GuardedPlacement.from_properties(event["ResourceProperties"])
    old = GuardedPlacement.from_properties(event["OldResourceProperties"]) if request == "Update" else None
    if old is not None:
        try:
            check_change(old.placement, new.placement)
        except PlacementChangeRefusedError as refusal:
            if not stack_status(event["StackId"]).endswith("ROLLBACK_IN_PROGRESS"):
                raise
            logger.warning(
                "rolling back to a lower shard count: entries written under the higher one are hidden "
                "until it is deployed again",
                extra={"change": str(refusal)},
            )
    pending = False
    if z_order_turns_on(old.placement if old else None, new.placement):
        # An update always had a table, written by functions that did not write `zAddress`; a create
        # finds one only when the stack predates the guard.
        pending = old is not None or holds_entries(dynamodb, new.table_name)
        if pending:
            IndexStateStore(dynamodb, new.table_name).mark_z_order_pending(new.bucket_name)
            logger.info(
                "Z-order index switched on for a table with entries: marked zOrderPending until a migration",
                extra={"table": new.table_name, "bucket": new.bucket_name},
            )
    return {"ZOrderPendingMarked": "true" if pending else "false"}


def record_configuration(event: dict[str, Any], *, dynamodb: Any) -> dict[str, str]:
    """Write the deployed configuration record on create and update; leave it on delete."""
    if event["RequestType"] == "Delete":
        return {}
    properties = event["ResourceProperties"]
    table, bucket, raw = (properties.get(name) for name in ("TableName", "BucketName", SETTINGS_PROPERTY))
    if not isinstance(table, str) or not isinstance(bucket, str) or not isinstance(raw, str):
        raise InvalidPropertiesError(
            f"the properties TableName, BucketName and {SETTINGS_PROPERTY} are required"
        )
    try:
        configuration = DeployedConfiguration(json.loads(raw))
    except ValueError as error:
        raise InvalidPropertiesError(
            f"the property {SETTINGS_PROPERTY} is not a configuration: {error}"
        ) from None
    DeployedConfigurationStore(dynamodb, table).write(
        bucket, configuration, written_by="deployment", now=now_iso()
    )
    name_table = properties.get(NAME_TABLE_PROPERTY)
    if isinstance(name_table, str):
        # A name table beside entries (a table upgraded from 0.3.0, which had no name index) is complete only
        # once `file_search_admin index-names` has given every entry its items.
        if holds_entries(dynamodb, table):
            logger.info(
                "table with entries: the name table is left as it is (index-names marks it complete)",
                extra={"table": name_table},
            )
        elif mark_table_complete(dynamodb, name_table, datetime.now(UTC)):
            logger.info("empty name table marked complete", extra={"table": name_table})
    logger.info("deployed configuration recorded", extra={"table": table, "bucket": bucket, "settings": raw})
    return {}


def respond(
    event: dict[str, Any],
    status: str,
    physical_id: str,
    *,
    reason: str | None = None,
    data: dict[str, str] | None = None,
) -> None:
    """Send the result to CloudFormation's presigned S3 URL for this request."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": (reason or status)[:MAX_REASON_CHARS],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data or {},
        }
    ).encode()
    request = urllib.request.Request(  # noqa: S310 (CloudFormation's https URL)
        event["ResponseURL"],
        data=body,
        method="PUT",
        # The presigned URL was signed with an empty content type.
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT_SECONDS) as response:  # noqa: S310
        response.read()
