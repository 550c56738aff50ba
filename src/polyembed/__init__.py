"""polyembed: build multilingual sentence encoders for new and low-resource languages, and prove they work."""

from polyembed.api import encode, encode_lines, evaluate, load_model, train, train_distill
from polyembed.mining.bitext import mine_files
from polyembed.version import __version__

__all__ = ["__version__", "encode", "encode_lines", "evaluate", "load_model", "mine_files", "train", "train_distill"]
