"""Modular sentence encoders (Huang et al. 2024): one encoder per language, specialised in stages and aligned
to an English pivot. Stages are training methods of their own (`polyembed train modular-la`, ...); the
inference side is `polyembed.models.modular.ModularEncoder`."""

from polyembed.methods.base.registry import TrainingMethod, lazy_attributes, register_method
from polyembed.methods.modular.config import (
    CrossLingualAlignmentConfig,
    JointAlignmentConfig,
    LanguageAdaptationConfig,
    SentenceEncodingConfig,
    SingleModelConfig,
)

LANGUAGE_ADAPTATION = register_method(
    TrainingMethod(
        name="modular-la",
        config_class=LanguageAdaptationConfig,
        prepare="polyembed.methods.modular.language_adaptation:prepare_text",
        build="polyembed.methods.modular.language_adaptation:build_job",
        summary="Modular encoders, stage LA (Huang et al. 2024): continued masked language modelling of one "
        "language's encoder on its text (LoRA adapter + trainable embeddings, or full).",
        paper="https://arxiv.org/abs/2407.14878",
        cli_group="modular",
        examples=(
            "polyembed train modular la --language kk --output-dir runs/kk-la",
            "polyembed train modular la --language yo --datasets '' --text-files yo.txt -o runs/yo-la",
        ),
    )
)

SENTENCE_ENCODING = register_method(
    TrainingMethod(
        name="modular-se",
        config_class=SentenceEncodingConfig,
        prepare="polyembed.methods.modular.sentence_encoding:prepare_paraphrases",
        build="polyembed.methods.modular.sentence_encoding:build_job",
        summary="Modular encoders, stage SE (Huang et al. 2024): contrastive training (MNRL) of one language's "
        "encoder on its monolingual paraphrase pairs (LoRA adapter, or full).",
        paper="https://arxiv.org/abs/2407.14878",
        cli_group="modular",
        examples=(
            "polyembed train modular se --language kk --student runs/kk-la/model --output-dir runs/kk-se",
            "polyembed train modular se --language en --output-dir runs/en-se",
        ),
    )
)

CROSS_LINGUAL_ALIGNMENT = register_method(
    TrainingMethod(
        name="modular-cla",
        config_class=CrossLingualAlignmentConfig,
        prepare="polyembed.methods.modular.cross_lingual_alignment:prepare_alignment",
        build="polyembed.methods.modular.cross_lingual_alignment:build_job",
        summary="Modular encoders, stage CLA (Huang et al. 2024): a parallel adapter on one language's encoder, "
        "aligned to the frozen English pivot by alternating cross-lingual paraphrase (MNRL) and parallel "
        "(cosine) batches.",
        paper="https://arxiv.org/abs/2407.14878",
        model_options=("student", "pivot"),
        cli_group="modular",
        examples=(
            "polyembed train modular cla --language kk --student runs/kk-se/model --pivot runs/en-se/model",
        ),
    )
)

JOINT_ALIGNMENT = register_method(
    TrainingMethod(
        name="modular-cla-all-pairs",
        config_class=JointAlignmentConfig,
        prepare="polyembed.methods.modular.joint_alignment:prepare_pairs",
        build="polyembed.methods.modular.joint_alignment:build_job",
        summary="Modular encoders, all-pairs CLA ablation (Huang et al. 2024, Table 6): parallel adapters on every "
        "language's encoder trained together on cross-lingual pairs between every two languages.",
        paper="https://arxiv.org/abs/2407.14878",
        cli_group="modular",
        model_options=(),  # the encoders are checked (folders) by prepare_pairs
        examples=(
            "polyembed train modular cla-all-pairs --encoders en=runs/en/model --encoders kk=runs/kk/model",
        ),
    )
)

SINGLE_MODEL = register_method(
    TrainingMethod(
        name="modular-single",
        config_class=SingleModelConfig,
        prepare="polyembed.methods.modular.single_model:prepare_pairs",
        build="polyembed.methods.modular.single_model:build_job",
        summary="Modular encoders' baselines Single_m / Single_c (Huang et al. 2024): one multilingual encoder "
        "trained with MNRL on every language's monolingual paraphrases, or cross-lingual pairs.",
        paper="https://arxiv.org/abs/2407.14878",
        cli_group="modular",
        examples=(
            "polyembed train modular single --languages en,de,kk --output-dir runs/single-m",
            "polyembed train modular single --languages en,de,kk --pairs cross-lingual -o runs/single-c",
        ),
    )
)

__all__ = [
    "CROSS_LINGUAL_ALIGNMENT",
    "CrossLingualAlignmentConfig",
    "JOINT_ALIGNMENT",
    "JointAlignmentConfig",
    "LANGUAGE_ADAPTATION",
    "LanguageAdaptationConfig",
    "MaskedLanguageModelingHead",
    "MaskedLanguageModelingLoss",
    "SENTENCE_ENCODING",
    "SentenceEncodingConfig",
    "SINGLE_MODEL",
    "SingleModelConfig",
]
__getattr__ = lazy_attributes(__name__, {"MaskedLanguageModelingHead": "polyembed.methods.modular.losses",
                                         "MaskedLanguageModelingLoss": "polyembed.methods.modular.losses"})
