"""Training methods, one folder each with the same files: `__init__.py` (registration), `config.py`
(options), `losses.py`, `train.py` (prepare + build); the shared layer is `methods/base/`."""
