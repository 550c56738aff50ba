"""A toy training method in a test folder: registering a config, a loss and `build` is all a new method needs;
the student, the run folder, resume, CLI command and API call come from `polyembed.methods.base`. Imported by
the CLI through $POLYEMBED_METHODS=tests.methods.toy. docs/contributing/training-method.md shows these files as
they are."""

from __future__ import annotations

from typing import Any

from polyembed.methods.base import RunFolder, TrainingJob, TrainingMethod, register_method
from polyembed.methods.base.bitext import Bitext, prepare_bitext
from polyembed.methods.base.student import load_student
from tests.methods.toy.config import ToyConfig
from tests.methods.toy.losses import TranslationRankingLoss


def build(config: ToyConfig, data: Bitext, run: RunFolder, show_progress: bool) -> TrainingJob:
    from datasets import Dataset
    from sentence_transformers.sentence_transformer.evaluation import TranslationEvaluator

    student = load_student(config.student, config)  # maximum length, frozen parts; `fit` adds its prompt
    english = [s for source in data.train for s in source.english]
    other = [s for source in data.train for s in source.other]
    dev_english = [s for source in data.dev for s in source.english]
    dev_other = [s for source in data.dev for s in source.other]
    evaluator: Any = TranslationEvaluator(dev_english, dev_other, name="dev", write_csv=False)
    return TrainingJob(
        model=student,
        train_dataset=Dataset.from_dict({"english": english, "other": other}),
        loss=TranslationRankingLoss(student, config.temperature),
        evaluator=evaluator,
        best_metric="eval_dev_mean_accuracy",
        details={"train_pairs": len(english)},
    )


TOY = register_method(
    TrainingMethod(
        name="toy",
        config_class=ToyConfig,
        prepare=prepare_bitext,
        build=build,
        summary="A test method: in-batch translation ranking.",
    )
)
