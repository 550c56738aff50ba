"""The bitext every parallel-data method reads: registry datasets plus the user's own files, validated with
file:line errors before any model loads, split into training sources and held-out dev sources, plus
English-X stsb-multi-mt dev pairs for a dev STS score."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyembed.config import ConfigOrigin, validate_config
from polyembed.data.parallel_sources import (
    ParallelFileSpec,
    ParallelSource,
    check_training_datasets,
    load_parallel_sources,
    split_dev,
)
from polyembed.data.readers.sts import read_stsb_multi_mt
from polyembed.data.registry import get_dataset
from polyembed.data.root import data_root
from polyembed.errors import PolyembedError
from polyembed.languages import normalize_language
from polyembed.methods.base.config import BitextConfig

STSB_MULTI_MT_LANGUAGES = tuple(code for code in get_dataset("stsb-multi-mt").languages if code != "en")
"""stsb-multi-mt's non-English languages, from the registry: every one is row-aligned with English (ja
included, checked on all three splits), so each gives English-X pairs."""


@dataclass
class Bitext:
    """Validated bitext of a run: training sources (balanced in batches) and held-out dev sources."""

    train: list[ParallelSource]
    dev: list[ParallelSource]
    dev_sts: tuple[list[str], list[str], list[float]] | None = None

    def describe(self) -> list[dict[str, Any]]:
        """One row per source, for the summary and the report."""
        dev = {(d.name, d.language): len(d) for d in self.dev}
        return [
            {
                "source": s.name,
                "language": s.language,
                "train_pairs": len(s),
                "dev_pairs": dev.get((s.name, s.language), 0),
                "origin": s.origin,
            }
            for s in self.train
        ]


def prepare_bitext(config: BitextConfig, origin: ConfigOrigin | None = None) -> Bitext:
    """Read, validate and split all bitext before any model is loaded (errors name file and line)."""
    origin = origin or ConfigOrigin()
    validate_config(config, origin)  # types, choices and ranges, for configs built in Python too
    if not config.languages and not config.parallel_files:
        raise origin.error("languages", "no languages and no parallel files: nothing to train on")
    check_training_datasets(config.datasets)  # a mistyped name first, with or without a data root
    try:
        root: Path | None = data_root(config.data_root)
    except PolyembedError:
        if config.datasets or config.data_root is not None:
            raise
        root = None  # only the user's own bitext: no dataset folder needed (and no dev STS)
    files = parallel_file_specs(config, origin)
    sources = load_parallel_sources(
        config.languages,
        config.datasets,
        root,
        files=files,
        max_pairs_per_source=config.max_pairs_per_source or None,
        seed=config.seed,
        language_origin=lambda i: origin.where("languages", i),
    )
    train, dev = split_dev(sources, config.dev_pairs_per_source, config.seed)
    trained = list(dict.fromkeys(source.language for source in train))  # the user's files' languages too
    return Bitext(train, dev, _dev_sts(config, trained, root) if config.dev_sts_pairs > 0 and root else None)


def parallel_file_specs(config: BitextConfig, origin: ConfigOrigin) -> list[ParallelFileSpec]:
    """The config's `parallel_files`, parsed; a malformed one is an error naming the option and its item."""
    files = []
    for index, spec in enumerate(config.parallel_files):
        try:
            files.append(ParallelFileSpec.parse(spec))
        except PolyembedError as err:
            raise origin.error("parallel_files", str(err), index) from err
    return files


def _dev_sts(config: BitextConfig, trained: list[str], root: Path) -> tuple[list[str], list[str], list[float]] | None:
    """English-X stsb-multi-mt dev pairs for the trained languages it covers, split evenly, scores in [0, 1]."""
    languages = list(dict.fromkeys(normalize_language(code) for code in trained))
    covered = [code for code in languages if code in STSB_MULTI_MT_LANGUAGES]
    folder = root / get_dataset("stsb-multi-mt").folder
    if not covered or not folder.is_dir():
        return None
    per_language = max(1, config.dev_sts_pairs // len(covered))
    first: list[str] = []
    second: list[str] = []
    scores: list[float] = []
    for code in covered:
        pairs = read_stsb_multi_mt(folder, "en", "dev", code)
        first += pairs.sentences1[:per_language]
        second += pairs.sentences2[:per_language]
        scores += [score / 5.0 for score in pairs.scores[:per_language]]
    return first, second, scores
