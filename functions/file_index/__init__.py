"""The index every function shares, by layer (docs/architecture.md):

- `rules`: pure models and rules (the table's names, events, keys, shards, terms, costs); no AWS SDK;
- `store`: the data access, the only code that calls DynamoDB or S3 (the read calls, the writes, the SDK's
  clients, index state, deployed configuration, statistics, the name index's flag), on `rules`;
- `write`: the write path (events into entries, the name index's items, backfill and repair);
- `read`: the read path (a file, the lists, the name and folder lists).

`write` and `read` sit on `store` and `rules` and never import each other; `make lint` checks the imports,
`tests/unit/test_data_access.py` the calls.
"""
