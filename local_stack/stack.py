"""The whole product on one machine: moto for S3, SQS, DynamoDB and Secrets Manager, the real handlers.

`LocalFileSearch` starts moto's server on 127.0.0.1, creates what the CDK stack deploys (the upload
bucket, the queue with its dead-letter queue, the bucket's notifications to the queue, the `FileMetaData`
table from the same definitions, the cursor signing secret), points the in-process handlers at it through
the environment variables of their contract, and runs the indexer behind a stand-in for the SQS event
source mapping and the search handler behind a stand-in for API Gateway.

The stack follows the CDK app's configuration: it reads the repository's `cdk.json` context with the
app's own reader (`infra.config.StackConfig`), so the table gets the indexes the deployed one gets (the
Z-order index with `multiAttributeIndex: true`) and the handlers get the same shard placement (shard counts,
hot users) and key pattern. `context={...}` overrides keys as `cdk -c key=value` does.

The table's engine (`table_engine`): moto's DynamoDB (the default here, quick to start for tests), or
DynamoDB Local, AWS's own emulator, started by the stack as a child process (`local_stack.dynamodb_local`):
moto walks the whole table for each query, DynamoDB Local reads its indexes, so only DynamoDB Local keeps
list pages fast past a few thousand files. `auto` takes DynamoDB Local and falls back to moto, with a
warning, where it cannot start (no Java). With `dynamodb_endpoint` (serve reads
`AWS_ENDPOINT_URL_DYNAMODB`) the table lives in a DynamoDB engine already running instead. Everything
else stays on moto, whose SQS the stack runs with `local_stack.moto_sqs`'s paths, costing the same at any
backlog.

Where moto and the indexer run: by default moto's server is a thread of the stack's process and the
indexer one poller thread beside it, as tests want (they patch moto in their own process). With
`moto_process=True` moto's server is a process of its own (`local_stack.moto_server`), and with
`indexer_processes=N` the indexer runs as N execution environments at once, each a process with its own
poller (`local_stack.indexer_workers`), as the event source mapping's concurrency does: one interpreter lock
no longer bounds the S3 uploads, the queue, the indexing and the API together. `serve`, the demo and the
bench run that way (`SEPARATE_PROCESSES`). The stack's changes to moto (`local_stack.moto_server`) hold
wherever its server runs, the S3 event clock included.

Each stack imports the handlers afresh, as a new Lambda execution environment would, so configuration and
clients cached at cold start never leak between two stacks started in one process (tests do that).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import importlib
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import boto3
from botocore.config import Config

from file_index.rules import schema
from file_index.rules.key_pattern import InvalidKeyPatternError, KeyPattern
from file_index.store import enrich, name_index_flag
from file_index.store.deployment import DeployedConfiguration, DeployedConfigurationStore
from file_index.store.state import now_iso
from infra.config import CDK_JSON, ConfigError, EventSource, StackConfig
from infra.people import page_password_policy
from infra.sizing import SEARCH_MEMORY_MB
from infra.web_page import link_expiries
from local_stack.api_gateway import ApiGatewayServer
from local_stack.cognito import (
    DEMO_ADMIN,
    DEMO_USER,
    IdTokenAuthorizer,
    LocalUserPool,
    create_user_pool,
    read_key_set,
)
from local_stack.dynamodb_local import DynamoDBLocalProcess, DynamoDBLocalUnavailableError, unavailable_reason
from local_stack.event_source import LambdaHandler, LocalLambdaContext, SqsEventSourcePoller
from local_stack.indexer_workers import ConcurrentEventSource, WorkerSettings
from local_stack.moto_server import EVENT_CLOCK_PATH, EventClock, make_moto_server, moto_changes
from local_stack.web import WebServer

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
REGION = "us-east-1"
DEFAULT_BUCKET = "fileupload.a"  # the guideline's bucket
QUEUE_NAME = "file-events"
DLQ_NAME = "file-events-dlq"
SECRET_NAME = "s3-file-search/cursor-key"  # noqa: S105 (a name, not a secret)
# moto accepts any credentials; these fake ones make sure nothing here can reach AWS.
FAKE_CREDENTIAL = "testing"
# Kept equal to the CDK stack's redrive policy: a message failing this many receives goes to the DLQ.
MAX_RECEIVE_COUNT = 5
# The events the CDK stack subscribes the queue to; lifecycle expirations are deletes too.
NOTIFICATION_EVENTS = ("s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:LifecycleExpiration:*")
TAGGING_NOTIFICATION_EVENT = "s3:ObjectTagging:*"

INDEXER_HANDLER = "indexer.handler.lambda_handler"
SEARCH_HANDLER = "search.handler.lambda_handler"
_FUNCTION_PACKAGES = frozenset({"indexer", "search", "file_index"})

MOTO_READY_TIMEOUT_S = 60.0
MOTO_STOP_TIMEOUT_S = 10.0

# Where the table lives: moto's DynamoDB, DynamoDB Local (started by the stack), or DynamoDB Local where
# it can start and moto otherwise.
MOTO = "moto"
DYNAMODB_LOCAL = "dynamodb-local"
AUTO = "auto"
TABLE_ENGINES = (MOTO, DYNAMODB_LOCAL, AUTO)

# How serve, the demo and the bench run the stack: moto's server in a process of its own and the indexer as
# two execution environments. On two cores the CPU each upload costs bounds indexing, not the number of
# pollers (docs/developing.md, the local stack's limits).
SEPARATE_PROCESSES: dict[str, Any] = {"moto_process": True, "indexer_processes": 2}


class StackStartError(RuntimeError):
    """The stack cannot start for a reason its user can fix; the message says what."""


class PortUnavailableError(StackStartError):
    """A port the stack was told to bind is already taken."""

    def __init__(self, role: str, host: str, port: int) -> None:
        super().__init__(f"{role} port {port} on {host} is already in use")
        self.role = role
        self.host = host
        self.port = port


class InvalidConfigurationError(StackStartError):
    """cdk.json (or an override) holds a value the CDK app would refuse; the message names the key."""


class TableExistsError(StackStartError):
    """The DynamoDB engine the stack was pointed at already holds the table."""


class IndexingTimeoutError(TimeoutError):
    """The indexer did not catch up with the queue in time."""


class LocalFileSearch:
    """The local stack as a context manager; `aws_port=0` / `api_port=0` pick free ports."""

    def __init__(
        self,
        *,
        aws_port: int = 5000,
        api_port: int = 8000,
        web_port: int = 0,
        bucket: str = DEFAULT_BUCKET,
        region: str = REGION,
        key_pattern: str | None = None,
        visibility_timeout: int = 30,
        max_receive_count: int = MAX_RECEIVE_COUNT,
        log_level: str = "INFO",
        poll_wait_seconds: int = 1,
        dynamodb_endpoint: str | None = None,
        table_engine: str = MOTO,
        context: Mapping[str, Any] | None = None,
        cdk_json: Path = CDK_JSON,
        moto_process: bool = False,
        indexer_processes: int = 0,
    ) -> None:
        """`context`: cdk.json context keys to override; `key_pattern`: KEY_LAYOUT, cdk.json's when None.

        `table_engine`: one of TABLE_ENGINES; ignored when `dynamodb_endpoint` names a running engine.
        `moto_process`: moto's server in a process of its own rather than a thread of this one.
        `indexer_processes`: that many indexer execution environments, each a process polling the queue;
        0 runs the indexer on one thread of this process.
        """
        if table_engine not in TABLE_ENGINES:
            raise InvalidConfigurationError(
                f"table engine {table_engine!r} is not one of {', '.join(TABLE_ENGINES)}"
            )
        if indexer_processes < 0:
            raise InvalidConfigurationError(f"indexer_processes must be 0 or more, not {indexer_processes}")
        try:
            self.config = StackConfig.from_cdk_json(cdk_json, context)
        except ConfigError as error:
            raise InvalidConfigurationError(str(error)) from None
        self.bucket = bucket
        self.region = region
        self.table_name = self.config.table_name
        self._aws_port = aws_port
        self._api_port = api_port
        self._web_port = web_port
        self._web: WebServer | None = None
        self.user_pool: LocalUserPool | None = None
        self._key_pattern = key_pattern if key_pattern is not None else self.config.key_pattern
        try:
            # The functions would refuse it at their first event: refuse it now, in one line.
            KeyPattern.parse(self._key_pattern)
        except InvalidKeyPatternError as error:
            raise InvalidConfigurationError(f"KEY_LAYOUT: {error}") from None
        self._visibility_timeout = visibility_timeout
        self._max_receive_count = max_receive_count
        self._log_level = log_level
        self._poll_wait_seconds = poll_wait_seconds
        self._given_dynamodb_endpoint = dynamodb_endpoint
        self._dynamodb_endpoint = dynamodb_endpoint
        self._table_engine = table_engine
        self.table_engine_note: str | None = None  # why `auto` fell back to moto, when it did
        self._moto_process = moto_process
        self._indexer_processes = indexer_processes
        self._resources = contextlib.ExitStack()
        self._aws_port_bound: int | None = None
        self._moto_child: subprocess.Popen[bytes] | None = None
        self._dynamodb_local: DynamoDBLocalProcess | None = None
        self._api: ApiGatewayServer | None = None
        self._poller: SqsEventSourcePoller | ConcurrentEventSource | None = None
        self.queue_url = ""
        self.queue_arn = ""
        self.dlq_url = ""
        self.secret_arn = ""

    @property
    def deployed_configuration(self) -> DeployedConfiguration:
        """The configuration the stack records in its table, as a deployment of the same cdk.json does."""
        return dataclasses.replace(self.config, key_pattern=self._key_pattern).deployed_configuration()

    # -- lifecycle -------------------------------------------------------------------------------------

    def __enter__(self) -> LocalFileSearch:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> LocalFileSearch:
        """Bind both ports first (so a taken port fails before anything runs), then build and serve.

        Starting a started stack does nothing. moto keeps one state per process, so only one stack may
        run in a process at a time.
        """
        if self._aws_port_bound is not None:
            return self
        # One log line per moto request drowns the stack's own progress lines.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        try:
            listener: socket.socket = self._bind("AWS", lambda: socket.create_server((HOST, self._aws_port)))
            self._resources.callback(listener.close)
            self._aws_port_bound = int(listener.getsockname()[1])
            self._api = self._bind(
                "API", lambda: ApiGatewayServer(_unset_handler, host=HOST, port=self._api_port)
            )
            self._resources.callback(self._api.server_close)
            if self.config.user_access:
                self._web = self._bind("web", lambda: WebServer(host=HOST, port=self._web_port))
                self._resources.callback(self._web.server_close)
            if self._moto_process:
                self._start_moto_process(listener)
            else:
                self._start_moto_thread(listener)
            logger.info(
                "moto serves S3, SQS, DynamoDB, Secrets Manager and Cognito at %s (%s)",
                self.aws_endpoint,
                f"process {self._moto_child.pid}" if self._moto_child is not None else "in this process",
            )
            self._start_table_engine()

            self._reset_moto()
            self._resources.enter_context(_handler_environment(self._handler_env_base()))
            self._create_resources()
            os.environ.update(self._handler_env())
            self._resources.enter_context(_cold_start())

            search = load_handler(SEARCH_HANDLER, service="file-search")
            self._poller = self._start_indexer()
            self._resources.callback(self._poller.stop)
            # API Gateway hands the function a context object; the stand-in server passes None.
            self._api.lambda_handler = lambda event, _context: search(
                event, LocalLambdaContext("search", memory_limit_in_mb=SEARCH_MEMORY_MB, region=self.region)
            )
            self._api.start()
            self._resources.callback(self._api.close)
            logger.info("the search API (API Gateway stand-in) serves at %s", self.api_url)
            if self._web is not None:
                self._start_sign_in(self._web)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the poller, then the API server, then moto; restore the environment and modules."""
        self._resources.close()
        self._dynamodb_endpoint = self._given_dynamodb_endpoint
        self._aws_port_bound = None
        self._moto_child = None
        self._dynamodb_local = None
        self._api = None
        self._web = None
        self._poller = None

    @property
    def child_pids(self) -> list[int]:
        """The processes the stack started and stops: moto's server, the indexer's workers (not Java's)."""
        return [pid for role, pids in self.processes.items() if role != DYNAMODB_LOCAL for pid in pids]

    @property
    def processes(self) -> dict[str, list[int]]:
        """The stack's processes other than this one, by role: `moto`, `indexer` (its workers) and
        `dynamodb-local`, those it started (in-process moto or poller: no entry)."""
        java = self._dynamodb_local.pid if self._dynamodb_local is not None else None
        roles = {
            "moto": [self._moto_child.pid] if self._moto_child is not None else [],
            "indexer": self._poller.pids if isinstance(self._poller, ConcurrentEventSource) else [],
            DYNAMODB_LOCAL: [java] if java is not None else [],
        }
        return {role: pids for role, pids in roles.items() if pids}

    def _start_moto_thread(self, listener: socket.socket) -> None:
        clock = EventClock()
        self._resources.enter_context(moto_changes(clock))
        server = make_moto_server(HOST, self._aws_port_bound or 0, clock, fd=listener.fileno())
        listener.close()  # the server works on its own duplicate of the descriptor
        self._resources.callback(server.server_close)
        thread = threading.Thread(target=server.serve_forever, name="moto", daemon=True)
        thread.start()
        self._resources.callback(thread.join, MOTO_STOP_TIMEOUT_S)
        self._resources.callback(server.shutdown)

    def _start_moto_process(self, listener: socket.socket) -> None:
        child = subprocess.Popen(
            [
                *(sys.executable, "-m", "local_stack.moto_server"),
                *("--fd", str(listener.fileno()), "--parent", str(os.getpid())),
            ],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.DEVNULL,
            # Never this process's stdout, which may carry serve's READY line and nothing else.
            stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
        )
        self._moto_child = child
        self._resources.callback(_stop_process, child)
        listener.close()  # the child serves on its own copy of the descriptor
        deadline = time.monotonic() + MOTO_READY_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{self.aws_endpoint}/moto-api/data.json", timeout=5):  # noqa: S310
                    return
            except OSError as error:
                if child.poll() is not None:
                    raise StackStartError(f"moto's server exited with status {child.returncode}") from None
                if time.monotonic() > deadline:
                    raise StackStartError(
                        f"moto's server did not answer at {self.aws_endpoint}: {error}"
                    ) from None
                time.sleep(0.1)

    def _start_indexer(self) -> SqsEventSourcePoller | ConcurrentEventSource:
        sizing = self.config.indexer_sizing
        if self._indexer_processes:
            settings = WorkerSettings(
                handler=INDEXER_HANDLER,
                service="file-indexer",
                function_name="indexer",
                queue_url=self.queue_url,
                queue_arn=self.queue_arn,
                region=self.region,
                endpoint_url=self.aws_endpoint,
                credential=FAKE_CREDENTIAL,
                batch_size=sizing.batch_size,
                wait_seconds=self._poll_wait_seconds,
                memory_mb=sizing.memory_mb,
                log_level=logging.getLogger("local_stack").getEffectiveLevel(),
            )
            # The workers take this process's environment (the handlers' variables) when they start.
            return ConcurrentEventSource(settings, count=self._indexer_processes).start()
        return SqsEventSourcePoller(
            sqs=self.client("sqs"),
            queue_url=self.queue_url,
            queue_arn=self.queue_arn,
            region=self.region,
            handler=load_handler(INDEXER_HANDLER, service="file-indexer"),
            function_name="indexer",
            wait_seconds=self._poll_wait_seconds,
            memory_mb=sizing.memory_mb,
            # The event source mapping's batch (`indexerBatchSize`), filled from what the queue holds.
            batch_size=sizing.batch_size,
        ).start()

    def _start_table_engine(self) -> None:
        """Start DynamoDB Local when the stack's engine is it (or `auto` and it can start here)."""
        if self._given_dynamodb_endpoint is not None or self._table_engine == MOTO:
            return
        if self._table_engine == AUTO:
            reason = unavailable_reason()
            if reason is not None:
                self.table_engine_note = (
                    f"the table is on moto, because DynamoDB Local cannot start: {reason}. moto's DynamoDB "
                    "walks the whole table for each query: past a few thousand files list pages slow down"
                )
                logger.warning("%s", self.table_engine_note)
                return
        try:
            engine = self._dynamodb_local = self._resources.enter_context(DynamoDBLocalProcess())
        except DynamoDBLocalUnavailableError as error:
            raise StackStartError(f"DynamoDB Local: {error}") from None
        self._dynamodb_endpoint = engine.endpoint_url
        logger.info("DynamoDB Local holds the table at %s", engine.endpoint_url)

    def _start_sign_in(self, web: WebServer) -> None:
        """The `/me/...` routes' authorizer (the pool's keys, read once from moto) and the page."""
        assert self._api is not None
        assert self.user_pool is not None
        pool = self.user_pool
        self._api.authorizer = IdTokenAuthorizer(
            issuer=pool.issuer, client_id=pool.client_id, keys=read_key_set(pool.jwks_url)
        )
        self._api.web_origin = web.url
        # With `identityProviders`, the managed login domain's stand-in (local_stack/identity_provider.py).
        domain = None
        if self.config.identity_providers:
            from local_stack.identity_provider import LocalSignInDomain

            domain = LocalSignInDomain(
                host=HOST,
                cognito=self.client("cognito-idp"),
                pool=pool,
                providers=self.config.identity_providers,
                page_url=f"{web.url}/",
            )
            self._resources.enter_context(domain)
        web.configure(
            {
                "apiUrl": self.api_url,
                "region": self.region,
                "userPoolId": pool.pool_id,
                "userPoolClientId": pool.client_id,
                "cognitoEndpoint": self.aws_endpoint,
                "maxUploadBytes": self.config.max_upload_bytes,
                "linkExpiries": link_expiries(self.config.share_link_max_seconds),
                "adminGroup": self.config.admin_group,
                "userClaim": self.config.user_claim,
                "bucket": self.bucket,
                # The pool's rules, which the page shows and checks (create_user_pool gives it this policy).
                "passwordPolicy": page_password_policy(),
                **(domain.page_config() if domain is not None else {}),
            },
            connect_sources=[self.api_url, self.aws_endpoint, *([domain.url] if domain is not None else [])],
        )
        web.start()
        self._resources.callback(web.close)
        logger.info(
            "the page serves at %s; sign in as %s (or %s, an admin) with the password in the READY line",
            web.url,
            DEMO_USER,
            DEMO_ADMIN,
        )

    def _bind(self, role: str, bind: Callable[[], Any]) -> Any:
        try:
            return bind()
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                port = {"AWS": self._aws_port, "API": self._api_port}.get(role, self._web_port)
                raise PortUnavailableError(role, HOST, port) from error
            raise

    # -- what the stack offers -------------------------------------------------------------------------

    @property
    def aws_endpoint(self) -> str:
        assert self._aws_port_bound is not None, "start() first"
        return f"http://{HOST}:{self._aws_port_bound}"

    @property
    def dynamodb_endpoint(self) -> str:
        """Where the table lives: moto, unless the stack was given another DynamoDB engine."""
        return self._dynamodb_endpoint or self.aws_endpoint

    @property
    def api_url(self) -> str:
        assert self._api is not None, "start() first"
        return self._api.url

    @property
    def web_url(self) -> str | None:
        """The page's address; None without a user pool (`userAccess` off)."""
        return self._web.url if self._web is not None else None

    def describe(self) -> dict[str, Any]:
        """What a client needs to talk to the stack (the object of serve's READY line)."""
        placement = self.config.placement
        return {
            "apiUrl": self.api_url,
            "awsEndpoint": self.aws_endpoint,
            "region": self.region,
            "bucket": self.bucket,
            "queueUrl": self.queue_url,
            "dlqUrl": self.dlq_url,
            "table": self.table_name,
            "nameTable": self.config.name_table_name if self.config.name_index else None,
            "dynamodbEndpoint": self.dynamodb_endpoint,
            "secretArn": self.secret_arn,
            **self._describe_sign_in(),
            # In cdk.json's terms: what an admin command run against this stack must be told.
            "indexLayout": {
                "bucketIndexShards": placement.bucket_shards,
                "hotUsers": dict(placement.hot_users),
                "multiAttributeIndex": placement.multi_attribute_index,
            },
        }

    def _describe_sign_in(self) -> dict[str, Any]:
        pool = self.user_pool
        if pool is None:
            return {"webUrl": None, "userPoolId": None, "userPoolClientId": None}
        return {
            "webUrl": self.web_url,
            "userPoolId": pool.pool_id,
            "userPoolClientId": pool.client_id,
            # Made afresh at each start; the local pool lives as long as the stack.
            "demoUser": DEMO_USER,
            "demoPassword": pool.passwords[DEMO_USER],
            "adminUser": DEMO_ADMIN,
            "adminPassword": pool.passwords[DEMO_ADMIN],
        }

    def client(self, service: str) -> Any:
        """A boto3 client for `service` on the stack's endpoint for it."""
        return boto3.client(
            service,
            endpoint_url=self.dynamodb_endpoint if service == "dynamodb" else self.aws_endpoint,
            region_name=self.region,
            aws_access_key_id=FAKE_CREDENTIAL,
            aws_secret_access_key=FAKE_CREDENTIAL,
            aws_session_token=FAKE_CREDENTIAL,
            config=Config(retries={"mode": "standard"}),
        )

    def wait_until_indexed(self, timeout: float = 30.0) -> None:
        """Block until every message sent so far is settled: none visible, none in flight.

        A message the indexer keeps failing counts as in flight until the redrive policy moves it to the
        dead-letter queue, as it would in AWS.
        """
        assert self._poller is not None, "start() first"
        sqs = self.client("sqs")
        deadline = time.monotonic() + timeout
        idle_checks = 0
        while True:
            counts = sqs.get_queue_attributes(
                QueueUrl=self.queue_url,
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            waiting = sum(int(value) for value in counts.values())
            idle = waiting == 0 and self._poller.in_flight == 0
            idle_checks = idle_checks + 1 if idle else 0
            # Twice in a row, because a message can briefly be counted nowhere: moto moves it to the
            # dead-letter queue in two steps, and counts visible and not visible messages one after the
            # other, while its visibility timeout may run out in between.
            if idle_checks == 2:
                return
            if time.monotonic() > deadline:
                raise IndexingTimeoutError(
                    f"the indexer has not caught up after {timeout:.0f} s: "
                    f"{waiting} message(s) on the queue, {self._poller.in_flight} in flight"
                )
            time.sleep(0.05)

    @contextlib.contextmanager
    def event_source_disabled(self) -> Iterator[None]:
        """Let messages pile up in the queue inside the block, as a disabled event source mapping does."""
        assert self._poller is not None, "start() first"
        self._poller.disable()
        try:
            yield
        finally:
            self._poller.enable()

    @contextlib.contextmanager
    def notifications_disabled(self) -> Iterator[None]:
        """Uploads inside the block send no event at all, as in a bucket that existed before the index.

        The bucket's notification configuration is removed on entry and put back on exit (which sends
        an `s3:TestEvent`, acknowledged and skipped by the indexer).
        """
        s3 = self.client("s3")
        s3.put_bucket_notification_configuration(Bucket=self.bucket, NotificationConfiguration={})
        try:
            yield
        finally:
            self._configure_notifications(s3)

    @contextlib.contextmanager
    def s3_event_clock(self, start: dt.datetime) -> Iterator[None]:
        """Stamp the S3 events of requests made inside the block as if the clock read `start` on entry.

        moto stamps every event with the wall clock, so files cannot be uploaded "yesterday"; this moves
        moto's event clock (wherever its server runs) and lets it advance in real time. On exit the clock
        is as it was on entry.
        """
        if start.tzinfo is None:
            raise ValueError("start must be timezone-aware")
        offset = start.astimezone(dt.UTC) - dt.datetime.now(dt.UTC)
        previous = self._set_event_clock(offset.total_seconds())
        try:
            yield
        finally:
            self._set_event_clock(previous)

    def _set_event_clock(self, offset_seconds: float | None) -> float | None:
        request = urllib.request.Request(  # noqa: S310 (the stack's own moto)
            f"{self.aws_endpoint}{EVENT_CLOCK_PATH}",
            data=json.dumps({"offsetSeconds": offset_seconds}).encode(),
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            previous: float | None = json.loads(response.read())["previousOffsetSeconds"]
        return previous

    # -- set-up ----------------------------------------------------------------------------------------

    def _reset_moto(self) -> None:
        # moto keeps its state per process: a stack started after another one starts empty.
        request = urllib.request.Request(f"{self.aws_endpoint}/moto-api/reset", method="POST")  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (moto's own endpoint)
            response.read()

    def _create_resources(self) -> None:
        sqs = self.client("sqs")
        self.dlq_url = sqs.create_queue(QueueName=DLQ_NAME)["QueueUrl"]
        dlq_arn = _queue_arn(sqs, self.dlq_url)
        self.queue_url = sqs.create_queue(
            QueueName=QUEUE_NAME,
            Attributes={
                "VisibilityTimeout": str(self._visibility_timeout),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": self._max_receive_count}
                ),
            },
        )["QueueUrl"]
        self.queue_arn = _queue_arn(sqs, self.queue_url)

        s3 = self.client("s3")
        s3.create_bucket(Bucket=self.bucket)
        self._configure_notifications(s3)

        dynamodb = self.client("dynamodb")
        placement = self.config.placement
        try:
            dynamodb.create_table(
                **schema.create_table_request(
                    self.table_name,
                    multi_attribute_index=placement.multi_attribute_index,
                    bucket_time_index=self.config.bucket_time_index,
                )
            )
        except dynamodb.exceptions.ResourceInUseException:
            # Never delete a table the stack did not create: the user decides what happens to its items.
            raise TableExistsError(
                f"table {self.table_name} already exists at {self.dynamodb_endpoint}; the local stack "
                "starts with an empty table (run DynamoDB Local with -inMemory, or delete the table)"
            ) from None
        dynamodb.get_waiter("table_exists").wait(TableName=self.table_name)
        if self.config.name_index:
            try:
                dynamodb.create_table(**schema.create_name_table_request(self.config.name_table_name))
            except dynamodb.exceptions.ResourceInUseException:
                raise TableExistsError(
                    f"table {self.config.name_table_name} already exists at {self.dynamodb_endpoint}; the "
                    "local stack starts with an empty name index (run DynamoDB Local with -inMemory, or "
                    "delete the table)"
                ) from None
            dynamodb.get_waiter("table_exists").wait(TableName=self.config.name_table_name)
            # Empty, beside an empty entry table: every entry gets its items from its first write.
            name_index_flag.mark_table_complete(
                dynamodb, self.config.name_table_name, dt.datetime.now(dt.UTC)
            )
        dynamodb.update_time_to_live(
            TableName=self.table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": schema.TTL_ATTRIBUTE},
        )
        # As a deployment does: every writer (the indexer, the admin tools) checks its settings against it.
        DeployedConfigurationStore(dynamodb, self.table_name).write(
            self.bucket, self.deployed_configuration, written_by="local stack", now=now_iso()
        )

        if self.config.event_source is not EventSource.S3:
            # Said once, at start: the local stack does not follow this setting.
            logger.warning(
                "eventSource is %s in cdk.json: the local stack delivers the bucket's S3 event "
                "notifications instead (the indexer reads both shapes the same way; tests/unit covers "
                "EventBridge's)",
                self.config.event_source.value,
            )
        logger.info(
            "shard placement: bucketIndexShards=%d, hotUsers=%s, multiAttributeIndex=%s",
            placement.bucket_shards,
            json.dumps(dict(placement.hot_users), sort_keys=True),
            str(placement.multi_attribute_index).lower(),
        )
        if self.config.user_access:
            if self.config.user_pool_id is not None:
                logger.warning(
                    "userPoolId is set in cdk.json: the local stack makes a pool of its own all the same"
                )
            self.user_pool = create_user_pool(
                self.client("cognito-idp"),
                endpoint=self.aws_endpoint,
                region=self.region,
                admin_group=self.config.admin_group,
            )
        self.secret_arn = self.client("secretsmanager").create_secret(
            Name=SECRET_NAME, SecretString=secrets.token_urlsafe(32)
        )["ARN"]
        logger.info(
            "created bucket %s, queue %s (DLQ after %d receives), table %s at %s, cursor secret",
            self.bucket,
            QUEUE_NAME,
            self._max_receive_count,
            self.table_name,
            self.dynamodb_endpoint,
        )

    def _configure_notifications(self, s3: Any) -> None:
        s3.put_bucket_notification_configuration(
            Bucket=self.bucket,
            NotificationConfiguration={
                "QueueConfigurations": [
                    {"Id": "file-index", "QueueArn": self.queue_arn, "Events": self._notification_events()}
                ]
            },
        )

    def _notification_events(self) -> list[str]:
        """The stack's events, and tag changes when the configuration enriches tags (as the CDK app)."""
        tagging = [TAGGING_NOTIFICATION_EVENT] if "tags" in self.config.enrich else []
        return [*NOTIFICATION_EVENTS, *tagging]

    def _handler_env_base(self) -> dict[str, str]:
        endpoints = {"AWS_ENDPOINT_URL_DYNAMODB": self._dynamodb_endpoint} if self._dynamodb_endpoint else {}
        # Fake credentials: whatever the caller's shell holds, nothing here may reach AWS.
        return {
            **endpoints,
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_ACCESS_KEY_ID": FAKE_CREDENTIAL,
            "AWS_SECRET_ACCESS_KEY": FAKE_CREDENTIAL,
            "AWS_SESSION_TOKEN": FAKE_CREDENTIAL,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }

    def _handler_env(self) -> dict[str, str]:
        env = {
            "TABLE_NAME": self.table_name,
            "BUCKET_NAME": self.bucket,
            "QUEUE_URL": self.queue_url,
            "DEAD_LETTER_QUEUE_URL": self.dlq_url,
            "CURSOR_SECRET_ARN": self.secret_arn,
            "KEY_LAYOUT": self._key_pattern,
            # Where entries live in the indexes: the same variables the CDK app gives the functions.
            **self.config.placement.to_env(),
            "BUCKET_TIME_INDEX": "true" if self.config.bucket_time_index else "false",
            **({"NAME_TABLE_NAME": self.config.name_table_name} if self.config.name_index else {}),
            **({"ENRICH": enrich.to_env(self.config.enrich)} if self.config.enrich else {}),
            **self._sign_in_env(),
            "POWERTOOLS_LOG_LEVEL": self._log_level,
            # No X-Ray daemon and no CloudWatch here: traces would fail, metrics would only be noise.
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": os.environ.get("POWERTOOLS_METRICS_DISABLED", "true"),
            "POWERTOOLS_METRICS_NAMESPACE": os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "S3FileSearch"),
        }
        return env

    def _sign_in_env(self) -> dict[str, str]:
        """The search function's settings of the `/me/...` routes, as the CDK app gives them."""
        if self.user_pool is None or self._web is None:
            return {}
        return {
            "USER_POOL_CLIENT_ID": self.user_pool.client_id,
            "USER_CLAIM": self.config.user_claim,
            "ADMIN_GROUP": self.config.admin_group,
            "MAX_UPLOAD_BYTES": str(self.config.max_upload_bytes),
            "SHARE_LINK_MAX_SECONDS": str(self.config.share_link_max_seconds),
            # Admins' lists name each file's person from the pool.
            "USER_POOL_ID": self.user_pool.pool_id,
            "OWNER_NAME_ATTRIBUTE": self.config.owner_name_attribute,
            "WEB_ORIGIN": self._web.url,
        }


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):  # e.g. a test runner's capture
        return False
    return True


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(MOTO_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _unset_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise RuntimeError("the search handler is not loaded yet")


def _queue_arn(sqs: Any, queue_url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]
    return str(attributes["QueueArn"])


@contextlib.contextmanager
def _handler_environment(values: dict[str, str]) -> Iterator[None]:
    """Set the handlers' environment for the life of the stack; put the caller's back afterwards."""
    saved = dict(os.environ)
    # A service's own endpoint variable wins over AWS_ENDPOINT_URL in boto3: one left in the caller's
    # shell would send the handlers elsewhere.
    for name in [name for name in os.environ if name.startswith("AWS_ENDPOINT_URL_")]:
        del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _cold_start() -> Iterator[None]:
    """Let the handlers import with fresh module state; put back the modules the process had before."""
    from aws_lambda_powertools.utilities import parameters

    saved = {name: module for name, module in sys.modules.items() if _is_function_module(name)}
    for name in saved:
        del sys.modules[name]
    # Powertools keeps its parameter providers (and their boto3 clients) per process.
    parameters.clear_caches()
    try:
        yield
    finally:
        for name in [name for name in sys.modules if _is_function_module(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
        parameters.clear_caches()


def _is_function_module(name: str) -> bool:
    return name.partition(".")[0] in _FUNCTION_PACKAGES


def load_handler(path: str, *, service: str) -> LambdaHandler:
    """Import `module.function` as Lambda does, with the function's own Powertools service name."""
    module_name, _, function_name = path.rpartition(".")
    # Both functions share this process's environment, and in Lambda each has its own service name: set
    # it only while the module imports (when Powertools reads it), so neither sees the other's later.
    previous = os.environ.get("POWERTOOLS_SERVICE_NAME")
    os.environ["POWERTOOLS_SERVICE_NAME"] = service
    try:
        module: ModuleType = importlib.import_module(module_name)
    finally:
        if previous is None:
            del os.environ["POWERTOOLS_SERVICE_NAME"]
        else:
            os.environ["POWERTOOLS_SERVICE_NAME"] = previous
    handler: LambdaHandler = getattr(module, function_name)
    return handler
