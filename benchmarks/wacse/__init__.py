"""WACSE in miniature: its ablation, budget curve, dev choices and step profile
(`python -m benchmarks.wacse.run`, `.run_profile`)."""
