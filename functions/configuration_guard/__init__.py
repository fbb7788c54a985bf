"""The deployment's guard of the shard placement: a CloudFormation custom resource run before the table."""
