"""Training throughput: `polyembed train distill` against a plain sentence-transformers script doing the same job,
in one process (`python -m benchmarks.training_throughput.run`)."""
