"""HTTP serving of polyembed models (OpenAI-compatible embeddings endpoint)."""

from polyembed.serve.app import ServerLimits, create_app
from polyembed.serve.batching import EmbeddingBatcher

__all__ = ["EmbeddingBatcher", "ServerLimits", "create_app"]
