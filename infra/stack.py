"""The whole system as one stack: storage, ingest, search API and alarms, wired by typed arguments."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.alarms import Alarms
from infra.config import StackConfig
from infra.ingest import Ingest
from infra.powertools_function import powertools_layer
from infra.search_api import SearchApi
from infra.storage import Storage


class FileSearchStack(Stack):
    """S3 File Search: uploads are indexed from their S3 events and searched through an IAM-signed API."""

    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        layer = powertools_layer(self, version=config.powertools_version)

        self.storage = Storage(self, "Storage", table_name=config.table_name, removal=config.removal)
        self.ingest = Ingest(
            self,
            "Ingest",
            bucket=self.storage.bucket,
            table=self.storage.table,
            layer=layer,
            key_layout=config.key_layout,
            tombstone_ttl_days=config.tombstone_ttl_days,
            log_level=config.log_level,
            removal=config.removal,
        )
        self.search_api = SearchApi(
            self,
            "SearchApi",
            bucket=self.storage.bucket,
            table=self.storage.table,
            layer=layer,
            api_auth=config.api_auth,
            log_level=config.log_level,
            removal=config.removal,
        )
        self.alarms = Alarms(
            self,
            "Alarms",
            queue=self.ingest.queue,
            dead_letter_queue=self.ingest.dead_letter_queue,
            indexer=self.ingest.indexer,
            api=self.search_api.api,
            alarm_email=config.alarm_email,
        )

        CfnOutput(self, "ApiUrl", value=self.search_api.api.url, description="Base URL of the search API")
        CfnOutput(self, "BucketName", value=self.storage.bucket.bucket_name, description="Upload bucket")
        CfnOutput(self, "TableName", value=self.storage.table.table_name, description="File metadata table")
        CfnOutput(self, "QueueUrl", value=self.ingest.queue.queue_url, description="S3 event queue")
        CfnOutput(
            self,
            "DeadLetterQueueUrl",
            value=self.ingest.dead_letter_queue.queue_url,
            description="S3 events the indexer gave up on",
        )
