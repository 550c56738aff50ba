"""EMMA-X (Guo et al. 2023): a semantic-rank classifier and the encoder supervise each other in an EM loop,
after a warm-up of both on parallel pairs. Two stages: `polyembed train emmax warmup` (phase 1) and
`polyembed train emmax em` (phase 2, from the warm-up's model folder; on bitext as the authors' code trains it,
or on monolingual text as the paper's Algorithm 1 reads). docs/methods/emmax.md compares every choice with the
paper and the authors' code."""

from polyembed.methods.base.registry import TrainingMethod, lazy_attributes, register_method
from polyembed.methods.emmax.config import EmmaxEmConfig, EmmaxWarmupConfig

PAPER = "https://arxiv.org/abs/2306.10386"

WARMUP = register_method(
    TrainingMethod(
        name="emmax-warmup",
        config_class=EmmaxWarmupConfig,
        prepare="polyembed.methods.emmax.train:prepare_warmup",
        build="polyembed.methods.emmax.train:build_warmup",
        summary="EMMA-X phase 1: the encoder with InfoNCE on parallel pairs, the rank classifier (GMM or FCN) by "
        "maximum likelihood on translations, outliers and mixup examples between them.",
        paper=PAPER,
        cli_group="emmax",
        examples=(
            "polyembed train emmax warmup --output-dir runs/emmax-warmup",
            "polyembed train emmax warmup --classifier fcn --languages de,sw --output-dir runs/warmup-fcn",
        ),
    )
)
EM = register_method(
    TrainingMethod(
        name="emmax-em",
        config_class=EmmaxEmConfig,
        prepare="polyembed.methods.emmax.train:prepare_em",
        build="polyembed.methods.emmax.train:build_em",
        summary="EMMA-X phase 2: EM with dual supervision; the classifier's ranks train the encoder (ranking "
        "InfoNCE over the batch and a MoCo queue, translations rank 1), the encoder's similarity ranks train the "
        "classifier.",
        paper=PAPER,
        cli_group="emmax",
        examples=(
            "polyembed train emmax em --student runs/emmax-warmup/model --output-dir runs/emmax-em",
            "polyembed train emmax em --student runs/emmax-warmup/model --no-parallel --text-files sw=sw.txt",
        ),
    )
)

__all__ = [
    "EM",
    "WARMUP",
    "EmmaxEmConfig",
    "EmmaxEmLoss",
    "EmmaxWarmupConfig",
    "EmmaxWarmupLoss",
    "FeedForwardRankClassifier",
    "GaussianRankClassifier",
]
__getattr__ = lazy_attributes(__name__, {
    "FeedForwardRankClassifier": "polyembed.methods.emmax.classifier",
    "GaussianRankClassifier": "polyembed.methods.emmax.classifier",
    "EmmaxEmLoss": "polyembed.methods.emmax.losses", "EmmaxWarmupLoss": "polyembed.methods.emmax.losses"})
