"""An embedding server: OpenAI-compatible `POST /v1/embeddings` over any polyembed model (FastAPI + uvicorn).

Why OpenAI's shape: client libraries, vector databases and RAG frameworks already speak it, so a polyembed model
drops in by changing a base URL. Beyond it, an optional `language` (one code, or one per input) routes the inputs
of a language-routed model; a single multilingual model checks the code and ignores it.

Concurrent requests are batched dynamically (`EmbeddingBatcher`): the requests that queued while the previous
batch encoded (and, with `max_wait_ms`, those arriving that long after the first) are encoded together, up to
`max_batch_size` sentences, on one worker thread that owns the model; inside a batch the sentences are sorted by
length and cut into model calls of similar length, where the padding saved outweighs `call_overhead_tokens`, and
so that no call pads beyond `max_batch_tokens` (one long input does not make 63 short ones pay its length).
Bad input is a 4xx with OpenAI's error body (`{"error": {"message", "type", "param", "code"}}`), never a 500; a
request over the body or token cap is a 413 (the token count stops at the cap: a huge request costs the shared
tokenizer thread no more than the cap), a head over the header limits a 431, a body slower than
`body_timeout_seconds` a 408, and beyond `max_concurrent_requests` or `max_queue_seconds` of
queued work (and after that, until the queue has drained to `resume_queue_seconds`), or while the queue stands
above `queue_target_seconds`, a 429 with Retry-After
(`serve/admission.py`). A request whose client disconnects before its batch is
encoded is dropped from the queue. `GET /metrics` serves Prometheus metrics (`serve/metrics.py`).

With `api_key`, every route but `/health`, `/ready` and `/metrics` needs `Authorization: Bearer KEY`
(`serve/auth.py`). The model is reported as `served_model_name` (default: the encoder's name) in `/v1/models`,
`/health` and every answer's `model`; the `model` a request names is not checked, as TEI does: the server has one
model, and OpenAI clients and frameworks send a name of their own choosing (often an OpenAI model's) that a 400
would turn into a configuration chore. `/v1/models` also says what runs the model (`describe_backend`: runtime,
graph file and precision of an export, device), as the startup log line does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import gc
import logging
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from polyembed.config import Options, option
from polyembed.errors import PolyembedError, argument
from polyembed.languages import require_known_language
from polyembed.models.encoder import Bf16Encoder, SentenceEncoder, runs_on_torch
from polyembed.models.loading import as_encoder
from polyembed.serve.admission import AdmissionMiddleware, error_body, queue_refusal, refusal_pause
from polyembed.serve.auth import check_api_key, key_digest
from polyembed.serve.batching import EmbeddingBatcher
from polyembed.serve.metrics import ServerMetrics

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerLimits(Options):
    """What one request may ask for; larger requests get a 400 (OpenAI allows 2048 inputs per request)."""

    max_inputs: int = option(2048, "Most inputs in one request.", minimum=1)
    max_input_chars: int = option(20_000, "Longest input, in characters.", minimum=1)
    max_batch_size: int = option(64, "Most sentences encoded together.", minimum=1)
    max_batch_tokens: int = option(
        16_384, "Most padded tokens (longest input x inputs) in one model call; a batch above it is split into "
        "calls of similar-length inputs.", minimum=1)
    call_overhead_tokens: float = option(
        64.0, "What one more model call costs, in padded tokens: a batch is split into calls of similar-length "
        "inputs wherever that saves more padding than this (0: wherever any padding is saved). "
        "`benchmarks/serve.py calls` measures the throughput of each value per model and backend.", minimum=0)
    max_wait_ms: float = option(
        5.0, "How long the first request of a batch waits for others to join it (the requests that queued while "
        "the previous batch encoded join at once). At 0 an idle server starts on a request at once; the wait "
        "lets cheap single-sentence requests share calls at high rates.", minimum=0, maximum=10_000)
    max_request_tokens: int = option(
        65_536, "Most tokens in one request (the model tokenizer's count, all inputs together); more is a 413.",
        minimum=1)
    max_body_bytes: int = option(
        16 * 2**20, "Largest request body in bytes; more is a 413 (counted as the body arrives, so a chunked body "
        "or a wrong Content-Length cannot pass it).", minimum=1)
    body_timeout_seconds: float = option(
        30.0, "Longest time a request's body may take to arrive, from the end of its headers; a slower one gets a "
        "408, which frees its concurrency slot (a client that stalls mid-body would otherwise hold it for good).",
        minimum=0.01, maximum=3600)
    max_header_bytes: int = option(
        64 * 2**10, "Largest request head in bytes (request line and header fields); more is a 431.", minimum=1024)
    max_headers: int = option(100, "Most header fields in one request; more is a 431.", minimum=1)
    max_concurrent_requests: int = option(
        256, "Requests accepted at once (waiting or encoding); more get a 429 with Retry-After, so a client can tell "
        "overload from a hang.", minimum=1)
    max_queue_seconds: float = option(
        1.0, "Longest estimated wait behind the queued work (queued tokens / the tokens per second the model has "
        "been encoding) at which a request is still accepted; beyond it a 429 with Retry-After. It bounds the "
        "latency of accepted requests under overload, whatever their size.", minimum=0.01, maximum=3600)
    resume_queue_seconds: float = option(
        0.25, "After a request has been refused at `max_queue_seconds`, requests get a 429 until the queued work has "
        "drained to this wait (at or above `max_queue_seconds`: no drain). An overload otherwise leaves the queue "
        "at the limit, and at a rate the server only just sustains it stays there long after the overload "
        "has stopped.", minimum=0, maximum=3600)
    queue_target_seconds: float = option(
        0.0, "Wait the queue may keep for longer than a second (0: no target). A burst up to "
        "`max_queue_seconds` passes; a queue that stays above the target for a second is an overload, and requests "
        "get a 429 while the wait is above the target, until it has stayed below for a second: an overload leaves "
        "about this much work behind, not `max_queue_seconds`.", minimum=0,
        maximum=3600)


class EmbeddingRequest(BaseModel):
    """The body of POST /v1/embeddings: OpenAI's fields plus polyembed's `language`."""

    model_config = ConfigDict(extra="ignore", strict=True)

    input: str | list[str]
    model: str | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None
    language: str | list[str] | None = None


class RequestError(Exception):
    """A request the server understood and refuses: becomes a 4xx with OpenAI's error body."""

    def __init__(self, message: str, param: str | None = None, status: int = 400,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message, self.param, self.status, self.headers = message, param, status, headers


WARM_UP_SENTENCE = "polyembed is ready."


def _check_request(body: EmbeddingRequest, encoder: SentenceEncoder, limits: ServerLimits) -> tuple[
    list[str], list[str | None]
]:
    """The inputs and one language per input, or a RequestError naming the parameter at fault."""
    sentences = [body.input] if isinstance(body.input, str) else list(body.input)
    if not sentences:
        raise RequestError("'input' is empty: give a string or a non-empty list of strings", "input")
    if len(sentences) > limits.max_inputs:
        raise RequestError(f"'input' has {len(sentences)} items; at most {limits.max_inputs} per request", "input")
    for index, sentence in enumerate(sentences):
        if not sentence.strip():
            raise RequestError(f"input[{index}] is empty", "input")
        try:
            sentence.encode("utf-8")
        except UnicodeEncodeError as err:  # a lone surrogate ("\\ud800") parses as JSON but is no text
            raise RequestError(f"input[{index}] is not valid Unicode text (a lone surrogate at character "
                               f"{err.start})", "input") from None
        if len(sentence) > limits.max_input_chars:
            raise RequestError(
                f"input[{index}] has {len(sentence)} characters; at most {limits.max_input_chars}", "input"
            )
    if body.dimensions is not None and body.dimensions != encoder.dimension:
        raise RequestError(f"'dimensions' {body.dimensions}: this model gives {encoder.dimension}-dimensional "
                           "embeddings",
                           "dimensions")
    if body.language is None:
        languages: list[str | None] = [None] * len(sentences)
    elif isinstance(body.language, str):
        languages = [body.language] * len(sentences)
    else:
        if len(body.language) != len(sentences):
            raise RequestError(
                f"'language' has {len(body.language)} items for {len(sentences)} inputs (give one per input, "
                "or one code for all)", "language"
            )
        languages = list(body.language)
    routed = set(encoder.languages) if encoder.languages is not None else None
    checked: list[str | None] = []
    for code in languages:
        if code is None:
            checked.append(None)
            continue
        try:
            normalized = require_known_language(code, "'language'")
        except PolyembedError as err:
            raise RequestError(str(err), "language") from None
        if routed is not None and normalized not in routed:
            raise RequestError(
                f"'language' {code}: this model has no encoder for it (it has {', '.join(sorted(routed))})",
                "language",
            )
        checked.append(normalized)
    return sentences, checked


def _token_counts(tokenizer: Any, sentences: list[str], max_tokens: int) -> list[int] | None:
    """Each input's tokens as the model's tokenizer counts them (None when the model exposes no tokenizer), or a
    413 once they pass `max_tokens`. Run before the inputs join a batch: an input the tokenizer cannot read is
    refused here, naming it, and never reaches the shared batch.

    Why a slice at a time: one tokenizer thread serves every request, so a request far over the cap, tokenized
    whole, would hold up every request behind it for as long as its full size takes. Each slice holds about as
    many characters as tokens may still be counted, and counting stops as soon as the total passes the cap: the
    work spent on any request is bounded by the cap, not by its size, and nothing is refused on an estimate."""
    if tokenizer is None:
        return None
    counts: list[int] = []
    total = 0
    while len(counts) < len(sentences):
        start = end = len(counts)
        chars = 0
        while end < len(sentences) and (end == start or chars + len(sentences[end]) <= max_tokens - total):
            chars += len(sentences[end])
            end += 1
        sliced = _tokenize(tokenizer, sentences[start:end], start)
        counts.extend(sliced)
        total += sum(sliced)
        if total > max_tokens:
            counted = (f"{total:,} tokens" if len(counts) == len(sentences) else
                       f"over {max_tokens:,} tokens ({total:,} in its first {len(counts)} of {len(sentences)} inputs)")
            raise RequestError(f"'input' has {counted}; at most {max_tokens:,} per request", "input", status=413)
    return counts


def _tokenize(tokenizer: Any, sentences: list[str], offset: int) -> list[int]:
    """The token counts of `sentences` (input `offset` onwards), or the 400 naming the first one the tokenizer
    cannot read."""
    try:
        return [len(ids) for ids in tokenizer(sentences, add_special_tokens=True)["input_ids"]]
    except Exception:  # find the input at fault
        for index, sentence in enumerate(sentences, start=offset):
            try:
                tokenizer([sentence], add_special_tokens=True)
            except Exception as err:
                raise RequestError(f"input[{index}] cannot be tokenized by this model ({type(err).__name__})",
                                   "input") from None
        raise


def check_served_model_name(name: str, flag: str = "--served-model-name") -> str:
    """`name`, or the error of a blank one (a client could not name the model it lists)."""
    if not name.strip():
        raise PolyembedError(f"{argument(flag)}: empty; give the name clients see, or leave it unset for the "
                             "model's own")
    return name


def describe_backend(encoder: SentenceEncoder) -> dict[str, Any]:
    """What runs `encoder`, for `/v1/models` and the startup log: `backend` (torch, onnxruntime, openvino, or
    custom for a user's own object), the `graph` and `precision` of an export (an export folder runs its int8 graph
    unless told otherwise, which a client comparing scores needs to know), `device`, `dimension`,
    `max_seq_length`, and the `languages` a routed model has encoders for (null: any)."""
    runtime, graph = getattr(encoder, "runtime", None), getattr(encoder, "graph_file", None)
    described: dict[str, Any]
    if isinstance(runtime, str) and isinstance(graph, str):  # onnx_export.OnnxEncoder: CPU only
        precision = "int8" if "int8" in PurePosixPath(graph).name else "float32"
        described = {"backend": runtime, "graph": graph, "precision": precision,
                     "device": str(getattr(encoder, "device", None))}
    elif runs_on_torch(encoder):
        model = getattr(encoder, "model", None)
        device = getattr(model, "device", None) or getattr(encoder, "device", None)  # a bundle has no one model
        described = {"backend": "torch", "device": None if device is None else str(device)}
        parameters = getattr(model, "parameters", None)
        first = next(iter(parameters()), None) if callable(parameters) else None
        if isinstance(encoder, Bf16Encoder):
            described["precision"] = "bfloat16"
        elif first is not None:
            described["precision"] = str(first.dtype).removeprefix("torch.")
    else:
        described = {"backend": "custom", "device": None}
    return {**described, "dimension": encoder.dimension, "max_seq_length": encoder.max_seq_length,
            "languages": encoder.languages}


def _startup_line(name: str, encoder: SentenceEncoder, described: dict[str, Any], keyed: bool) -> str:
    """One line that says what is served and how, the graph file in full (an export's default graph is int8)."""
    parts = [f"backend {described['backend']}"]
    if "graph" in described:
        where = f"{encoder.path}/{described['graph']}" if encoder.path else described["graph"]
        parts.append(f"graph {where} ({described['precision']})")
    elif "precision" in described:
        parts.append(described["precision"])
    parts.append(f"device {described['device'] or 'its own'}")
    parts.append(f"{described['dimension']} dimensions")
    if described["max_seq_length"]:
        parts.append(f"inputs cut at {described['max_seq_length']} tokens")
    model = "" if name == encoder.name else f" (model {encoder.name})"
    return f"serving {name}{model}: {', '.join(parts)}; API key {'required' if keyed else 'not required'}"


def create_app(encoder: SentenceEncoder, limits: ServerLimits | None = None, *, api_key: str | None = None,
               served_model_name: str | None = None) -> FastAPI:
    """The FastAPI application serving `encoder` (run it with uvicorn, or `polyembed serve`). `api_key`: the key
    every request but the probes and metrics must carry (None: none); `served_model_name`: the name the API
    reports (None: the encoder's)."""
    encoder = as_encoder(encoder)
    limits = limits or ServerLimits()
    digest = key_digest(check_api_key(api_key)) if api_key is not None else None
    name = check_served_model_name(served_model_name) if served_model_name is not None else encoder.name
    described = describe_backend(encoder)
    created = int(time.time())
    metrics = ServerMetrics()
    batcher = EmbeddingBatcher(encoder, limits.max_batch_size, limits.max_wait_ms, limits.max_batch_tokens, metrics,
                               limits.call_overhead_tokens, limits.queue_target_seconds, limits.resume_queue_seconds)
    metrics.queue_wait.set_function(batcher.work.wait_seconds)
    metrics.shedding.set_function(lambda: float(batcher.work.shedding))
    metrics.draining.set_function(lambda: float(batcher.work.draining))
    counting = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polyembed-tokenize")
    # A tokenizer of its own: a fast tokenizer shared with the encode thread fails ("Already borrowed") when one
    # thread switches truncation while the other tokenizes.
    counter = copy.deepcopy(encoder.tokenizer) if encoder.tokenizer is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logger.info("%s", _startup_line(name, encoder, described, digest is not None))
        await batcher.start()
        await batcher.embed([WARM_UP_SENTENCE], [None])  # the first encode loads lazily built parts
        batcher.work.tokens_per_second = None  # ... and is no measure of the model's speed
        # A full collection walks every object the model's libraries made (hundreds of thousands), a pause of
        # every thread that is a latency spike; frozen, what exists once the server is warm is never walked again.
        gc.collect()
        gc.freeze()
        app.state.ready = True
        watching = metrics.watch_gc()
        try:
            yield
        finally:
            gc.callbacks.remove(watching)
            gc.unfreeze()  # a process that goes on (a test, a notebook) can collect the server's objects again
            app.state.ready = False
            await batcher.stop()
            counting.shutdown(wait=True)

    app = FastAPI(title="polyembed embeddings", lifespan=lifespan)
    app.state.batcher, app.state.metrics, app.state.ready, app.state.in_flight = batcher, metrics, False, 0

    app.add_middleware(AdmissionMiddleware, limits=limits, metrics=metrics, work=batcher.work, state=app.state,
                       api_key_digest=digest)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = [str(part) for part in first.get("loc", ()) if part != "body"]
        if first.get("type") == "json_invalid":  # loc holds the character position, not a field
            message, where = f"the request body is not valid JSON (at character {where[-1] if where else '?'})", []
        elif not where:
            message = f"the request body must be a JSON object ({first.get('msg', 'invalid')})"
        else:
            message = f"'{'.'.join(where)}': {first.get('msg', 'invalid value')}"
        return JSONResponse(error_body(message, where[0] if where else None), status_code=400)

    @app.exception_handler(RequestError)
    async def refused(_: Request, err: RequestError) -> JSONResponse:
        return JSONResponse(error_body(err.message, err.param), status_code=err.status, headers=err.headers)

    @app.exception_handler(Exception)
    async def failed(_: Request, err: Exception) -> JSONResponse:  # still OpenAI's error body, never plain text
        return JSONResponse(error_body(f"the server failed to encode this request ({type(err).__name__})",
                                        kind="server_error"), status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, err: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(error_body(str(err.detail)), status_code=err.status_code)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness: the process answers."""
        return {"status": "ok", "model": name, "dimension": encoder.dimension}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        """Readiness: the model is loaded and has encoded once (a load balancer sends traffic only then)."""
        if not app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "in_flight": app.state.in_flight})

    @app.get("/metrics")
    async def prometheus() -> Response:
        """Prometheus metrics: requests by status, latency, queue depth, batch sizes and tokens."""
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        """OpenAI's model list, of the one model; `polyembed` says what runs it (OpenAI clients ignore it)."""
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created,
                                            "owned_by": "polyembed", "polyembed": described}]}

    @app.post("/v1/embeddings")
    async def embeddings(body: EmbeddingRequest, request: Request) -> Response:
        sentences, languages = _check_request(body, encoder, limits)
        # tokenizing a large request must not stall the event loop
        counts = await asyncio.get_running_loop().run_in_executor(counting, _token_counts, counter, sentences,
                                                                  limits.max_request_tokens)
        tokens = sum(counts) if counts is not None else 0
        wait = batcher.work.refused(limits.max_queue_seconds, tokens)
        if wait is not None:
            await refusal_pause(limits.max_queue_seconds)  # as the middleware's refusals
            message, headers = queue_refusal(wait, limits.max_queue_seconds, batcher.work)
            raise RequestError(message, status=429, headers=headers)
        # no await between the check above and the submit: the next request's check sees these tokens
        vectors = await _unless_disconnected(batcher.submit(sentences, languages, counts), request)
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
                if body.encoding_format == "base64"
                else vector,
            }
            for index, vector in enumerate(vectors)
        ]
        # serialised here, numpy rows as they are: FastAPI's own encoder walks every float in Python
        return Response(orjson.dumps({"object": "list", "data": data, "model": name,
                                      "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
                                     option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")

    return app


async def _unless_disconnected(work: Any, request: Request) -> Any:
    """The result of `work`, or cancel it when the client goes away first (its job leaves the queue unencoded;
    a batch already encoding finishes, as a model call cannot be interrupted). The status 499 (nginx's "client
    closed request") reaches only the logs and metrics: nobody is there to read it."""
    task = asyncio.ensure_future(work)
    listener = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({task, listener}, return_when=asyncio.FIRST_COMPLETED)
        if task not in done and listener.exception() is None:
            raise RequestError("the client disconnected before its embeddings were ready", status=499)
        return await task  # done, or the listener failed without a disconnect: the answer still counts
    finally:
        for pending in (task, listener):
            if not pending.done():
                pending.cancel()
        await asyncio.gather(task, listener, return_exceptions=True)


async def _disconnected(request: Request) -> None:
    """Returns once the client has gone (the body is read already: the next ASGI message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
