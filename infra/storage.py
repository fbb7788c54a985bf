"""Where files and their index live: the upload bucket (with its access-log bucket) and `FileMetaData`."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from file_index import schema
from infra.config import RemovalChoice

_ATTRIBUTE_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}
# Access logs serve audits of who fetched what; a year covers the usual review cycle.
_ACCESS_LOG_RETENTION = Duration.days(365)


def _attribute(key: schema.KeyAttribute) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTRIBUTE_TYPES[key.type])


class Storage(Construct):
    """The upload bucket and the `FileMetaData` table, keys and indexes taken from `file_index.schema`."""

    def __init__(
        self, scope: Construct, construct_id: str, *, table_name: str, removal: RemovalChoice
    ) -> None:
        super().__init__(scope, construct_id)
        destroy = removal is RemovalChoice.DESTROY
        removal_policy = removal.policy

        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogBucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            # The S3 log delivery service writes only to SSE-S3 buckets, not SSE-KMS.
            encryption=s3.BucketEncryption.S3_MANAGED,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=_ACCESS_LOG_RETENTION)],
            removal_policy=removal_policy,
            auto_delete_objects=destroy,
        )
        self.bucket = s3.Bucket(
            self,
            "UploadBucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="upload-bucket/",
            removal_policy=removal_policy,
            auto_delete_objects=destroy,
        )

        self.table = dynamodb.Table(
            self,
            "FileMetaData",
            table_name=table_name,
            partition_key=_attribute(schema.PARTITION_KEY),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            # Tombstones carry an expiry: DynamoDB TTL removes them at no write cost.
            time_to_live_attribute=schema.TTL_ATTRIBUTE,
            # The AWS-managed key (not the invisible AWS-owned one) puts every use of it in CloudTrail.
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            # A retained table also refuses a delete from the console or an SDK call.
            deletion_protection=not destroy,
            removal_policy=removal_policy,
        )
        for index in schema.GLOBAL_INDEXES:
            self.table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_attribute(index.partition_key),
                sort_key=_attribute(index.sort_key),
                projection_type=dynamodb.ProjectionType.ALL,
            )
