"""Multilingual knowledge distillation (Reimers & Gurevych, EMNLP 2020): a student learns to put an English
sentence and its translation where the English teacher puts the English sentence."""

from polyembed.methods.base.registry import TrainingMethod, lazy_attributes, register_method
from polyembed.methods.distill.config import DistillConfig

DISTILL = register_method(
    TrainingMethod(
        name="distill",
        config_class=DistillConfig,
        prepare="polyembed.methods.distill.train:prepare_data",
        build="polyembed.methods.distill.train:build_job",
        summary="Multilingual knowledge distillation (Reimers & Gurevych 2020): teach a student to map English "
        "sentences and their translations to the teacher's embedding of the English sentence.",
        paper="https://arxiv.org/abs/2004.09813",
        model_options=("teacher", "student"),
        examples=(
            "polyembed train distill --languages de,sw --max-steps 500 --output-dir runs/de-sw",
            "polyembed train distill --languages yo --datasets '' --parallel-files yo=my.en,my.yo -o runs/yo",
            "polyembed train distill --config my.yaml --batch-size 32",
            "polyembed train distill --config my.yaml --output-dir runs/de-sw --resume",
        ),
    )
)

__getattr__ = lazy_attributes(__name__, {"build_job": "polyembed.methods.distill.train",
                                         "prepare_data": "polyembed.methods.distill.train"})
