"""The composition root: the FileSearch with its configuration and clients, built once per environment.

It is built on the first request of an execution environment, not at import, so the handler imports
without any environment (tests set it per test; benchmarks time the bare import).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from file_index.read.name_reader import NameReader
from file_index.read.reader import FileReader
from file_index.rules.placement import ShardPlacement
from file_index.store.sdk import SdkSettings
from file_index.store.state import IndexStateStore
from search.config import load_config, queue_name
from search.dal import BacklogReader, ObjectStore
from search.directory import PeopleDirectory
from search.errors import ConfigError
from search.service import FileSearch
from search.status import IndexStateView

# Threads that query the shards of one list at once (each waits on the network, not the CPU).
MAX_READ_THREADS = 32
# The backlog's figures are optional parts of GET /status: fail fast rather than hold the answer up.
_BACKLOG_SDK = SdkSettings(max_attempts=2, max_connections=2, connect_timeout=2, read_timeout=3)


def read_threads(placement: ShardPlacement) -> int:
    """Threads one list reads with: a list reads all shards of a bucket (or of a hot user) at once."""
    return min(max(placement.bucket_shards, *placement.hot_users.values(), 1), MAX_READ_THREADS)


def search_sdk(threads: int) -> SdkSettings:
    """The search's clients: a connection for every thread of a list's fan-out (botocore's pool of 10 is
    below it), standard retries, and a stalled connection given up in seconds and retried on another
    (botocore waits 60 s), within the function's own timeout."""
    return SdkSettings(max_connections=max(10, threads))


@functools.cache
def file_search() -> FileSearch:
    """The service with its configuration and clients, built once per execution environment."""
    # Imported here: Powertools' parameters utility is needed once per execution environment.
    from aws_lambda_powertools.utilities import parameters

    config = load_config()
    # Read once: the key signs every cursor, and a rotation simply invalidates cursors in flight. A
    # provider of its own (not the module-wide default) so its client follows the current endpoint.
    secret = parameters.SecretsProvider().get(config.cursor_secret_arn, force_fetch=True)
    if isinstance(secret, str):
        cursor_secret = secret.encode("utf-8")
    elif isinstance(secret, bytes):
        cursor_secret = secret
    else:
        raise ConfigError("the secret named by CURSOR_SECRET_ARN holds no string")
    if not cursor_secret:
        raise ConfigError("the secret named by CURSOR_SECRET_ARN is empty")
    placement = config.placement
    threads = read_threads(placement)
    # One connection per thread that reads at once (botocore's default pool is 10, below a page's fan-out).
    sdk = search_sdk(threads)
    table = sdk.resource("dynamodb").Table(config.table_name)
    s3_client = replace(sdk, signature_version="s3v4").client("s3")
    backlog = BacklogReader(
        sqs=_BACKLOG_SDK.client("sqs"),
        cloudwatch=_BACKLOG_SDK.client("cloudwatch"),
        queue_url=config.queue_url,
        queue_name=queue_name(config.queue_url),
        dead_letter_queue_url=config.dead_letter_queue_url,
    )
    executor = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    reader = FileReader(
        table, placement=placement, executor=executor, bucket_time_index=config.bucket_time_index
    )
    # A client of its own: the table resource's client rewrites typed attribute values.
    state_client = sdk.client("dynamodb")
    names = None
    if config.name_table_name is not None:
        names = NameReader(
            table.meta.client,
            config.table_name,
            config.name_table_name,
            placement=placement,
            executor=executor,
            entries=reader,
            state_client=state_client,  # reads whether the bucket's term items are complete
            bucket=config.bucket_name,
        )
    access = config.user_access
    people = None
    if access is not None and access.user_pool_id is not None:
        people = PeopleDirectory(
            sdk.client("cognito-idp"),
            pool_id=access.user_pool_id,
            user_claim=access.user_claim,
            name_attribute=access.owner_name_attribute,
        )
    return FileSearch(
        people=people,
        names=names,
        reader=reader,
        index_state=IndexStateView(
            IndexStateStore(state_client, config.table_name),
            config.bucket_name,
            config.initial_state,
        ),
        backlog=backlog,
        objects=ObjectStore(s3_client, config.bucket_name),
        cursor_secret=cursor_secret,
        download_url_expiry_seconds=config.download_url_expiry_seconds,
        enrich=config.enrich,
        user_access=config.user_access,
        key_pattern=config.key_pattern,
    )
