"""polyembed: build multilingual sentence encoders for new and low-resource languages, and prove they work."""

from polyembed.api import encode, encode_lines, evaluate, load_model, push_to_hub, train, train_distill
from polyembed.mining.bitext import mine_files
from polyembed.version import __version__

__all__ = ["__version__", "encode", "encode_lines", "evaluate", "load_model", "mine_files", "push_to_hub", "train",
           "train_distill"]
