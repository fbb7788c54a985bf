"""The indexer Lambda: S3 event notifications from SQS into FileMetaData."""
