"""HTTP serving of polyembed models (OpenAI-compatible embeddings endpoint). Needs the serve extra
(`pip install 'polyembed[serve]'`): without it, importing this package stops with one line saying so."""

from polyembed.environment import require

SERVE_PACKAGES = ("fastapi", "uvicorn", "httptools", "orjson", "prometheus-client")
"""What the server imports (uvloop, also in the extra, uvicorn picks up by itself where it is installed)."""
require(SERVE_PACKAGES, "polyembed serve", extra="serve")

from polyembed.serve.app import ServerLimits, create_app  # noqa: E402 - after the check
from polyembed.serve.batching import EmbeddingBatcher  # noqa: E402

__all__ = ["EmbeddingBatcher", "ServerLimits", "create_app"]
