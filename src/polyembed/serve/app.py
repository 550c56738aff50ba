"""An embedding server: OpenAI-compatible `POST /v1/embeddings` over any polyembed model (FastAPI + uvicorn).

Why OpenAI's shape: client libraries, vector databases and RAG frameworks already speak it, so a polyembed model
drops in by changing a base URL. Beyond it, an optional `language` (one code, or one per input) routes the inputs
of a language-routed model; a single multilingual model checks the code and ignores it.

Concurrent requests are batched dynamically (`EmbeddingBatcher`): inputs that arrive within `max_wait_ms` of each
other are encoded together, up to `max_batch_size` sentences, on one worker thread that owns the model. Bad
input is a 4xx with OpenAI's error body (`{"error": {"message", "type", "param", "code"}}`), never a 500; a
request over the body or token cap is a 413, and beyond `max_concurrent_requests` a 429 with Retry-After.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from polyembed.config import Options, option
from polyembed.errors import PolyembedError
from polyembed.languages import require_known_language
from polyembed.models.encoder import SentenceEncoder
from polyembed.models.loading import as_encoder


@dataclass(frozen=True)
class ServerLimits(Options):
    """What one request may ask for; larger requests get a 400 (OpenAI allows 2048 inputs per request)."""

    max_inputs: int = option(2048, "Most inputs in one request.", minimum=1)
    max_input_chars: int = option(20_000, "Longest input, in characters.", minimum=1)
    max_batch_size: int = option(64, "Most sentences encoded together.", minimum=1)
    max_wait_ms: float = option(5.0, "How long a request waits for others to share its batch.", minimum=0,
                                maximum=10_000)
    max_request_tokens: int = option(
        65_536, "Most tokens in one request (the model tokenizer's count, all inputs together); more is a 413.",
        minimum=1)
    max_body_bytes: int = option(16 * 2**20, "Largest request body in bytes; more is a 413.", minimum=1)
    max_concurrent_requests: int = option(
        256, "Requests accepted at once (waiting or encoding); more get a 429 with Retry-After, so a client can tell "
        "overload from a hang.", minimum=1)


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


def _error_body(message: str, param: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


@dataclass
class _Job:
    sentences: list[str]
    languages: list[str | None]
    future: asyncio.Future = field(repr=False)


class EmbeddingBatcher:
    """Dynamic batching: requests that arrive together share one `encode` call per language; the model runs on
    one worker thread so the event loop keeps accepting requests while it encodes."""

    def __init__(self, encoder: SentenceEncoder, max_batch_size: int = 64, max_wait_ms: float = 5.0) -> None:
        self.encoder = as_encoder(encoder)
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait_ms / 1000
        self.batches_run = 0
        self._queue: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polyembed-encode")

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self._executor.shutdown(wait=True)

    async def embed(self, sentences: list[str], languages: list[str | None]) -> np.ndarray:
        """L2-normalised float32 rows for `sentences`, in order."""
        if self._queue is None:
            raise RuntimeError("EmbeddingBatcher.start() was not called")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Job(sentences, languages, future))
        return await future

    async def _run(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            jobs = [await self._queue.get()]
            size = len(jobs[0].sentences)
            deadline = loop.time() + self.max_wait
            while size < self.max_batch_size:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    job = await asyncio.wait_for(self._queue.get(), timeout)
                except TimeoutError:
                    break
                jobs.append(job)
                size += len(job.sentences)
            await self._answer(jobs)

    async def _answer(self, jobs: list[_Job]) -> None:
        """Encode `jobs` together; when that fails, each job again on its own, so a request that breaks the
        model fails alone instead of taking the requests batched with it along."""
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(self._executor, self._encode_jobs, jobs)
        except Exception as err:
            if len(jobs) > 1:
                for job in jobs:
                    await self._answer([job])
                return
            if not jobs[0].future.done():
                jobs[0].future.set_exception(err)
            return
        self.batches_run += 1
        for job, vectors in zip(jobs, results, strict=True):
            if not job.future.done():
                job.future.set_result(vectors)

    def _encode_jobs(self, jobs: Sequence[_Job]) -> list[np.ndarray]:
        """One encode call per language over every job's inputs, split back per job."""
        sentences: list[str] = []
        languages: list[str | None] = []
        for job in jobs:
            for sentence, language in zip(job.sentences, job.languages, strict=True):
                sentences.append(sentence)
                languages.append(language)
        rows = self.encoder.encode(sentences, languages, batch_size=self.max_batch_size, normalize=True)
        out: list[np.ndarray] = []
        start = 0
        for job in jobs:  # each job's rows are contiguous in the flat order
            out.append(rows[start : start + len(job.sentences)].copy())
            start += len(job.sentences)
        return out


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


def _token_count(encoder: SentenceEncoder, sentences: list[str]) -> int:
    """Tokens as the model's tokenizer counts them (0 when the model exposes no tokenizer). Run before the
    inputs join a batch: an input the tokenizer cannot read is refused here, naming it, and never reaches the
    shared batch."""
    if encoder.tokenizer is None:
        return 0
    try:
        return sum(len(ids) for ids in encoder.tokenizer(sentences, add_special_tokens=True)["input_ids"])
    except Exception:  # find the input at fault
        for index, sentence in enumerate(sentences):
            try:
                encoder.tokenizer([sentence], add_special_tokens=True)
            except Exception as err:
                raise RequestError(f"input[{index}] cannot be tokenized by this model ({type(err).__name__})",
                                   "input") from None
        raise


def create_app(encoder: SentenceEncoder, limits: ServerLimits | None = None) -> FastAPI:
    """The FastAPI application serving `encoder` (run it with uvicorn, or `polyembed serve`)."""
    encoder = as_encoder(encoder)
    limits = limits or ServerLimits()
    batcher = EmbeddingBatcher(encoder, limits.max_batch_size, limits.max_wait_ms)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await batcher.start()
        await batcher.embed([WARM_UP_SENTENCE], [None])  # the first encode loads lazily built parts
        app.state.ready = True
        try:
            yield
        finally:
            app.state.ready = False
            await batcher.stop()

    app = FastAPI(title="polyembed embeddings", lifespan=lifespan)
    app.state.batcher, app.state.ready, app.state.in_flight = batcher, False, 0

    @app.middleware("http")
    async def body_size(request: Request, call_next: Any) -> Any:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.max_body_bytes:
            return JSONResponse(_error_body(f"the request body has {int(declared):,} bytes; at most "
                                            f"{limits.max_body_bytes:,}"), status_code=413)
        return await call_next(request)

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
        return JSONResponse(_error_body(message, where[0] if where else None), status_code=400)

    @app.exception_handler(RequestError)
    async def refused(_: Request, err: RequestError) -> JSONResponse:
        return JSONResponse(_error_body(err.message, err.param), status_code=err.status, headers=err.headers)

    @app.exception_handler(Exception)
    async def failed(_: Request, err: Exception) -> JSONResponse:  # still OpenAI's error body, never plain text
        return JSONResponse(_error_body(f"the server failed to encode this request ({type(err).__name__})",
                                        kind="server_error"), status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, err: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(_error_body(str(err.detail)), status_code=err.status_code)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness: the process answers."""
        return {"status": "ok", "model": encoder.name, "dimension": encoder.dimension}

    @app.get("/ready")
    async def ready() -> JSONResponse:
        """Readiness: the model is loaded and has encoded once (a load balancer sends traffic only then)."""
        if not app.state.ready:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready", "in_flight": app.state.in_flight})

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": encoder.name, "object": "model", "owned_by": "polyembed"}]}

    @app.post("/v1/embeddings")
    async def embeddings(body: EmbeddingRequest) -> dict[str, Any]:
        if app.state.in_flight >= limits.max_concurrent_requests:
            raise RequestError(f"the server is at its limit of {limits.max_concurrent_requests} concurrent requests; "
                               "retry shortly", status=429, headers={"Retry-After": "1"})
        sentences, languages = _check_request(body, encoder, limits)
        tokens = _token_count(encoder, sentences)
        if tokens > limits.max_request_tokens:
            raise RequestError(f"'input' has {tokens:,} tokens; at most {limits.max_request_tokens:,} per request",
                               "input", status=413)
        app.state.in_flight += 1
        try:
            vectors = await batcher.embed(sentences, languages)
        finally:
            app.state.in_flight -= 1
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
                if body.encoding_format == "base64"
                else vector.tolist(),
            }
            for index, vector in enumerate(vectors)
        ]
        return {
            "object": "list",
            "data": data,
            "model": body.model or encoder.name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    return app
