"""Benchmarks: figures side by side, printed by `make bench`."""
