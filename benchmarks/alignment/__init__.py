"""Word aligners on the gold sets: AER, precision, recall and speed (`python -m benchmarks.alignment.run`)."""
