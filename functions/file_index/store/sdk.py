"""The AWS SDK settings (`SdkSettings`) that build every boto3 client of the functions and admin tools,
and the clients the writers use (`dynamodb_client`, `s3_client`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from botocore.config import Config

from file_index.rules.config import positive_int, positive_seconds

# boto3 ships no type information for its generated clients.
DynamoDBClient = Any
S3Client = Any

_serializer = TypeSerializer()

# The SDK's back-off before retry n (1-based) is at most 2**(n-1) s for throttling (botocore's standard
# mode; other errors wait far less), capped at 20 s.
_MAX_BACKOFF_SECONDS = 20.0
# Timeouts above this are no tighter than botocore's own default of 60 s.
MAX_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class SdkSettings:
    """Retries, timeouts and pool size of a boto3 client: every client the functions and the admin tools
    make is built by `client` or `resource`, so none runs on botocore's defaults by accident.

    botocore's defaults are 60 s to connect and 60 s per read, legacy retries and a pool of 10: a stalled
    connection would outlast a Lambda invocation and a read fan-out would wait for connections. With these
    bounds one call fails within `worst_call_seconds`, however it stalls. `max_connections` is the number of
    threads that use one client at once (the writers, a search's shard fan-out).
    """

    max_attempts: int = 3  # the first attempt included
    max_connections: int = 32
    connect_timeout: float = 2.0
    read_timeout: float = 5.0
    signature_version: str | None = None  # "s3v4" for presigned S3 URLs in every region

    def botocore_config(self) -> Config:
        return Config(
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            max_pool_connections=self.max_connections,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            signature_version=self.signature_version,
        )

    def client(self, service: str, session: boto3.session.Session | None = None) -> Any:
        """A client of `session`, or of boto3's default session when None (as `boto3.client`).

        Clients are thread-safe; sessions are not: a client made on a worker thread needs a session of its
        own. boto3 reads AWS_ENDPOINT_URL(_<SERVICE>), which is how local runs reach emulators.
        """
        if session is None:
            return boto3.client(service, config=self.botocore_config())
        return session.client(service, config=self.botocore_config())

    def resource(self, service: str, session: boto3.session.Session | None = None) -> Any:
        """A resource (`dynamodb` Table) of `session` or of boto3's default session, with these settings."""
        if session is None:
            return boto3.resource(service, config=self.botocore_config())
        return session.resource(service, config=self.botocore_config())

    @property
    def worst_call_seconds(self) -> float:
        """The longest one SDK call can take: every attempt stalls to its timeouts, every back-off is full
        (without a server's retry-after hint, which DynamoDB and S3 do not send)."""
        backoff = sum(min(2.0 ** (retry - 1), _MAX_BACKOFF_SECONDS) for retry in range(1, self.max_attempts))
        return self.max_attempts * (self.connect_timeout + self.read_timeout) + backoff

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, max_connections: int) -> SdkSettings:
        """`DYNAMODB_MAX_ATTEMPTS`, `SDK_CONNECT_TIMEOUT_SECONDS`, `SDK_READ_TIMEOUT_SECONDS`."""
        return cls(
            max_attempts=positive_int(env, "DYNAMODB_MAX_ATTEMPTS", cls.max_attempts, maximum=10),
            max_connections=max_connections,
            connect_timeout=positive_seconds(
                env, "SDK_CONNECT_TIMEOUT_SECONDS", cls.connect_timeout, maximum=MAX_TIMEOUT_SECONDS
            ),
            read_timeout=positive_seconds(
                env, "SDK_READ_TIMEOUT_SECONDS", cls.read_timeout, maximum=MAX_TIMEOUT_SECONDS
            ),
        )


def dynamodb_client(sdk: SdkSettings | None = None) -> DynamoDBClient:
    """A DynamoDB client for concurrent writers (`sdk`: retries, timeouts and a pool per writer).

    A session of its own, as sessions are not thread-safe (the client is). boto3 picks up AWS_ENDPOINT_URL
    (or AWS_ENDPOINT_URL_DYNAMODB), which is how local runs reach moto or DynamoDB Local.
    """
    client: DynamoDBClient = (sdk or SdkSettings()).client("dynamodb", boto3.session.Session())
    return client


def s3_client(sdk: SdkSettings | None = None) -> S3Client:
    """An S3 client for the writer's HEAD lookups, with the same settings."""
    client: S3Client = (sdk or SdkSettings()).client("s3", boto3.session.Session())
    return client


def serialize(values: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values as DynamoDB attribute values, for the low-level client."""
    return {name: _serializer.serialize(value) for name, value in values.items()}
