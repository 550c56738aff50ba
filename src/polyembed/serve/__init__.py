"""HTTP serving of polyembed models (OpenAI-compatible embeddings endpoint)."""

from polyembed.serve.app import EmbeddingBatcher, ServerLimits, create_app

__all__ = ["EmbeddingBatcher", "ServerLimits", "create_app"]
