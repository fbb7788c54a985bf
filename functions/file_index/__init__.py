"""The data-access layer: the only package that talks to DynamoDB.

`schema` names the table and its indexes (read by the CDK stack, the local stack and the tests alike),
`writer` applies S3 events to the table, `reader` answers the search queries.
"""
