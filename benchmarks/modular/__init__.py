"""Modular sentence encoders in miniature, and the studies of their CLA and LA stages
(`python -m benchmarks.modular.run`, `.run_cla`, `.run_la`)."""
