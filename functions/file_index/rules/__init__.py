"""Pure models and rules of the index: what an entry, a key, a shard, a term and a cost are.

No module here imports the AWS SDK or does I/O; the build checks it (`.importlinter`)."""
