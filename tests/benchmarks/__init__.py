"""Benchmarks, run by `make bench` (never by the test suite): tables on stdout, JSON in results/."""
