"""The CDK app: one stack of a few constructs."""
