"""polyembed: build multilingual sentence encoders for new and low-resource languages, and prove they work."""

__version__ = "0.1.0"

from polyembed.api import encode, encode_lines, evaluate, load_model, train, train_distill  # noqa: E402
from polyembed.mining.bitext import mine_files  # noqa: E402

__all__ = ["__version__", "encode", "encode_lines", "evaluate", "load_model", "mine_files", "train", "train_distill"]
