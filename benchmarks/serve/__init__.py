"""Serving under load: polyembed serve against Infinity, queue limits, call costs, malformed requests and hostile
clients (`python -m benchmarks.serve.run`, `.run_hostile`; the load generator: `.loadgen`)."""
