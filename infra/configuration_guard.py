"""The deployment steps that refuse a lower shard count before anything else changes, and that record
the deployed configuration in the table before any writer runs with it.

Synth cannot see what is deployed, so the check runs in the deployment: a custom resource whose
properties are the shard placement (`functions/configuration_guard`). CloudFormation hands it the previous
properties on every update; the table, every function that reads or writes the index and the event
source mapping depend on it, so they change only after it has accepted the new placement, and a refused
change fails the deployment with nothing else changed.

The same function then writes the deployed configuration record (`file_index.store.deployment`) as a second
custom resource, `Custom::DeployedConfiguration`, which waits for the table (a fresh stack's table does not
exist when the guard runs) and which every writer waits for; a rollback rewrites the previous record.
"""

from __future__ import annotations

import json

from aws_cdk import Aws, CustomResource, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from configuration_guard.guard import to_properties
from configuration_guard.handler import CONFIGURATION_RESOURCE_TYPE, NAME_TABLE_PROPERTY, SETTINGS_PROPERTY
from file_index.rules.placement import ShardPlacement
from file_index.store.deployment import DeployedConfiguration
from infra.powertools_function import FunctionBasics, PowertoolsFunction

RESOURCE_TYPE = "Custom::IndexLayoutGuard"
# A DescribeTable, a few Scan pages and one UpdateItem, each bounded by the SDK's timeouts.
GUARD_TIMEOUT = Duration.seconds(60)
# What the guard does to the table: sees whether it exists and holds entries, marks the state record,
# writes the deployed configuration record.
GUARD_TABLE_ACTIONS = ("dynamodb:DescribeTable", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem")


class ConfigurationGuard(Construct):
    """`Custom::IndexLayoutGuard` over `table_name` (a name, not the table: the table waits for it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        placement: ShardPlacement,
        table_name: str,
        bucket_name: str,
        basics: FunctionBasics,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        guard = PowertoolsFunction(
            self,
            "Function",
            handler="configuration_guard.handler.lambda_handler",
            description="Refuses a deployment that lowers a shard count of the file index",
            service_name="configuration-guard",
            environment={},
            timeout=GUARD_TIMEOUT,
            memory_size=256,
            basics=basics,
        )
        self.function = guard.function
        table_arn = stack.format_arn(service="dynamodb", resource="table", resource_name=table_name)
        iam.Grant.add_to_principal(
            grantee=self.function, actions=list(GUARD_TABLE_ACTIONS), resource_arns=[table_arn]
        )
        # Only to tell a rollback (never refused) from a deployment.
        iam.Grant.add_to_principal(
            grantee=self.function, actions=["cloudformation:DescribeStacks"], resource_arns=[Aws.STACK_ID]
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.function.function_arn,
            resource_type=RESOURCE_TYPE,
            properties=to_properties(placement, table_name=table_name, bucket_name=bucket_name),
        )
        # Its role's policy first: a guard invoked before it may read the table would fail the deployment.
        self.resource.node.add_dependency(guard)
        self._table_name = table_name
        self._bucket_name = bucket_name

    def record_configuration(
        self,
        configuration: DeployedConfiguration,
        *,
        after: IConstruct,
        name_table: dynamodb.ITable | None = None,
        name_table_name: str = "",
    ) -> CustomResource:
        """`Custom::DeployedConfiguration`: the record of `configuration`, written once `after` (the table)
        exists; make every writer wait for the returned resource. With `name_table` (named `name_table_name`
        in the context), a name table it finds empty beside an entry table without entries is marked
        complete (`file_index.store.name_index_flag.mark_table_complete`): every entry gets its items from its
        first write, and searches read them from the first upload."""
        name_properties: dict[str, str] = {}
        if name_table is not None:
            # By its name, as the entry table's grant: a reference would make the guard wait for the table.
            name_properties[NAME_TABLE_PROPERTY] = name_table_name
            iam.Grant.add_to_principal(
                grantee=self.function,
                actions=["dynamodb:Scan", "dynamodb:PutItem"],
                resource_arns=[
                    Stack.of(self).format_arn(
                        service="dynamodb", resource="table", resource_name=name_table_name
                    )
                ],
            )
        record = CustomResource(
            self,
            "DeployedConfiguration",
            service_token=self.function.function_arn,
            resource_type=CONFIGURATION_RESOURCE_TYPE,
            properties={
                "TableName": self._table_name,
                "BucketName": self._bucket_name,
                SETTINGS_PROPERTY: json.dumps(configuration.to_json(), sort_keys=True),
                **name_properties,
            },
        )
        record.node.add_dependency(after)
        if name_table is not None:
            record.node.add_dependency(name_table)
        record.node.add_dependency(self.resource)
        return record

    def runs_before(self, *constructs: IConstruct) -> None:
        """Every CloudFormation resource of `constructs` waits for the guard's answer."""
        for construct in constructs:
            construct.node.add_dependency(self.resource)
