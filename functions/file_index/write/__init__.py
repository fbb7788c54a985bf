"""The write path: S3 events applied to the entries (`writer`), the name index's items (`names`), and
the index built from and checked against the bucket (`repair`, `name_sync`).

Builds on `file_index.store` and `file_index.rules`; never imports `file_index.read`."""
