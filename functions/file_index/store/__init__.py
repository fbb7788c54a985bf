"""Data access: the SDK's clients and settings, and the records kept beside the entries (index state,
deployed configuration, upload statistics), the batch calls' retries and what S3 adds to an entry.

Builds on `file_index.rules` only."""
