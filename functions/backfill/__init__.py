"""Backfill and reconcile batches for the Step Functions state machine: the same writes as the command line."""
