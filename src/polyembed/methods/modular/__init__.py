"""Modular sentence encoders (Huang et al. 2024): one encoder per language, specialised in stages and aligned
to an English pivot. Stages are training methods of their own (`polyembed train modular-la`, ...); the
inference side is `polyembed.models.modular.ModularEncoder`."""

from polyembed.methods.modular.config import (
    CrossLingualAlignmentConfig,
    JointAlignmentConfig,
    LanguageAdaptationConfig,
    SentenceEncodingConfig,
    SingleModelConfig,
)
from polyembed.methods.modular.cross_lingual_alignment import CROSS_LINGUAL_ALIGNMENT
from polyembed.methods.modular.joint_alignment import JOINT_ALIGNMENT
from polyembed.methods.modular.language_adaptation import LANGUAGE_ADAPTATION
from polyembed.methods.modular.losses import MaskedLanguageModelingHead, MaskedLanguageModelingLoss
from polyembed.methods.modular.sentence_encoding import SENTENCE_ENCODING
from polyembed.methods.modular.single_model import SINGLE_MODEL

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
