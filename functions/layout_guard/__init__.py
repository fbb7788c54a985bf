"""The deployment's guard of the index layout: a CloudFormation custom resource that runs before the table."""
