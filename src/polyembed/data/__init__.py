"""Data layer: registry of datasets, strict readers, data-root resolution."""

from polyembed.data.registry import DATASETS, DatasetInfo, get_dataset, register_dataset
from polyembed.data.root import data_root, set_data_root
from polyembed.data.types import MultipleChoiceItem, ParallelText, ScoredPairs
from polyembed.errors import DataError, DatasetNotFoundError, PolyembedError, UnknownLanguageError

__all__ = [
    "DATASETS",
    "DataError",
    "DatasetInfo",
    "DatasetNotFoundError",
    "MultipleChoiceItem",
    "ParallelText",
    "PolyembedError",
    "ScoredPairs",
    "UnknownLanguageError",
    "data_root",
    "get_dataset",
    "register_dataset",
    "set_data_root",
]
