"""Benchmarks of the grader itself (run on a GPU machine; see class_bench.py)."""
