"""Models: loading (built-in offline models, folders, hub ids), encoders, language ID."""

from polyembed.models.encoder import SentenceEncoder, SentenceTransformerEncoder
from polyembed.models.langid import identify_language, identify_languages
from polyembed.models.loading import BUILTIN_MODELS, ModelNotAvailableError, load_model

__all__ = [
    "BUILTIN_MODELS",
    "ModelNotAvailableError",
    "SentenceEncoder",
    "SentenceTransformerEncoder",
    "identify_language",
    "identify_languages",
    "load_model",
]
