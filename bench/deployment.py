"""The default deployment, as `cdk synth` would build it from the repository's `cdk.json`.

The benchmarks that model the deployed system (write cost, pipeline throughput) read its settings through
the CDK app's own configuration reader (`infra.config.StackConfig.from_cdk_json`), so a setting changed in
`cdk.json` changes the figures, and a figure can never describe a default the app does not deploy.
"""

from __future__ import annotations

from file_index.rules.placement import ShardPlacement
from infra.config import StackConfig
from infra.sizing import IndexerSizing


def stack_config() -> StackConfig:
    return StackConfig.from_cdk_json()


def shard_placement() -> ShardPlacement:
    """Where the default deployment places entries (bucket shards, hot users, Z-order index)."""
    return stack_config().placement


def indexer_sizing() -> IndexerSizing:
    """The default deployment's indexer memory, batch, batching window and maximum concurrency."""
    return stack_config().indexer_sizing
