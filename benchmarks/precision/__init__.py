"""What bf16 autocast costs in scores and saves in time on the demo's evaluations
(`python -m benchmarks.precision.run`)."""
