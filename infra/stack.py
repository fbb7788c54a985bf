"""The whole system as one stack: storage, ingest, search API, backfill, alarms; wired by typed arguments."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from file_index.store.state import State
from infra.alarms import Alarms
from infra.backfill import Backfill
from infra.config import StackConfig
from infra.configuration_guard import ConfigurationGuard
from infra.dashboard import Dashboard
from infra.ingest import RETENTION, Ingest
from infra.powertools_function import FunctionBasics, powertools_layer
from infra.search_api import SearchApi, SignedInRoutes
from infra.storage import Storage


class FileSearchStack(Stack):
    """S3 File Search: uploads are indexed from their S3 events and searched through an IAM-signed API."""

    def __init__(self, scope: Construct, construct_id: str, *, config: StackConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        basics = FunctionBasics(
            powertools_layer(self, version=config.powertools_version), config.log_level, config.removal
        )

        self.storage = Storage(
            self,
            "Storage",
            table_name=config.table_name,
            removal=config.removal,
            existing_bucket_name=config.existing_bucket_name,
            multi_attribute_index=config.placement.multi_attribute_index,
            bucket_time_index=config.bucket_time_index,
            name_table_name=config.name_table_name if config.name_index else None,
        )
        self.configuration_guard = ConfigurationGuard(
            self,
            "IndexLayoutGuard",
            placement=config.placement,
            # The name from the context, not the table's reference: the table waits for the guard.
            table_name=config.table_name,
            bucket_name=self.storage.bucket.bucket_name,
            basics=basics,
        )
        self.ingest = Ingest(
            self,
            "Ingest",
            bucket=self.storage.bucket,
            table=self.storage.table,
            basics=basics,
            key_pattern=config.key_pattern,
            tombstone_ttl_days=config.tombstone_ttl_days,
            event_source=config.event_source,
            placement=config.placement,
            sizing=config.indexer_sizing,
            name_table=self.storage.name_table,
            enrich=config.enrich,
        )
        # Sign-in for people (`userAccess`): the user pool, and the page they use, whose origin the API's
        # CORS and the bucket's name.
        self.people: Any = None
        self.web_site: Any = None
        signed_in = None
        if config.user_access:
            # Imported here: a stack without them does not load their modules.
            from infra.user_pool import People
            from infra.web_page import link_expiries
            from infra.web_site import WebSite

            self.people = People(
                self,
                "People",
                user_pool_id=config.user_pool_id,
                admin_group=config.admin_group,
                removal=config.removal,
                user_claim=config.user_claim,
                identity_providers=config.identity_providers,
                sign_in_domain_prefix=config.sign_in_domain_prefix,
                allowed_email_domains=config.allowed_email_domains,
                basics=basics,
            )
            self.web_site = WebSite(
                self,
                "WebSite",
                removal=config.removal,
                upload_bucket_name=config.existing_bucket_name,
                sign_in_domain=self.people.sign_in_domain,
            )
            self.people.add_page_client(page_url=f"{self.web_site.origin}/")
            signed_in = SignedInRoutes(
                user_pool=self.people.user_pool,
                client=self.people.client,
                web_origin=self.web_site.origin,
                user_claim=config.user_claim,
                admin_group=config.admin_group,
                max_upload_bytes=config.max_upload_bytes,
                key_pattern=config.key_pattern,
                share_link_max_seconds=config.share_link_max_seconds,
                owner_name_attribute=config.owner_name_attribute,
            )
            self.storage.allow_uploads_from(self.web_site.origin)
        self.search_api = SearchApi(
            self,
            "SearchApi",
            bucket=self.storage.bucket,
            table=self.storage.table,
            queue=self.ingest.queue,
            dead_letter_queue=self.ingest.dead_letter_queue,
            # A bucket the stack creates starts empty and every object since has an event; an existing
            # one is not indexed until its first backfill completes.
            initial_state=State.BUILDING if self.storage.imports_bucket else State.READY,
            basics=basics,
            api_auth=config.api_auth,
            placement=config.placement,
            bucket_time_index=config.bucket_time_index,
            name_table=self.storage.name_table,
            enrich=config.enrich,
            signed_in=signed_in,
        )
        if self.web_site is not None:
            self.web_site.deploy(
                {
                    "apiUrl": self.search_api.api.url,
                    "region": self.region,
                    "userPoolId": self.people.user_pool.user_pool_id,
                    "userPoolClientId": self.people.client.user_pool_client_id,
                    "maxUploadBytes": config.max_upload_bytes,
                    "linkExpiries": link_expiries(config.share_link_max_seconds),
                    "adminGroup": config.admin_group,
                    "userClaim": config.user_claim,
                    "bucket": self.storage.bucket.bucket_name,
                    **self.people.page_config(),
                }
            )
        self.backfill = Backfill(
            self,
            "Backfill",
            bucket=self.storage.bucket,
            table=self.storage.table,
            basics=basics,
            key_pattern=config.key_pattern,
            tombstone_ttl_days=config.tombstone_ttl_days,
            concurrency=config.backfill_concurrency,
            batch_size=config.backfill_batch_size,
            segments=config.reconcile_segments,
            placement=config.placement,
            name_table=self.storage.name_table,
        )
        # Readers before writers: a deployment that adds shards or hot users updates the search function
        # (which then reads the new partitions) before any function that writes entries into them, so no
        # entry is ever written where the deployed search does not look, and no cursor skips one.
        for writer in (self.ingest.indexer, *self.backfill.functions.values()):
            writer.node.add_dependency(self.search_api.function)
        # Every writer checks its settings against this record (file_index.store.deployment): it is written
        # once the tables exist, and before any writer runs with the configuration it records.
        self.configuration_record = self.configuration_guard.record_configuration(
            config.deployed_configuration(),
            after=self.storage.table,
            name_table=self.storage.name_table,
            name_table_name=config.name_table_name,
        )
        for writer in (self.ingest.indexer, *self.backfill.functions.values()):
            writer.node.add_dependency(self.configuration_record)
        # The indexer's subtree holds its event source mapping.
        self.configuration_guard.runs_before(
            self.storage.table,
            *([self.storage.name_table] if self.storage.name_table is not None else []),
            self.ingest.indexer,
            self.search_api.function,
            *self.backfill.functions.values(),
        )
        if self.storage.imports_bucket:
            # Live events flow before the listing starts, so nothing changed during the run is missed.
            self.initial_backfill = self.backfill.start_once_on_create(
                after=[self.storage.bucket, self.ingest, self.storage.table]
            )
        if config.reconcile_schedule is not None:
            self.reconcile_schedule = self.backfill.schedule_reconcile(config.reconcile_schedule)
        self.alarms = Alarms(
            self,
            "Alarms",
            queue=self.ingest.queue,
            dead_letter_queue=self.ingest.dead_letter_queue,
            dead_letter_retention=RETENTION,
            indexer=self.ingest.indexer,
            api_server_errors=self.search_api.server_errors,
            api_retry_later_answers=self.search_api.retry_later_answers,
            backfill=self.backfill.state_machine,
            alarm_email=config.alarm_email,
        )
        self.dashboard = Dashboard(
            self,
            "Dashboard",
            queue=self.ingest.queue,
            dead_letter_queue=self.ingest.dead_letter_queue,
            indexer=self.ingest.indexer,
            search=self.search_api.function,
            api=self.search_api.api,
            api_server_errors=self.search_api.server_errors,
            api_retry_later_answers=self.search_api.retry_later_answers,
            table=self.storage.table,
            backfill=self.backfill.state_machine,
            alarms=self.alarms.all,
        )

        outputs = {"ApiUrl": (self.search_api.api.url, "Base URL of the search API")}
        if self.web_site is not None:
            outputs |= {
                "WebUrl": (self.web_site.origin, "The page people sign in at"),
                "UserPoolId": (self.people.user_pool.user_pool_id, "Add people here (README, Adding people)"),
                "UserPoolClientId": (self.people.client.user_pool_client_id, "The page's app client"),
            }
        outputs |= {
            "BucketName": (self.storage.bucket.bucket_name, "The indexed bucket"),
            "TableName": (self.storage.table.table_name, "File metadata table"),
            "QueueUrl": (self.ingest.queue.queue_url, "S3 event queue"),
            "DeadLetterQueueUrl": (
                self.ingest.dead_letter_queue.queue_url,
                "S3 events the indexer gave up on",
            ),
            "IndexerFunctionName": (
                self.ingest.indexer.function_name,
                "The indexer: its environment is the deployed shard placement the admin tools check",
            ),
            "BackfillStateMachineArn": (
                self.backfill.state_machine.state_machine_arn,
                'Starts a backfill ({"operation": "backfill"}) or reconcile of the index',
            ),
            "AlarmTopicArn": (self.alarms.topic.topic_arn, "Where every alarm publishes"),
            "DashboardName": (
                self.dashboard.dashboard.dashboard_name,
                "The CloudWatch dashboard of indexing and search health",
            ),
        }
        for name, (value, description) in outputs.items():
            CfnOutput(self, name, value=value, description=description)
