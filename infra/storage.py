"""Where files and their index live: the indexed bucket (with its access-log bucket) and `FileMetaData`.

The indexed bucket is either created here, or an existing bucket imported by name: an imported bucket is
never created, configured, given a removal policy or deleted by the stack (only its event notifications
are added, by the ingest construct).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_cdk import Annotations, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from file_index.rules import schema
from infra.config import RemovalChoice
from infra.nag import acknowledge, arn_reference

_ATTRIBUTE_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}
# Access logs serve audits of who fetched what; a year covers the usual review cycle.
_ACCESS_LOG_RETENTION = Duration.days(365)


def _attribute(key: schema.KeyAttribute) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=key.name, type=_ATTRIBUTE_TYPES[key.type])


def bucket_arn_reference(bucket: s3.IBucket) -> str:
    """How a cdk-nag finding spells the ARN of `bucket`, created by the stack or imported by name."""
    if isinstance(bucket.node.default_child, s3.CfnBucket):
        return arn_reference(bucket)
    # An imported bucket's ARN is a literal with the partition left to CloudFormation.
    name = Stack.of(bucket).resolve(bucket.bucket_name)
    return f"arn:<AWS::Partition>:s3:::{name}"


def grant_object_lookup(grantee: iam.IGrantable, bucket: s3.IBucket, *, reason: str) -> None:
    """Let `grantee` HEAD any object of `bucket` (current version) and learn that one does not exist.

    s3:GetObject covers HeadObject; s3:ListBucket on the bucket makes S3 answer 404 for a missing key
    instead of 403, which is how a lookup tells "deleted" from "not allowed". Nothing else: no writes,
    no deletes, no version reads. `reason` says in the cdk-nag acknowledgement why `grantee` needs it.
    """
    iam.Grant.add_to_principal(
        grantee=grantee, actions=["s3:GetObject"], resource_arns=[bucket.arn_for_objects("*")]
    )
    iam.Grant.add_to_principal(grantee=grantee, actions=["s3:ListBucket"], resource_arns=[bucket.bucket_arn])
    # The finding is raised on the principal's policy, a child of its role.
    role = grantee.grant_principal
    if isinstance(role, Construct):
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::{bucket_arn_reference(bucket)}/*]",
            f"Only s3:GetObject (HeadObject) on the objects of the indexed bucket, which any object of it "
            f"may need: {reason}",
        )


class Storage(Construct):
    """The indexed bucket and the `FileMetaData` table, keys and indexes taken from
    `file_index.rules.schema`."""

    bucket: s3.IBucket
    # Only for a bucket the stack creates: an imported bucket keeps whatever logging its owner set up.
    access_log_bucket: s3.Bucket | None

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table_name: str,
        removal: RemovalChoice,
        existing_bucket_name: str | None = None,
        multi_attribute_index: bool = False,
        bucket_time_index: bool = True,
        name_table_name: str | None = None,
    ) -> None:
        """`multi_attribute_index`: the table also gets the Z-order index (`schema.Z_ORDER_INDEX`);
        `bucket_time_index`: the bucket's time index (`schema.BUCKET_DATE_INDEX`);
        `name_table_name`: the name index table is created under this name (None: no name index)."""
        super().__init__(scope, construct_id)
        self.table = self._table(
            table_name,
            removal,
            multi_attribute_index=multi_attribute_index,
            bucket_time_index=bucket_time_index,
        )
        self.name_table = None if name_table_name is None else self._name_table(name_table_name, removal)
        # An existing bucket may hold objects that were never indexed: its index starts BUILDING.
        self.imports_bucket = existing_bucket_name is not None
        if existing_bucket_name is not None:
            self.bucket = s3.Bucket.from_bucket_name(self, "UploadBucket", existing_bucket_name)
            self.access_log_bucket = None
            return

        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogBucket",
            lifecycle_rules=[s3.LifecycleRule(expiration=_ACCESS_LOG_RETENTION)],
            **private_bucket_settings(removal),
        )
        self.bucket = s3.Bucket(
            self,
            "UploadBucket",
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="upload-bucket/",
            **private_bucket_settings(removal),
        )

    def allow_uploads_from(self, origin: str) -> None:
        """Let the page at `origin` (and only it) POST uploads to the bucket (the presigned forms).

        An existing bucket is its owner's: the stack changes nothing of it but its notifications, so its
        owner adds the same CORS rule (README, "Adding people"); the synth says so.
        """
        if self.imports_bucket:
            Annotations.of(self).add_warning_v2(
                "s3-file-search:import-bucket-cors",
                "userAccess with existingBucketName: add a CORS rule to the bucket that allows GET, POST and "
                "PUT from the page's origin (the WebUrl output) and exposes ETag, or the page's uploads (and "
                "its zips) are refused",
            )
            return
        assert isinstance(self.bucket, s3.Bucket)
        # POST: the presigned forms; PUT: the parts of a multipart upload, whose ETag the page may read;
        # GET: the presigned downloads the page reads to make a zip of many files.
        self.bucket.add_cors_rule(
            allowed_methods=[s3.HttpMethods.GET, s3.HttpMethods.POST, s3.HttpMethods.PUT],
            allowed_origins=[origin],
            allowed_headers=["*"],
            exposed_headers=["ETag"],
            max_age=600,
        )
        # A multipart upload nobody completes or cancels (a closed tab) keeps its parts, billed, until
        # aborted: S3 aborts it a week after it started.
        self.bucket.add_lifecycle_rule(
            id="AbortIncompleteUploads", abort_incomplete_multipart_upload_after=Duration.days(7)
        )

    def _name_table(self, table_name: str, removal: RemovalChoice) -> dynamodb.Table:
        """The name index (`file_index.write.names`), with the same protection as the entries' table."""
        table = dynamodb.Table(
            self,
            "FileNameIndex",
            table_name=table_name,
            partition_key=_attribute(schema.NAME_PARTITION_KEY),
            sort_key=_attribute(schema.NAME_SORT_KEY),
            **_protected(removal),
        )
        _add_indexes(table, (schema.NAME_USER_INDEX,))
        return table

    def _table(
        self,
        table_name: str,
        removal: RemovalChoice,
        *,
        multi_attribute_index: bool,
        bucket_time_index: bool,
    ) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            "FileMetaData",
            table_name=table_name,
            partition_key=_attribute(schema.PARTITION_KEY),
            # Tombstones carry an expiry: DynamoDB TTL removes them at no write cost.
            time_to_live_attribute=schema.TTL_ATTRIBUTE,
            **_protected(removal),
        )
        # CloudFormation adds or removes at most one GSI per update: switching the bucket's time index or
        # the Z-order index on or off is one such change, and the two need two deployments. The user's
        # size index (`schema.USER_SIZE_INDEX`) is one too: a table deployed without it gets it in an
        # update that switches no other index, and `sort=size` of a user answers once it is ACTIVE.
        _add_indexes(table, schema.global_indexes(multi_attribute_index, bucket_time_index=bucket_time_index))
        return table


def _protected(removal: RemovalChoice) -> dict[str, Any]:
    """What every table of the stack is: on demand, recoverable, encrypted, and kept unless destroyed."""
    return {
        "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
        "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        # The AWS-managed key (not the invisible AWS-owned one) puts every use of it in CloudTrail.
        "encryption": dynamodb.TableEncryption.AWS_MANAGED,
        # A retained table also refuses a delete from the console or an SDK call.
        "deletion_protection": removal is not RemovalChoice.DESTROY,
        "removal_policy": removal.policy,
    }


def _add_indexes(table: dynamodb.Table, indexes: Iterable[schema.GlobalIndex]) -> None:
    for index in indexes:
        table.add_global_secondary_index(
            index_name=index.name,
            partition_key=_attribute(index.partition_key),
            sort_key=_attribute(index.sort_key),
            projection_type=dynamodb.ProjectionType.ALL,
        )


def private_bucket_settings(removal: RemovalChoice) -> dict[str, Any]:
    """What every bucket the stack creates is: private, reached over TLS only, encrypted, its objects all
    its owner's, and kept unless destroyed (then emptied first, so the stack's deletion can remove it)."""
    return {
        "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
        "enforce_ssl": True,
        # SSE-S3, not SSE-KMS: the S3 log delivery service writes only to SSE-S3 buckets.
        "encryption": s3.BucketEncryption.S3_MANAGED,
        "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        "removal_policy": removal.policy,
        "auto_delete_objects": removal is RemovalChoice.DESTROY,
    }
