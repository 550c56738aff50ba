"""The CLA stage (Huang et al. 2024, section 3.2): a parallel adapter beside every feed-forward block of one
language's encoder, trained to bring its sentences to the frozen English pivot's embedding of their English
counterparts. Batches alternate between cross-lingual paraphrases (MultipleNegativesRankingLoss; by default
the authors' cross-model batches, whose anchors and candidates mix the encoder and the pivot) and parallel
sentences (cosine loss), through sentence-transformers' multi-dataset training; how many of each per cycle is
configurable, and either kind can be left out (paraphrases only is the arXiv paper's CLA). The default schedule
is the authors': a constant learning rate and the final model; picking a checkpoint by a dev measure is an option.

Only the adapters train, so with the adapters off the encoder is exactly what it was (the paper's point:
alignment never disturbs monolingual quality). The pivot is frozen, so its embeddings of the English side are
computed once (kept in the embedding store) and serve as labels. Checkpoints hold the encoder without its
adapters plus the adapter files; `model/` is the same layout, which a `ModularEncoder` bundle takes as one
language's folder.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.base.sampler import MultiDatasetDefaultBatchSampler
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from polyembed.config import ConfigOrigin
from polyembed.data.parallel_sources import ParallelFileSpec, check_language, load_parallel_sources
from polyembed.data.paraphrases import (
    CROSS_LINGUAL_PARAPHRASE_DATASETS,
    ParaphrasePairs,
    cross_lingual_paraphrases,
    read_paraphrase_file,
)
from polyembed.data.readers.kardes import KARDES_FOLDERS
from polyembed.data.readers.sts import STSB_MULTI_MT_LANGUAGES, read_kardes_sts, read_stsb_multi_mt
from polyembed.data.registry import get_dataset
from polyembed.data.root import data_root
from polyembed.data.types import ScoredPairs
from polyembed.errors import NoTrainingDataError
from polyembed.eval.tasks.retrieval import retrieval_accuracy
from polyembed.eval.tasks.sts import spearman
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import TrainingJob
from polyembed.methods.modular.config import CrossLingualAlignmentConfig
from polyembed.methods.modular.stage import check_stage_start
from polyembed.models.encoder import normalize_rows

logger = logging.getLogger(__name__)

SENTENCE_COLUMN, LABEL_COLUMN = "sentence", "label"


@dataclass
class AlignmentData:
    """(sentence in the language, English counterpart) pairs of both kinds, and the dev pairs."""

    language: str
    paraphrases: tuple[list[str], list[str]]
    parallel: tuple[list[str], list[str]]
    dev: tuple[list[str], list[str]]
    sources: list[dict[str, Any]]
    dev_sts: tuple[ScoredPairs, ScoredPairs] | None = None
    """en-X STS dev pairs (English first, then the language first) when the checkpoint is chosen by STS."""

    def describe(self) -> dict[str, Any]:
        return {"language": self.language, "paraphrase_pairs": len(self.paraphrases[0]),
                "parallel_pairs": len(self.parallel[0]), "dev_pairs": len(self.dev[0]), "sources": self.sources,
                "dev_sts_pairs": len(self.dev_sts[0]) if self.dev_sts else 0}


def _sample(pairs: list[tuple[str, str]], limit: int | None, seed: str) -> list[tuple[str, str]]:
    if limit is None or len(pairs) <= limit:
        return pairs
    return [pairs[i] for i in sorted(random.Random(seed).sample(range(len(pairs)), limit))]


def cross_lingual_sts_dev(language: str, root: Any) -> tuple[ScoredPairs, ScoredPairs] | None:
    """The language's en-X STS dev pairs in both directions (stsb-multi-mt, else Kardes STS), or None."""
    if language in STSB_MULTI_MT_LANGUAGES:
        folder = get_dataset("stsb-multi-mt").path(root)
        return read_stsb_multi_mt(folder, "en", "dev", language), read_stsb_multi_mt(folder, language, "dev", "en")
    if language in KARDES_FOLDERS:
        folder = get_dataset("kardes-nlu").path(root)
        return (read_kardes_sts(folder, "en", language, split="dev"),
                read_kardes_sts(folder, language, "en", split="dev"))
    return None


def prepare_alignment(config: CrossLingualAlignmentConfig, origin: ConfigOrigin | None = None) -> AlignmentData:
    """Both kinds of pairs for the language, checked before any model loads; dev pairs come from the parallel
    ones (seeded), so dev retrieval measures translation against the pivot."""
    origin = origin or ConfigOrigin()
    if not config.language:
        raise origin.error("language", "no language given: set language (e.g. kk)")
    language = check_language(config.language, origin.where("language"))
    check_stage_start(config.student, language, "CLA", "`polyembed train modular se`", origin.where("student"))
    if language == "en":
        raise origin.error("language", "English is the pivot: it gets no alignment adapter")
    check_stage_start(config.pivot, "en", "CLA", "`polyembed train modular se --language en`", origin.where("pivot"))
    if config.paraphrase_batches == 0 and config.parallel_batches == 0:
        raise origin.error("parallel_batches", "paraphrase_batches and parallel_batches are both 0: nothing trains")
    if config.batch_mixing == "proportional" and max(config.paraphrase_batches, config.parallel_batches) > 1:
        raise origin.error("batch_mixing", "'proportional' mixes by dataset size; paraphrase_batches and "
                           "parallel_batches above 1 set a round-robin cycle: use batch_mixing: round-robin")
    for index, name in enumerate(config.paraphrase_datasets):
        if name not in CROSS_LINGUAL_PARAPHRASE_DATASETS:
            raise origin.error("paraphrase_datasets", f"'{name}' has no cross-lingual paraphrases (these have: "
                               f"{', '.join(CROSS_LINGUAL_PARAPHRASE_DATASETS)})", index)
    # which languages have an en-X STS dev split is the registry's to say: no data root is needed to refuse one
    if config.dev_measure == "sts" and language not in {*STSB_MULTI_MT_LANGUAGES, *KARDES_FOLDERS}:
        raise origin.error("dev_measure", f"language '{config.language}': no en-{language} STS dev split here "
                           f"(stsb-multi-mt: {', '.join(c for c in STSB_MULTI_MT_LANGUAGES if c != 'en')}; "
                           f"Kardes STS: {', '.join(KARDES_FOLDERS)}); use dev_measure: retrieval")
    needs_root = config.paraphrase_datasets or config.parallel_datasets or config.dev_measure == "sts"
    root = data_root(config.data_root) if needs_root else None
    dev_sts = cross_lingual_sts_dev(language, root) if config.dev_measure == "sts" else None
    found: list[ParaphrasePairs] = []
    if config.paraphrase_datasets and root is not None:
        found += cross_lingual_paraphrases(language, root, list(config.paraphrase_datasets))
    for path in config.paraphrase_files:
        rows = read_paraphrase_file(path)
        found.append(ParaphrasePairs("file", language, [a for a, _ in rows], [b for _, b in rows], str(path)))
    paraphrases = list(dict.fromkeys((a, b) for s in found for a, b in zip(s.anchors, s.positives, strict=True)))
    try:
        sources = load_parallel_sources(
            [language], list(config.parallel_datasets), root,
            files=[ParallelFileSpec.parse(f"{language}={path}") for path in config.parallel_files],
        )
    except NoTrainingDataError:  # judged below, with the parallel files counted in
        sources = []
    parallel = list(dict.fromkeys((o, e) for s in sources for e, o in zip(s.english, s.other, strict=True)))
    if len(parallel) < 10:
        raise origin.error(
            "language", f"language '{config.language}': {len(parallel)} parallel pairs in "
            f"{', '.join(config.parallel_datasets) or 'no datasets'} and {len(config.parallel_files)} parallel "
            "files; CLA needs parallel sentences with English (parallel_files: English<TAB>sentence)"
        )
    if config.parallel_batches == 0 and not paraphrases:
        raise origin.error(
            "paraphrase_datasets", f"language '{config.language}': parallel_batches is 0 (paraphrases only) but "
            f"{', '.join(config.paraphrase_datasets) or 'no datasets'} and {len(config.paraphrase_files)} paraphrase "
            "files give no cross-lingual paraphrase pairs"
        )
    random.Random(f"{config.seed}:cla:{language}").shuffle(parallel)
    dev_size = min(config.dev_pairs, len(parallel) // 5)
    dev, parallel = parallel[:dev_size], parallel[dev_size:]
    dev_english = {e for _, e in dev}
    paraphrases = [(o, e) for o, e in paraphrases if e not in dev_english]
    parallel = _sample(parallel, config.max_pairs, f"{config.seed}:cla-parallel")
    paraphrases = _sample(paraphrases, config.max_pairs, f"{config.seed}:cla-paraphrase")
    described = [{"name": s.name, "kind": "paraphrase", "pairs": len(s), "origin": s.origin} for s in found]
    described += [{"name": s.name, "kind": "parallel", "pairs": len(s), "origin": s.origin} for s in sources]
    return AlignmentData(
        language, ([o for o, _ in paraphrases], [e for _, e in paraphrases]),
        ([o for o, _ in parallel], [e for _, e in parallel]), ([o for o, _ in dev], [e for _, e in dev]), described,
        dev_sts,
    )


class PivotAlignmentEvaluator(SentenceEvaluator):
    """Dev measure: retrieval between the encoder's embeddings of held-out sentences (adapters as they are) and
    the pivot's embeddings of their English translations, both directions (`mean_accuracy`, percent), and the
    mean cosine of each pair (`mean_cosine`). Given en-X STS pairs and the pivot's embeddings of their English
    sides, also `sts_spearman`: Spearman x100 of the cross-lingual cosines, both directions averaged (the
    primary metric then, since retrieval cannot see whether graded similarities survive)."""

    def __init__(
        self, sentences: list[str], pivot_embeddings: np.ndarray, batch_size: int, name: str = "dev",
        sts_pairs: tuple[ScoredPairs, ScoredPairs] | None = None,
        sts_pivot_embeddings: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        super().__init__()
        self.sentences = sentences
        self.pivot = normalize_rows(pivot_embeddings)
        self.batch_size = batch_size
        self.name = name
        self.sts_pairs = sts_pairs
        self.sts_pivot = tuple(normalize_rows(m) for m in sts_pivot_embeddings) if sts_pivot_embeddings else None
        self.primary_metric = "sts_spearman" if sts_pairs else "mean_accuracy"
        self.greater_is_better = True

    def _encode(self, model: Any, sentences: list[str]) -> np.ndarray:
        return model.encode(sentences, batch_size=self.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        embedded = self._encode(model, self.sentences)
        metrics = {
            "to_pivot_accuracy": retrieval_accuracy(embedded, self.pivot),
            "from_pivot_accuracy": retrieval_accuracy(self.pivot, embedded),
            "mean_cosine": float((embedded * self.pivot).sum(axis=1).mean()),
        }
        metrics["mean_accuracy"] = (metrics["to_pivot_accuracy"] + metrics["from_pivot_accuracy"]) / 2
        if self.sts_pairs and self.sts_pivot:
            forward, backward = self.sts_pairs  # English sentence1 with X sentence2; X sentence1 with English s2
            other = self._encode(model, forward.sentences2 + backward.sentences1)
            cosines = (np.einsum("ij,ij->i", self.sts_pivot[0], other[: len(forward)]),
                       np.einsum("ij,ij->i", other[len(forward):], self.sts_pivot[1]))
            metrics["sts_spearman"] = float(np.mean([spearman(c, pairs.scores) for c, pairs in zip(
                cosines, self.sts_pairs, strict=True)]))
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


class CycleBatchSampler(MultiDatasetDefaultBatchSampler):
    """Round robin with a ratio: each cycle takes `counts[i]` batches of dataset i, in order, for as many whole
    cycles as every dataset can fill (counts 1, 1 is sentence-transformers' round robin). Why: the paper
    alternates one paraphrase and one parallel batch and leaves the ratio untuned; this lets it be tuned."""

    def __init__(self, dataset: Any, batch_samplers: list[Any], counts: tuple[int, ...], generator: Any = None,
                 seed: int = 0) -> None:
        super().__init__(dataset, batch_samplers, generator=generator, seed=seed)
        if len(counts) != len(batch_samplers) or min(counts) < 1:
            raise ValueError(f"need one count >= 1 per dataset, got {counts} for {len(batch_samplers)} datasets")
        self.counts = tuple(counts)

    def __iter__(self) -> Iterator[list[int]]:
        if self.generator is not None and self.seed is not None:
            self.generator.manual_seed(self.seed + self.epoch)
        offsets = [0, *self.dataset.cumulative_sizes]  # where each dataset starts in the concatenation
        batches = [iter(sampler) for sampler in self.batch_samplers]
        for _ in range(len(self) // sum(self.counts)):
            for index, count in enumerate(self.counts):
                for _ in range(count):
                    yield [row + offsets[index] for row in next(batches[index])]

    def __len__(self) -> int:
        return min(len(sampler) // count for sampler, count in zip(self.batch_samplers, self.counts, strict=True)) \
            * sum(self.counts)


class ParallelAdapterTrainer(SentenceTransformerTrainer):
    """Checkpoints as the plain encoder plus adapter files; loading one (resume, best model at the end) loads
    the adapter weights only, which is exact because the encoder itself is frozen."""

    def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
        import torch
        from transformers.trainer import TRAINING_ARGS_NAME

        from polyembed.models.parallel_adapter import save_with_parallel_adapters

        output_dir = output_dir or self.args.output_dir
        assert output_dir is not None  # polyembed's training arguments always name the folder
        os.makedirs(output_dir, exist_ok=True)
        save_with_parallel_adapters(self.model, output_dir)
        torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))

    def _load_from_checkpoint(self, checkpoint_path: str, model: Any = None) -> None:
        from polyembed.models.parallel_adapter import load_parallel_adapters

        load_parallel_adapters(self.model, checkpoint_path)


def build_job(
    config: CrossLingualAlignmentConfig, data: AlignmentData, run: RunFolder, show_progress: bool
) -> TrainingJob:
    """The encoder with trainable parallel adapters, pivot embeddings as labels, the two losses on their own
    datasets, and dev retrieval against the pivot (also measured once before training)."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.training_args import MultiDatasetBatchSamplers

    from polyembed.methods.base.student import default_prompt, set_max_seq_length
    from polyembed.methods.modular.losses import (
        CrossModelMultipleNegativesRankingLoss,
        PivotCosineLoss,
        PivotMultipleNegativesRankingLoss,
    )
    from polyembed.models.embedding_cache import EmbeddingStore
    from polyembed.models.loading import as_sentence_transformer, load_model
    from polyembed.models.parallel_adapter import (
        ParallelAdapterConfig,
        add_parallel_adapters,
        freeze_all_but_parallel_adapters,
        save_with_parallel_adapters,
    )

    pivot = EmbeddingStore(load_model(config.pivot))
    english = list(dict.fromkeys(data.paraphrases[1] + data.parallel[1] + data.dev[1]))
    if show_progress:
        logger.info(f"pivot {config.pivot}: {len(english):,} English sentences to embed "
                    f"({sum(1 for s in english if s not in pivot):,} not cached)")
    pivot.embed(english, show_progress_bar=show_progress)

    model, _ = as_sentence_transformer(load_model(config.student))
    set_max_seq_length(model, config.max_seq_length)
    sts_english = (data.dev_sts[0].sentences1, data.dev_sts[1].sentences2) if data.dev_sts else None
    evaluator = PivotAlignmentEvaluator(
        data.dev[0], pivot.embed(data.dev[1], show_progress_bar=False), config.batch_size, sts_pairs=data.dev_sts,
        sts_pivot_embeddings=(pivot.embed(sts_english[0], show_progress_bar=False),
                              pivot.embed(sts_english[1], show_progress_bar=False)) if sts_english else None,
    )
    before = evaluator(model)
    total = sum(p.numel() for p in model.parameters())
    add_parallel_adapters(model, ParallelAdapterConfig(config.reduction_factor, config.adapter_scaling))
    trainable = freeze_all_but_parallel_adapters(model)

    def labelled(sentences: list[str], counterparts: list[str]) -> Any:
        labels = pivot.embed(counterparts, show_progress_bar=False)
        return Dataset.from_dict({SENTENCE_COLUMN: sentences, LABEL_COLUMN: labels.tolist()})

    datasets, losses, counts = {}, {}, []
    if data.paraphrases[0] and config.paraphrase_batches:
        datasets["paraphrase"] = labelled(*data.paraphrases)
        paraphrase_loss = {"cross-model": CrossModelMultipleNegativesRankingLoss,
                           "pivot": PivotMultipleNegativesRankingLoss}[config.paraphrase_loss]
        losses["paraphrase"] = paraphrase_loss(model, scale=config.mnrl_scale)
        counts.append(config.paraphrase_batches)
    if config.parallel_batches:
        datasets["parallel"] = labelled(*data.parallel)
        losses["parallel"] = PivotCosineLoss(model, squared=config.parallel_loss == "squared")
        counts.append(config.parallel_batches)
    if show_progress:
        logger.info(f"alignment ({data.language}): {len(data.paraphrases[0]):,} paraphrase and "
                    f"{len(data.parallel[0]):,} parallel pairs, {len(data.dev[0]):,} dev; trains on "
                    f"{' and '.join(datasets)} batches; dev retrieval before {before['dev_mean_accuracy']:.1f}"
                    + (f", en-{data.language} dev STS before {before['dev_sts_spearman']:.1f}" if data.dev_sts else "")
                    + f"; {trainable:,} adapter parameters train")
    mixing: Any = {"round-robin": MultiDatasetBatchSamplers.ROUND_ROBIN,
                   "proportional": MultiDatasetBatchSamplers.PROPORTIONAL}[config.batch_mixing]
    if config.batch_mixing == "round-robin" and max(counts) > 1:
        mixing = partial(CycleBatchSampler, counts=tuple(counts))
    return TrainingJob(
        model=model,
        train_dataset=datasets,
        loss=losses,
        evaluator=evaluator,
        best_metric="eval_dev_sts_spearman" if data.dev_sts else "eval_dev_mean_accuracy",
        multi_dataset_batch_sampler=mixing,
        trainer_class=ParallelAdapterTrainer,
        save_model=save_with_parallel_adapters,
        prompts=default_prompt(model),
        details={"alignment": data.describe(), "batches_per_cycle": dict(zip(datasets, counts, strict=True)),
                 "trainable_parameters": trainable, "model_parameters": total, "before": before},
    )
