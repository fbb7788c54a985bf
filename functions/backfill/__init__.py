"""Backfill and reconcile batches for the Step Functions state machine: the command line's writes."""
