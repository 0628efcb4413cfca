"""Helpers for bench/bench_serving.py: workload, HTTP client, servers, statistics, report."""
