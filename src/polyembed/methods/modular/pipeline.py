"""The whole modular recipe for a list of languages: vocabulary -> LA -> SE per language, SE for the English
pivot, CLA per non-English language against it, then one `ModularEncoder` bundle.

Each stage is an ordinary run folder (`OUTPUT_DIR/<lang>/<stage>/`), so the pipeline resumes where it stopped:
a stage with a training.json is done and skipped, a stage folder without one is resumed from its last
checkpoint. The English pivot gets its vocabulary step and SE only (the base model is strongest in English; the
paper's LA step is about languages the base model serves badly). `pipeline.json` records each stage's wall time,
peak memory and dev result, and each language encoder's parameters against the base model's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from polyembed.config import ConfigOrigin, Options, option
from polyembed.data.parallel_sources import check_language
from polyembed.device import resolve_device
from polyembed.environment import require
from polyembed.errors import PolyembedError, argument
from polyembed.languages import normalize_language
from polyembed.outputs import atomic_write

PIVOT = "en"
STAGES = ("la", "se", "cla")
SUMMARY_FILE = "pipeline.json"
BUNDLE_DIR = "bundle"


PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {"la_steps": 3, "se_steps": 3, "cla_steps": 3, "batch_size": 8, "max_seq_length": 32,
              "max_pairs": 64, "dev_pairs": 16},
}
"""Named option sets; a preset changes only the options left at their defaults (explicit flags win). 'smoke':
every stage for a few steps on a few pairs, the whole path in minutes on a CPU."""


@dataclass
class ModularPipelineConfig(Options):
    """Options of `polyembed train modular pipeline` (each stage's own options keep their defaults)."""

    RENAMED_OPTIONS = MappingProxyType({"base": "student"})
    """Old YAML keys, read as their new names with a warning (`build_config`): `student` is the name every
    training method gives the model it starts from."""


    preset: Literal["none", "smoke"] = option(
        "none", "'smoke': a few steps and pairs per stage, to check the whole path in minutes (explicit options "
        "win over the preset's)."
    )
    languages: list[str] = option(["de"], "Languages to build encoders for (English, the pivot, is always built).")
    student: str = option("me5-small", "The multilingual model every language encoder starts from (name or folder).")
    vocabulary: Literal["keep", "prune", "new"] = option(
        "prune", "Each language encoder's vocabulary: the student's ('keep'), pruned to the tokens the "
        "language's text uses ('prune'), or a new tokenizer with FOCUS-initialised embeddings ('new')."
    )
    vocabulary_size: int = option(50000, "Tokens of a 'new' vocabulary (paper: 50k).", minimum=100)
    adapter: Literal["lora", "full"] = option("lora", "LA and SE: LoRA adapters (ACL 2025) or full tuning (arXiv).")
    skip_la: list[str] = option(
        [], "Languages whose encoder leaves out language adaptation (SE starts from the vocabulary step's model); "
        "'all' for every language. Where the student already serves a language, LA can cost more alignment "
        "than it brings (benchmarks/modular_la.py measures it per language on dev)."
    )
    la_steps: int = option(500, "Optimizer steps of each LA stage.", minimum=1)
    se_steps: int = option(500, "Optimizer steps of each SE stage.", minimum=1)
    cla_steps: int = option(500, "Optimizer steps of each CLA stage (all-pairs: this times the languages).",
                            minimum=1)
    alignment: Literal["bilingual", "all-pairs", "all-pairs-with-english"] = option(
        "bilingual", "CLA: each language to the fixed English pivot ('bilingual', the paper's choice), or all "
        "encoders' adapters trained together on every language pair, English fixed ('all-pairs') or adapted too "
        "('all-pairs-with-english'): the paper's Table 6 ablation."
    )
    cla_paraphrase_batches: int = option(
        1, "Bilingual CLA: paraphrase batches per round-robin cycle (0: parallel sentences only).", minimum=0
    )
    cla_parallel_batches: int = option(
        1, "Bilingual CLA: parallel batches per round-robin cycle (0: paraphrases only, the arXiv paper's CLA).",
        minimum=0,
    )
    cla_paraphrase_loss: Literal["cross-model", "pivot"] = option(
        "cross-model", "Bilingual CLA: paraphrase batches mixing the encoder and the pivot on both sides "
        "('cross-model', the authors' code) or the pivot's embeddings as the only candidates ('pivot')."
    )
    cla_dev_measure: Literal["retrieval", "sts"] = option(
        "retrieval", "Bilingual CLA: what picks each language's kept checkpoint, dev retrieval against the pivot or "
        "the language's en-X STS dev split ('sts': stsb-multi-mt or Kardes STS languages)."
    )
    batch_size: int = option(32, "Batch size of every stage.", minimum=2)
    max_pairs: int | None = option(
        None, "Cap on each stage's training data per language (LA sentences, SE and CLA pairs); unset keeps all.",
        minimum=1,
    )
    dev_pairs: int = option(200, "Held-out pairs (SE, CLA) and sentences (LA) per language for dev measures.",
                            minimum=1)
    max_seq_length: int = option(128, "Maximum tokens per sentence in every stage.", minimum=8)
    precision: Literal["auto", "bf16", "fp32"] = option("auto", "Training precision of every stage.")
    seed: int = option(0, "Seed of every stage.", minimum=0, maximum=2**32 - 1)
    keep_checkpoints: bool = option(True, "Keep every finished stage's checkpoints/ (false frees the disk).")
    unknown_language: Literal["error", "pivot"] = option(
        "error", "The bundle's answer to a language it lacks: an error, or the English pivot with a warning."
    )
    data_root: str | None = option(None, "Dataset folder (default: $POLYEMBED_DATA, else ../shared/data).")
    output_dir: str = option("runs/modular", "Folder of the per-language stage runs, pipeline.json and bundle/.")

    def check(self, origin: ConfigOrigin) -> None:
        """Each `skip_la` entry is 'all' or one of `languages` (as codes: 'kaz' names 'kk')."""
        listed = {normalize_language(code) for code in self.languages}
        for index, code in enumerate(self.skip_la):
            if code != "all" and normalize_language(code) not in listed:
                raise origin.error("skip_la", f"'{code}' is not one of the languages ({', '.join(self.languages)}) "
                                   "nor 'all'", index)

    def skips_la(self, language: str) -> bool:
        """Whether `language`'s encoder leaves out LA."""
        return "all" in self.skip_la or language in {normalize_language(code) for code in self.skip_la}


def with_preset(config: ModularPipelineConfig) -> ModularPipelineConfig:
    """The config with its preset's values in place of the options left at their defaults."""
    if config.preset == "none":
        return config
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    changes = {key: value for key, value in PRESETS[config.preset].items() if getattr(config, key) == defaults[key]}
    return dataclasses.replace(config, **changes)


def run_stage(method: str, folder: Path, show_progress: bool, **options: Any) -> dict[str, Any]:
    """Run one training method in `folder` unless it finished before (resumed when it started); its
    training.json, with the wall time added (the benchmark's Single baselines run through here too)."""
    from polyembed.config import build_config
    from polyembed.methods.base.registry import get_method, train
    from polyembed.methods.base.run import RunFolder

    summary = folder / "training.json"
    if summary.is_file():
        config, _ = build_config(get_method(method).config_class, None, {**options, "output_dir": str(folder)})
        differ = RunFolder(folder).option_differences(config)
        if differ is not None:  # e.g. SE finished on an LA model that skip_la now leaves out
            raise PolyembedError(f"{folder} holds a finished stage trained with other options ({differ}): a rerun "
                                 "reuses finished stages as they are; give a new output folder, or delete that "
                                 "stage's folder (and those after it) to train it again")
        return json.loads(summary.read_text(encoding="utf-8"))
    started = time.perf_counter()
    resume = (folder / "config.yaml").is_file()
    result = train(method, resume=resume, show_progress=show_progress, output_dir=str(folder), **options)
    out = result.to_dict()
    out["wall_seconds"] = round(time.perf_counter() - started, 1)  # of this call: a resumed run's part only
    out["resumed"] = resume
    with atomic_write(summary) as handle:  # the wall time joins the stage's own summary
        handle.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return out


def vocabulary_text(config: ModularPipelineConfig, language: str, languages: list[str]) -> list[str]:
    """Every sentence a language's encoder will train on: its LA text, both sides of its SE paraphrases and its
    side of the CLA pairs. The English pivot's also holds the English of every language's CLA pairs (it embeds
    them as targets) and of Tatoeba-Challenge's bitext, for breadth."""
    from polyembed.data.parallel_sources import load_parallel_sources
    from polyembed.data.readers.parallel import tatoeba_challenge_languages
    from polyembed.data.registry import get_dataset
    from polyembed.data.root import data_root
    from polyembed.methods.modular.config import (
        CrossLingualAlignmentConfig,
        LanguageAdaptationConfig,
        SentenceEncodingConfig,
    )
    from polyembed.methods.modular.cross_lingual_alignment import prepare_alignment
    from polyembed.methods.modular.language_adaptation import prepare_text
    from polyembed.methods.modular.sentence_encoding import prepare_paraphrases

    common: dict[str, Any] = {"seed": config.seed, "data_root": config.data_root}
    paraphrases = prepare_paraphrases(SentenceEncodingConfig(language=language, **common))
    text = [*paraphrases.train[0], *paraphrases.train[1], *paraphrases.dev[0], *paraphrases.dev[1]]
    if language != PIVOT:
        adaptation = prepare_text(LanguageAdaptationConfig(language=language, **common))
        alignment = prepare_alignment(CrossLingualAlignmentConfig(language=language, **common))
        return [*text, *adaptation.train, *adaptation.heldout, *alignment.paraphrases[0], *alignment.parallel[0],
                *alignment.dev[0]]
    for other in languages:
        alignment = prepare_alignment(CrossLingualAlignmentConfig(language=other, **common))
        text += [*alignment.paraphrases[1], *alignment.parallel[1], *alignment.dev[1]]
    root = data_root(config.data_root)
    codes = tatoeba_challenge_languages(root / get_dataset("tatoeba-challenge").folder)
    for code in codes:
        try:
            (source,) = load_parallel_sources([code], ["tatoeba-challenge"], root)
        except PolyembedError:  # a code the language table does not know
            continue
        text += source.english
    return list(dict.fromkeys(text))


def _vocabulary_model(config: ModularPipelineConfig, language: str, languages: list[str], root: Path,
                      show_progress: bool) -> str:
    """The language encoder's starting point: the base model, or its pruned / new-vocabulary copy (made once)."""
    if config.vocabulary == "keep":
        return config.student
    folder = root / language / f"vocabulary-{config.vocabulary}"
    if (folder / "modules.json").is_file():
        return str(folder)
    text = vocabulary_text(config, language, languages)
    if config.vocabulary == "prune":
        from polyembed.models.pruning import prune_vocabulary

        prune_vocabulary(config.student, text, folder, overwrite=True, verbose=show_progress)
    else:
        from polyembed.models.vocabulary_transfer import transfer_vocabulary

        transfer_vocabulary(config.student, text, folder, vocab_size=config.vocabulary_size, seed=config.seed,
                            overwrite=True, verbose=show_progress)
    return str(folder)


def _parameters(model: str | Path) -> int:
    from polyembed.models.loading import as_sentence_transformer, load_model

    encoder, _ = as_sentence_transformer(load_model(str(model)))
    return sum(p.numel() for p in encoder.parameters())


def _text_caps(config: ModularPipelineConfig) -> dict[str, Any]:
    return {"max_sentences": config.max_pairs, "heldout_sentences": config.dev_pairs}


def _cla_options(config: ModularPipelineConfig) -> dict[str, Any]:
    """The bilingual CLA stage's own options that the pipeline passes on."""
    return {"paraphrase_batches": config.cla_paraphrase_batches, "parallel_batches": config.cla_parallel_batches,
            "dev_measure": config.cla_dev_measure, "paraphrase_loss": config.cla_paraphrase_loss}


def _check_inputs(config: ModularPipelineConfig, languages: list[str]) -> None:
    """Read every stage's data for every language before the first model loads, so that a language without
    paraphrases or parallel text fails in seconds, not after hours of LA training."""
    from polyembed.methods.modular.config import (
        CrossLingualAlignmentConfig,
        LanguageAdaptationConfig,
        SentenceEncodingConfig,
    )
    from polyembed.methods.modular.cross_lingual_alignment import prepare_alignment
    from polyembed.methods.modular.language_adaptation import prepare_text
    from polyembed.methods.modular.sentence_encoding import prepare_paraphrases

    common: dict[str, Any] = {"seed": config.seed, "data_root": config.data_root}
    pairs: dict[str, Any] = {"max_pairs": config.max_pairs, "dev_pairs": config.dev_pairs}
    prepare_paraphrases(SentenceEncodingConfig(language=PIVOT, **common, **pairs))
    for language in languages:
        try:
            if not config.skips_la(language):
                prepare_text(LanguageAdaptationConfig(language=language, **common, **_text_caps(config)))
            prepare_paraphrases(SentenceEncodingConfig(language=language, **common, **pairs))
            prepare_alignment(CrossLingualAlignmentConfig(language=language, **common, **pairs, **_cla_options(config)))
        except PolyembedError as err:
            raise PolyembedError(f"modular pipeline, language '{language}': {err}") from None


def run_pipeline(config: ModularPipelineConfig, show_progress: bool = True) -> dict[str, Any]:
    """Every stage for every language, then the bundle in OUTPUT_DIR/bundle; returns what pipeline.json holds."""
    from sentence_transformers import SentenceTransformer

    from polyembed.models.modular import save_modular_bundle
    from polyembed.models.parallel_adapter import CONFIG_FILE as ADAPTER_CONFIG
    from polyembed.models.parallel_adapter import load_parallel_adapters

    config = with_preset(config)
    origin = ConfigOrigin()
    languages = [check_language(code, origin.where("languages", i)) for i, code in enumerate(config.languages)]
    if PIVOT in languages:
        raise PolyembedError(f"{argument('--languages')}: English is the pivot and always built; list the other "
                             "languages")
    if not languages:
        raise PolyembedError(f"{argument('--languages')}: give at least one language besides English")
    if config.adapter == "lora":
        require(("peft",), "polyembed train modular pipeline")
    if config.alignment != "bilingual" and _cla_options(config) != _cla_options(ModularPipelineConfig()):
        names = [argument(f"--cla-{name}") for name in ("paraphrase-batches", "parallel-batches", "dev-measure",
                                                          "paraphrase-loss")]
        raise PolyembedError(f"{', '.join(names[:-1])} and {names[-1]} apply to bilingual CLA only, not "
                             f"{argument('--alignment')} {config.alignment}")
    _check_inputs(config, languages)
    root = Path(config.output_dir).expanduser().resolve()
    shared = {"batch_size": config.batch_size, "max_seq_length": config.max_seq_length,
              "precision": config.precision, "seed": config.seed, "data_root": config.data_root,
              "keep_checkpoints": config.keep_checkpoints}
    pairs: dict[str, Any] = {"max_pairs": config.max_pairs, "dev_pairs": config.dev_pairs}
    stages: dict[str, dict[str, Any]] = {}
    encoders: dict[str, str] = {}
    for language in [PIVOT, *languages]:
        stages[language] = {}
        start = _vocabulary_model(config, language, languages, root, show_progress)
        if language != PIVOT and not config.skips_la(language):
            stages[language]["la"] = run_stage("modular-la", root / language / "la", show_progress, student=start,
                                               language=language, adapter=config.adapter, max_steps=config.la_steps,
                                               **_text_caps(config), **shared)
            start = stages[language]["la"]["model_dir"]
        stages[language]["se"] = run_stage("modular-se", root / language / "se", show_progress, student=start,
                                           language=language, adapter=config.adapter, max_steps=config.se_steps,
                                           **pairs, **shared)
        encoders[language] = stages[language]["se"]["model_dir"]
    if config.alignment == "bilingual":
        for language in languages:
            stages[language]["cla"] = run_stage("modular-cla", root / language / "cla", show_progress,
                                                student=encoders[language], pivot=encoders[PIVOT], language=language,
                                                max_steps=config.cla_steps, **_cla_options(config), **pairs,
                                                **shared)
        aligned = {language: stages[language]["cla"]["model_dir"] for language in languages}
        aligned[PIVOT] = encoders[PIVOT]
    else:  # one joint run; its model is a bundle with a folder per language
        joint = run_stage("modular-cla-all-pairs", root / "cla-all-pairs", show_progress,
                          encoders=[f"{code}={folder}" for code, folder in encoders.items()],
                          pivot_adapter=config.alignment == "all-pairs-with-english",
                          max_steps=config.cla_steps * len(languages), **pairs, **shared)
        for language in stages:
            stages[language]["cla"] = joint
        aligned = {language: str(Path(joint["model_dir"]) / language) for language in encoders}
    models = {}
    for language, folder in aligned.items():
        models[language] = SentenceTransformer(folder, device=resolve_device())
        if (Path(folder) / ADAPTER_CONFIG).is_file():
            load_parallel_adapters(models[language], folder)
    bundle = save_modular_bundle(root / BUNDLE_DIR, models, PIVOT, unknown_language=config.unknown_language)
    base_parameters = _parameters(config.student)
    summary = {
        "config": asdict(config),
        "bundle": str(bundle),
        "base_parameters": base_parameters,
        "languages": {
            language: {
                "encoder_parameters": _parameters(encoders[language]),
                "stages": {name: {key: run.get(key) for key in ("wall_seconds", "peak_memory_mb", "steps", "best",
                                                                  "model_dir", "resumed")}
                           for name, run in stages[language].items()},
            }
            for language in stages
        },
    }
    with atomic_write(root / SUMMARY_FILE) as handle:
        handle.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return summary
