"""The new-language recipe: one command from a user's bitext to a better encoder for their language, with the
before/after table on held-out pairs of their own data. A thin recipe over multilingual knowledge distillation
with a translation-ranking term, which did best in the head-to-head of docs/benchmarks.md ("Bringing a new
language"), with the options measured there as defaults."""

from polyembed.methods.base.registry import TrainingMethod, register_method
from polyembed.methods.new_language.config import NewLanguageConfig

NEW_LANGUAGE = register_method(
    TrainingMethod(
        name="new-language",
        config_class=NewLanguageConfig,
        prepare="polyembed.methods.new_language.recipe:prepare",
        build="polyembed.methods.new_language.recipe:build",
        finish="polyembed.methods.new_language.recipe:finish",
        summary="Bring a new language: distillation plus translation ranking on your bitext, from the "
        "multilingual me5-small (the best of the methods' head-to-head), ending with a before/after table on "
        "held-out pairs.",
        paper="https://arxiv.org/abs/2004.09813",
        model_options=("teacher", "student"),
        examples=(
            "polyembed train new-language --parallel-files yo=my.en,my.yo -o runs/yo",
            "polyembed train new-language --parallel-files yo=my.tsv,ha=other.tsv --max-steps 600 -o runs/yo-ha",
            "polyembed train new-language --parallel-files yo=my.tsv --datasets mafand-mt --allow-noncommercial",
        ),
    )
)

__all__ = ["NEW_LANGUAGE", "NewLanguageConfig"]
