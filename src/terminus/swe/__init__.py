"""Real repositories: SWE-bench-family instances as repair benchmarks, grading, and corpus tasks."""
