"""Modular sentence encoders (Huang et al. 2024): one encoder per language, specialised in stages and aligned
to an English pivot. Stages are training methods of their own (`polyembed train modular-la`, ...); the
inference side is `polyembed.models.modular.ModularEncoder`."""

from polyembed.methods.modular.config import LanguageAdaptationConfig
from polyembed.methods.modular.language_adaptation import LANGUAGE_ADAPTATION
from polyembed.methods.modular.losses import MaskedLanguageModelingHead, MaskedLanguageModelingLoss

__all__ = [
    "LANGUAGE_ADAPTATION",
    "LanguageAdaptationConfig",
    "MaskedLanguageModelingHead",
    "MaskedLanguageModelingLoss",
]
