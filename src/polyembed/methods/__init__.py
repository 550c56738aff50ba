"""Training methods, one folder each with the same files: config.py (options), losses.py, train.py."""
