"""The embedding server's API key: `Authorization: Bearer KEY` on every route but the probes and the metrics.

Open without the key: `/health` and `/ready`, which load balancers and orchestrators probe without one, and
`/metrics`, which Prometheus scrapers usually reach without one and which holds counts and timings, never inputs
or embeddings (vLLM leaves it open as well; TEI serves it, open, on a port of its own). The embeddings, the model
list and the API docs need the key. A refusal is OpenAI's 401 (`invalid_request_error`, code `invalid_api_key`
for a wrong key), with `WWW-Authenticate: Bearer`.

Why checked in the admission middleware, from the headers alone: a client without the key costs the server a
header lookup, never a body read, a concurrency slot, or a look at how loaded the server is. Keys are compared as
SHA-256 digests with `hmac.compare_digest`, so the time of a refusal tells nothing of the key, its length included.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
from collections.abc import MutableMapping
from typing import Any

from polyembed.errors import PolyembedError, argument

logger = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/health", "/ready", "/metrics"})
CHALLENGE = {"www-authenticate": "Bearer"}


def check_api_key(key: str, flag: str = "--api-key") -> str:
    """`key` as given, or the error of one that no client could send: empty, or with characters an HTTP header
    cannot carry as a bearer token (spaces, control characters, non-ASCII; a header value loses its outer spaces
    on the way, so such a key would refuse every request)."""
    if not key:
        raise PolyembedError(f"{argument(flag)}: empty; give the key clients must send (or leave it unset to "
                             "serve without one)")
    bad = next((char for char in key if not "!" <= char <= "~"), None)
    if bad is not None:
        raise PolyembedError(f"{argument(flag)}: has {bad!r}; a key is printable ASCII without spaces, as an "
                             "'Authorization: Bearer' header carries it")
    return key


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("ascii")).digest()


def refusal(scope: MutableMapping[str, Any], digest: bytes) -> tuple[str, str | None] | None:
    """The message and OpenAI error code of the 401 of a request to a closed path without the key `digest` is of
    (None: let it through). Only the first Authorization header counts: more would let a client try several keys
    per request."""
    path = scope["path"]
    root = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root):]
    if path in OPEN_PATHS:
        return None
    header = next((value for name, value in scope.get("headers", ()) if name == b"authorization"), None)
    scheme, _, token = (header or b"").strip().partition(b" ")
    if header is None or scheme.lower() != b"bearer" or not token.strip():
        return "no API key: send it in an 'Authorization: Bearer KEY' header", None
    if not hmac.compare_digest(hashlib.sha256(token.strip()).digest(), digest):
        return "incorrect API key", "invalid_api_key"
    return None


def warn_if_open(host: str, keyed: bool) -> None:
    """Warn when a server without a key listens beyond this machine: anyone who reaches the port can use it."""
    if keyed or host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:  # a host name: it may resolve to any interface
        pass
    logger.warning("listening on %s without an API key: anyone who can reach the port can use the server "
                   "(--api-key or POLYEMBED_API_KEY sets one)", host)
