"""EMMA-X in miniature at the authors' defaults (`python -m benchmarks.emmax.run`)."""
