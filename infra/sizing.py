"""How fast the indexer drains the event queue, from its sizing: memory, batch, batching window, pollers.

The arithmetic (the bench prints it again with the CPU per record it measures):

    vCPU share      = min(memory MB / 1,769, 1)       Lambda gives one vCPU at 1,769 MB, in proportion
                                                      below; the handler's Python work runs on one thread
                                                      at a time, so a share above one buys nothing
    per instance    = min(vCPU share / CPU per record, write concurrency / write latency)
    records/s       = maximum concurrency x per instance

With the measured 571 us of CPU per record, 32 writes in flight and 5 ms per conditional write:

| sizing | vCPU share | CPU bound | write bound | per instance | instances | records/s |
|---|---|---|---|---|---|---|
| 0.2.0: 256 MB, 10 pollers | 0.145 | 253/s | 6,400/s | 253/s | 10 | ~2,500 |
| default: 1,769 MB, 10 pollers | 1.0 | 1,751/s | 6,400/s | 1,751/s | 10 | ~17,500 |

The default leaves 75% headroom over 10,000 records/s for what the model leaves out (the invocation's own
overhead, cold starts, slower writes under load) at the same cost per record: a CPU-bound function pays
for memory x time, and time shrinks as memory grows. Batches of 100 amortize each invocation's overhead
over more records; a lone upload still waits at most the 1 s batching window.

Nothing here imports the CDK: the local stack and the bench read it without starting jsii.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer.config import DEFAULT_WRITE_CONCURRENCY

# pydantic validation and the OpenAPI schema make the search's cold start CPU-bound: memory buys CPU.
SEARCH_MEMORY_MB = 512

# Lambda allocates CPU in proportion to memory: 1,769 MB is one vCPU (one vCPU-second per second).
LAMBDA_MB_PER_VCPU = 1769
MIN_MEMORY_MB = 128
MAX_MEMORY_MB = 10_240
# The indexer's CPU per record, DynamoDB stubbed, measured on the bench's stream.
MEASURED_CPU_SECONDS_PER_RECORD = 571e-6
# One conditional PutItem, in the region, as the bench models it.
WRITE_LATENCY_SECONDS = 0.005
# AWS's limits of an SQS event source mapping (standard queue): batch 1-10,000 records, a batching window
# of 0-300 s (at least 1 s for batches above 10), maximum concurrency 2-1,000.
MAX_BATCH_SIZE = 10_000
MAX_UNWINDOWED_BATCH_SIZE = 10
MAX_BATCHING_WINDOW_SECONDS = 300
MIN_MAX_CONCURRENCY = 2
MAX_MAX_CONCURRENCY = 1000
# A full batch must fit in half the indexer's timeout by the model, so slow writes have the other half.
BATCH_TIMEOUT_SHARE = 0.5

DEFAULT_MEMORY_MB = LAMBDA_MB_PER_VCPU
DEFAULT_BATCH_SIZE = 100
DEFAULT_MAX_BATCHING_WINDOW_SECONDS = 1
DEFAULT_MAX_CONCURRENCY = 10


@dataclass(frozen=True, kw_only=True)
class IndexerSizing:
    """The indexer's memory and its event source's batch, batching window and maximum concurrency."""

    memory_mb: int = DEFAULT_MEMORY_MB
    batch_size: int = DEFAULT_BATCH_SIZE
    max_batching_window_seconds: int = DEFAULT_MAX_BATCHING_WINDOW_SECONDS
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY

    @property
    def vcpu_share(self) -> float:
        return min(self.memory_mb / LAMBDA_MB_PER_VCPU, 1.0)

    def batch_cpu_seconds(self, cpu_seconds_per_record: float = MEASURED_CPU_SECONDS_PER_RECORD) -> float:
        """CPU time of one full batch at this memory size."""
        return self.batch_size * cpu_seconds_per_record / self.vcpu_share

    def records_per_second_per_instance(
        self,
        cpu_seconds_per_record: float = MEASURED_CPU_SECONDS_PER_RECORD,
        *,
        write_concurrency: int = DEFAULT_WRITE_CONCURRENCY,
        write_latency_seconds: float = WRITE_LATENCY_SECONDS,
    ) -> float:
        cpu_bound = self.vcpu_share / cpu_seconds_per_record
        write_bound = write_concurrency / write_latency_seconds
        return min(cpu_bound, write_bound)

    def records_per_second(
        self,
        cpu_seconds_per_record: float = MEASURED_CPU_SECONDS_PER_RECORD,
        *,
        write_concurrency: int = DEFAULT_WRITE_CONCURRENCY,
        write_latency_seconds: float = WRITE_LATENCY_SECONDS,
    ) -> float:
        """Records indexed per second with every poller busy (the module docstring's arithmetic)."""
        return self.max_concurrency * self.records_per_second_per_instance(
            cpu_seconds_per_record,
            write_concurrency=write_concurrency,
            write_latency_seconds=write_latency_seconds,
        )
