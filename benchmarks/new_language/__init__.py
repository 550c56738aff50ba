"""Bringing a new language: the methods head to head on the same data and minutes
(`python -m benchmarks.new_language.run`)."""
