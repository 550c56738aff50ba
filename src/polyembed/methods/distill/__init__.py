"""Multilingual knowledge distillation (Reimers & Gurevych, EMNLP 2020): a student learns to put an English
sentence and its translation where the English teacher puts the English sentence."""

from polyembed.methods.base.registry import TrainingMethod, register_method
from polyembed.methods.distill.config import DistillConfig
from polyembed.methods.distill.train import build_job, prepare_data

DISTILL = register_method(
    TrainingMethod(
        name="distill",
        config_class=DistillConfig,
        prepare=prepare_data,
        build=build_job,
        summary="Multilingual knowledge distillation (Reimers & Gurevych 2020): teach a student to map English "
        "sentences and their translations to the teacher's embedding of the English sentence.",
        paper="https://arxiv.org/abs/2004.09813",
        model_options=("teacher", "student"),
    )
)
