"""All-pairs cross-lingual alignment (Huang et al. 2024, Table 6): the CLA ablation in which every language's
encoder gets a parallel adapter and all of them train together, on cross-lingual pairs between every two
languages, not only towards the English pivot. With `pivot_adapter` the English encoder adapts too ("All-pairs
incl. EN"); by default it stays fixed, as in the paper's better variant.

The encoders become routes of one sentence-transformers `Router` (each route keeps its own tokenizer), and each
language pair's dataset maps its two columns to the two languages' routes (`router_mapping`), so the stock
trainer and MultipleNegativesRankingLoss train every pair; the adapters are the only trainable weights.
Checkpoints hold each language's adapter files; `model/` is a `ModularEncoder` bundle.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformerTrainer
from sentence_transformers.sentence_transformer.evaluation import SentenceEvaluator

from polyembed.config import ConfigOrigin
from polyembed.data.parallel_sources import check_language
from polyembed.data.paraphrases import CROSS_LINGUAL_PARAPHRASE_DATASETS, paraphrases_between
from polyembed.data.root import data_root
from polyembed.errors import PolyembedError
from polyembed.eval.tasks.retrieval import retrieval_accuracy
from polyembed.methods.base.run import RunFolder
from polyembed.methods.base.trainer import TrainingJob
from polyembed.methods.modular.config import CrossLingualAlignmentConfig, JointAlignmentConfig

logger = logging.getLogger(__name__)

PIVOT = "en"


@dataclass
class JointAlignmentData:
    """Encoder folders per language, training pairs per language pair, dev (sentence, English) per language."""

    encoders: dict[str, str]
    pairs: dict[tuple[str, str], tuple[list[str], list[str]]]
    dev: dict[str, tuple[list[str], list[str]]]

    def describe(self) -> dict[str, Any]:
        return {"encoders": self.encoders, "train_pairs": {f"{a}-{b}": len(p[0]) for (a, b), p in self.pairs.items()},
                "dev_pairs": {code: len(pairs[0]) for code, pairs in self.dev.items()}}


def _encoders(config: JointAlignmentConfig, origin: ConfigOrigin) -> dict[str, str]:
    encoders: dict[str, str] = {}
    for index, spec in enumerate(config.encoders):
        language, sep, folder = spec.partition("=")
        if not sep or not folder.strip():
            raise origin.error("encoders", f"'{spec}': expected LANG=FOLDER", index)
        code = check_language(language.strip(), origin.where("encoders", index))
        if not (Path(folder) / "modules.json").is_file():
            raise origin.error("encoders", f"language '{code}': {folder} is not a sentence-transformers folder "
                                           "(run its SE stage first)", index)
        encoders[code] = folder.strip()
    if PIVOT not in encoders or len(encoders) < 2:
        raise origin.error("encoders", "give the English encoder and at least one other (en=FOLDER de=FOLDER)")
    return encoders


def prepare_pairs(config: JointAlignmentConfig, origin: ConfigOrigin | None = None) -> JointAlignmentData:
    """X-English pairs as the bilingual CLA stage reads them (same sources, dev split and caps), plus X-Y
    paraphrases for every two non-English languages that a multi-parallel source has."""
    from polyembed.methods.modular.cross_lingual_alignment import prepare_alignment

    origin = origin or ConfigOrigin()
    for index, name in enumerate(config.paraphrase_datasets):
        if name not in CROSS_LINGUAL_PARAPHRASE_DATASETS:
            raise origin.error("paraphrase_datasets", f"'{name}' has no cross-lingual paraphrases", index)
    encoders = _encoders(config, origin)
    others = [code for code in encoders if code != PIVOT]
    pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    dev: dict[str, tuple[list[str], list[str]]] = {}
    for code in others:
        try:
            data = prepare_alignment(CrossLingualAlignmentConfig(
                language=code, paraphrase_datasets=list(config.paraphrase_datasets),
                parallel_datasets=list(config.parallel_datasets), max_pairs=config.max_pairs,
                dev_pairs=config.dev_pairs, seed=config.seed, data_root=config.data_root))
        except PolyembedError as err:
            raise PolyembedError(f"all-pairs alignment, language '{code}': {err}") from None
        pairs[(code, PIVOT)] = (data.paraphrases[0] + data.parallel[0], data.paraphrases[1] + data.parallel[1])
        dev[code] = data.dev
    root = data_root(config.data_root) if config.paraphrase_datasets else None
    held_out = {sentence for sentences, _ in dev.values() for sentence in sentences}
    for first, second in itertools.combinations(others, 2):
        found = paraphrases_between(first, second, root, config.paraphrase_datasets) if root else []
        rows = list(dict.fromkeys((a, b) for source in found for a, b in zip(source.anchors, source.positives,
                                                                              strict=True)
                                  if a not in held_out and b not in held_out))
        if config.max_pairs is not None and len(rows) > config.max_pairs:
            rows = random.Random(f"{config.seed}:all-pairs:{first}-{second}").sample(rows, config.max_pairs)
        if rows:
            pairs[(first, second)] = ([a for a, _ in rows], [b for _, b in rows])
    return JointAlignmentData(encoders, pairs, dev)


class JointAlignmentEvaluator(SentenceEvaluator):
    """Dev measure: for each language, retrieval between its held-out sentences (its route) and their English
    translations (the English route), both directions; `mean_accuracy` averages the languages (percent)."""

    def __init__(self, dev: dict[str, tuple[list[str], list[str]]], batch_size: int, name: str = "dev") -> None:
        super().__init__()
        self.dev, self.batch_size, self.name = dev, batch_size, name
        self.primary_metric, self.greater_is_better = "mean_accuracy", True

    def __call__(self, model: Any, output_path: str | None = None, epoch: int = -1, steps: int = -1) -> dict:
        metrics: dict[str, float] = {}
        for code, (sentences, english) in self.dev.items():
            options = {"batch_size": self.batch_size, "normalize_embeddings": True, "convert_to_numpy": True,
                       "show_progress_bar": False}
            embedded = model.encode(sentences, task=code, **options)
            pivot = model.encode(english, task=PIVOT, **options)
            both = retrieval_accuracy(embedded, pivot) + retrieval_accuracy(pivot, embedded)
            metrics[f"{code}_accuracy"] = both / 2
        metrics["mean_accuracy"] = sum(metrics.values()) / len(metrics)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        if hasattr(model, "model_card_data"):
            self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


class JointAlignmentTrainer(SentenceTransformerTrainer):
    """Checkpoints as each adapted language's adapter files (`<lang>/parallel_adapter.*`); the encoders are
    frozen, so loading the adapters restores a checkpoint exactly."""

    def __init__(self, language_encoders: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.language_encoders = language_encoders

    def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
        import torch
        from transformers.trainer import TRAINING_ARGS_NAME

        from polyembed.models.parallel_adapter import parallel_adapter_blocks, save_parallel_adapters

        output_dir = output_dir or self.args.output_dir
        assert output_dir is not None  # polyembed's training arguments always name the folder
        os.makedirs(output_dir, exist_ok=True)
        for code, encoder in self.language_encoders.items():
            if parallel_adapter_blocks(encoder):
                save_parallel_adapters(encoder, Path(output_dir) / code)
        torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))

    def _load_from_checkpoint(self, checkpoint_path: str, model: Any = None) -> None:
        from polyembed.models.parallel_adapter import load_parallel_adapters, parallel_adapter_blocks

        for code, encoder in self.language_encoders.items():
            if parallel_adapter_blocks(encoder):
                load_parallel_adapters(encoder, Path(checkpoint_path) / code)


def build_job(config: JointAlignmentConfig, data: JointAlignmentData, run: RunFolder, show_progress: bool
              ) -> TrainingJob:
    """One Router over the language encoders (adapters on all but a fixed English one), one dataset per
    language pair with its columns routed to the pair's languages, MNRL, dev retrieval per language."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Router
    from sentence_transformers.sentence_transformer.training_args import MultiDatasetBatchSamplers

    from polyembed.device import resolve_device
    from polyembed.methods.base.student import default_prompt, restore_max_seq_length, set_max_seq_length
    from polyembed.models.modular import write_bundle
    from polyembed.models.parallel_adapter import (
        ParallelAdapterConfig,
        add_parallel_adapters,
        freeze_all_but_parallel_adapters,
    )

    encoders: dict[str, Any] = {}
    trainable = 0
    for code, folder in data.encoders.items():
        encoder = SentenceTransformer(folder, device=resolve_device(), local_files_only=True)
        set_max_seq_length(encoder, config.max_seq_length)
        if code != PIVOT or config.pivot_adapter:
            add_parallel_adapters(encoder, ParallelAdapterConfig(config.reduction_factor, config.adapter_scaling))
            trainable += freeze_all_but_parallel_adapters(encoder)
        else:
            for parameter in encoder.parameters():
                parameter.requires_grad = False
        encoders[code] = encoder
    pivot = encoders[PIVOT]
    model = SentenceTransformer(modules=[Router({code: list(e) for code, e in encoders.items()},
                                                default_route=PIVOT)], device=resolve_device())
    model.prompts, model.default_prompt_name = dict(pivot.prompts or {}), pivot.default_prompt_name
    evaluator = JointAlignmentEvaluator(data.dev, config.batch_size)
    before = evaluator(model)
    names = {pair: f"{pair[0]}-{pair[1]}" for pair in data.pairs}
    loss = MultipleNegativesRankingLoss(model, scale=config.mnrl_scale)
    if show_progress:
        counts = ", ".join(f"{names[pair]} {len(rows[0]):,}" for pair, rows in data.pairs.items())
        logger.info(f"all-pairs alignment: {counts} pairs; dev retrieval before {before['dev_mean_accuracy']:.1f}; "
                    f"{trainable:,} adapter parameters train")

    def save_bundle(_: Any, folder: Path) -> None:
        for encoder in encoders.values():  # each saved at its own length, as fit does for a single model
            restore_max_seq_length(encoder, config.inference_max_seq_length)
        write_bundle(Path(folder), encoders, PIVOT)

    return TrainingJob(
        model=model,
        train_dataset={names[pair]: Dataset.from_dict({"anchor": rows[0], "positive": rows[1]})
                       for pair, rows in data.pairs.items()},
        loss=dict.fromkeys(names.values(), loss),
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        multi_dataset_batch_sampler=MultiDatasetBatchSamplers.PROPORTIONAL,
        router_mapping={names[pair]: {"anchor": pair[0], "positive": pair[1]} for pair in data.pairs},
        trainer_class=lambda **options: JointAlignmentTrainer(encoders, **options),
        save_model=save_bundle,
        prompts=default_prompt(pivot),
        details={"alignment": data.describe(), "pivot_adapter": config.pivot_adapter,
                 "trainable_parameters": trainable, "before": before},
    )
