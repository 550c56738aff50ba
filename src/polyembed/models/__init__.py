"""Models: loading (built-in offline models, folders, hub ids), encoders, language ID.

Importing the package registers the built-in encoder kinds (`ENCODER_KINDS`) with `load_model`.
"""

from polyembed.models import language_embedding, modular, onnx_export  # noqa: F401 - register their encoder kinds
from polyembed.models.encoder import ENCODER_KINDS, SentenceEncoder, SentenceTransformerEncoder, register_encoder_kind
from polyembed.models.langid import identify_language, identify_languages
from polyembed.models.loading import BUILTIN_MODELS, ModelNotAvailableError, as_encoder, load_model

__all__ = [
    "BUILTIN_MODELS",
    "ENCODER_KINDS",
    "ModelNotAvailableError",
    "SentenceEncoder",
    "SentenceTransformerEncoder",
    "as_encoder",
    "identify_language",
    "identify_languages",
    "load_model",
    "register_encoder_kind",
]
