"""The offline models on the `default` and `full` evaluation suites (`python -m benchmarks.eval_suites.run`)."""
