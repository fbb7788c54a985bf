"""Data access, the only code of `file_index` that calls DynamoDB or S3: the read calls (`queries`), the
entries' and the name table's writes, the SDK's clients and settings, and the records kept beside the
entries (index state, deployed configuration, upload statistics), the batch calls' retries and what S3
adds to an entry.

Builds on `file_index.rules` only."""
