"""WACSE (Miao et al. 2024): translation ranking plus word-level objectives on aligned words, for the
cross-lingual sentence embeddings of low-resource languages."""

from polyembed.methods.base.registry import TrainingMethod, lazy_attributes, register_method
from polyembed.methods.wacse.config import WacseConfig

WACSE = register_method(
    TrainingMethod(
        name="wacse",
        config_class=WacseConfig,
        prepare="polyembed.methods.wacse.train:prepare_data",
        build="polyembed.methods.wacse.train:build_job",
        summary="WACSE (Miao et al. 2024): translation ranking plus aligned word prediction and word translation "
        "ranking on word-aligned bitext, for low-resource languages.",
        paper="https://arxiv.org/abs/2404.02490",
        model_options=("student", "aligner_model"),
        examples=(
            "polyembed train wacse --output-dir runs/wacse",
            "polyembed train wacse --objectives tr,wtr --output-dir runs/tr-wtr",
            "polyembed train wacse --languages yo --datasets '' --parallel-files yo=my.en,my.yo -o runs/yo",
        ),
    )
)

__all__ = ["WACSE", "WacseConfig", "WordAlignedTranslationLoss"]
__getattr__ = lazy_attributes(__name__, {"WordAlignedTranslationLoss": "polyembed.methods.wacse.losses"})
