"""The package version, in a module of its own so that any layer can record it without importing the
facade (`polyembed/__init__` imports the API, which imports every layer)."""

__version__ = "0.1.0"
