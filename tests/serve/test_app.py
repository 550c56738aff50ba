"""The embedding server: OpenAI-compatible answers, dynamic batching, routing by language, 4xx for bad input."""

from __future__ import annotations

import base64
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fastapi.testclient import TestClient

import polyembed
from polyembed.errors import PolyembedError
from polyembed.serve import ServerLimits, create_app
from tests.helpers import TRAINING_TEXTS, tiny_sentence_transformer
from tests.serve.doubles import SlowEncoder
from tests.serve.servers import serving


@pytest.fixture()
def client(encoder):
    with TestClient(create_app(encoder, ServerLimits(max_inputs=8, max_input_chars=200))) as test_client:
        yield test_client


class TwoLanguageEncoder:
    """A routed model of two tiny encoders (what the modular bundle looks like to the server)."""

    routes_by_language = True
    languages = ("de", "en")
    dimension = 32

    def __init__(self, english, german) -> None:
        self.name, self.by_language = "two-language", {"en": english, "de": german}

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        return self.by_language[language or "en"].encode(sentences, batch_size=batch_size)


def test_embeddings_follow_openais_shape_and_match_encode(client, encoder) -> None:
    response = client.post("/v1/embeddings", json={"input": TRAINING_TEXTS[:3], "model": "mine"})
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list" and body["model"] == encoder.name  # the served model's, not the one asked for
    assert [item["index"] for item in body["data"]] == [0, 1, 2] and body["data"][0]["object"] == "embedding"
    vectors = np.array([item["embedding"] for item in body["data"]], dtype=np.float32)
    assert np.allclose(vectors, polyembed.encode(encoder, TRAINING_TEXTS[:3]), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    tokens = sum(len(ids) for ids in encoder.model.tokenizer(TRAINING_TEXTS[:3])["input_ids"])
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}
    single = client.post("/v1/embeddings", json={"input": TRAINING_TEXTS[0], "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(single["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(decoded, vectors[0], atol=1e-6) and single["model"] == encoder.name


def test_health_and_models(client, encoder) -> None:
    assert client.get("/health").json() == {"status": "ok", "model": encoder.name, "dimension": 32}
    assert client.get("/v1/models").json()["data"][0]["id"] == encoder.name


BAD_REQUESTS = [
    ("not json", b"{'input': 'x'", None, "not valid JSON"),
    ("a list body", b'["x"]', None, "JSON object"),
    ("no input", b'{"model": "m"}', "input", "'input'"),
    ("a number", b'{"input": 3}', "input", "'input"),
    ("a number in the list", b'{"input": ["a", 3]}', "input", "'input"),
    ("token ids", b'{"input": [[1, 2]]}', "input", "'input"),
    ("empty list", b'{"input": []}', "input", "empty"),
    ("empty string", b'{"input": ["ok", "  "]}', "input", "input[1] is empty"),
    ("too many", b'{"input": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}', "input", "at most 8"),
    ("too long", ('{"input": "' + "x" * 201 + '"}').encode(), "input", "at most 200"),
    ("unknown language", b'{"input": "x", "language": "xq1"}', "language", "unknown language code 'xq1'"),
    ("one language short", b'{"input": ["a", "b"], "language": ["de"]}', "language", "one per input"),
    ("wrong dimensions", b'{"input": "x", "dimensions": 16}', "dimensions", "32-dimensional"),
    ("bad format", b'{"input": "x", "encoding_format": "int8"}', "encoding_format", "'encoding_format'"),
    ("string dimensions", b'{"input": "x", "dimensions": "32"}', "dimensions", "'dimensions'"),
    ("lone surrogate", b'{"input": ["ok", "a \\ud800 b"]}', "input",
     "input[1] is not valid Unicode text (a lone surrogate at character 2)"),
    ("lone low surrogate", b'{"input": "\\udc00"}', "input", "input[0] is not valid Unicode text"),
]


@pytest.mark.parametrize(("case", "payload", "param", "message"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_bad_requests_are_400_with_an_openai_error(client, case, payload, param, message) -> None:
    response = client.post("/v1/embeddings", content=payload, headers={"content-type": "application/json"})
    assert response.status_code == 400, (case, response.text)
    error = response.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] == param


def test_unknown_paths_and_methods_are_4xx_json(client) -> None:
    assert client.get("/v1/nothing").status_code == 404 and "error" in client.get("/v1/nothing").json()
    assert client.get("/v1/embeddings").status_code == 405


def test_concurrent_requests_share_batches(encoder) -> None:
    app = create_app(encoder, ServerLimits(max_batch_size=64, max_wait_ms=300))
    with TestClient(app) as test_client, ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(
            lambda text: test_client.post("/v1/embeddings", json={"input": [text, text.upper()]}), TRAINING_TEXTS[:6]
        ))
        batches = app.state.batcher.batches_run
    assert all(response.status_code == 200 for response in responses)
    assert batches < 6  # requests within the 300 ms window were encoded together
    for text, response in zip(TRAINING_TEXTS[:6], responses, strict=True):  # and each got its own rows back
        vectors = np.array([item["embedding"] for item in response.json()["data"]], dtype=np.float32)
        assert np.allclose(vectors, polyembed.encode(encoder, [text, text.upper()]), atol=1e-5)


def test_a_routed_model_gets_each_input_in_its_language(tmp_path, encoder) -> None:
    german = polyembed.load_model(str(tiny_sentence_transformer(tmp_path / "de", seed=1)))
    routed = TwoLanguageEncoder(encoder, german)
    with TestClient(create_app(routed)) as test_client:
        body = test_client.post(
            "/v1/embeddings", json={"input": ["Guten Tag", "Good day"], "language": ["de", "en"]}
        ).json()
        refused = test_client.post("/v1/embeddings", json={"input": "Habari", "language": "sw"})
    vectors = np.array([item["embedding"] for item in body["data"]], dtype=np.float32)
    assert np.allclose(vectors[0], polyembed.encode(german, ["Guten Tag"])[0], atol=1e-6)
    assert np.allclose(vectors[1], polyembed.encode(encoder, ["Good day"])[0], atol=1e-6)
    assert refused.status_code == 400 and "no encoder for it (it has de, en)" in refused.json()["error"]["message"]


def test_limits_are_checked() -> None:
    with pytest.raises(PolyembedError, match="^max_inputs: 0 is out of range: expected a value >= 1"):
        ServerLimits(max_inputs=0)
    with pytest.raises(PolyembedError, match="^max_wait_ms: -1 is out of range: expected a value >= 0 and <= 10000"):
        ServerLimits(max_wait_ms=-1)


def test_polyembed_serve_answers_on_loopback(tiny_folder) -> None:
    """The real command: uvicorn on 127.0.0.1, one health check and one embedding request, then stopped."""
    import httpx

    with serving(tiny_folder) as (server, url):
        assert httpx.get(f"{url}/health", timeout=2).json()["status"] == "ok"
        reply = httpx.post(f"{url}/v1/embeddings", json={"input": "hello"}, timeout=30)
        assert reply.status_code == 200 and len(reply.json()["data"][0]["embedding"]) == 32
    assert '"POST /v1/embeddings HTTP/1.1" 200' in server.stdout.read().decode()  # uvicorn's access log


def test_no_access_log_serves_without_a_line_per_request(tiny_folder) -> None:
    import httpx

    with serving(tiny_folder, "--no-access-log") as (server, url):
        assert httpx.post(f"{url}/v1/embeddings", json={"input": "hello"}, timeout=30).status_code == 200
    assert "Application startup complete" in server.stderr.read().decode()
    assert "POST /v1/embeddings" not in server.stdout.read().decode()  # where uvicorn writes its access log


def test_over_a_real_socket_a_gone_client_is_cancelled_and_sigterm_lets_accepted_requests_finish(
        tiny_folder) -> None:
    """--max-wait-ms 1500 keeps a lone request queued for 1.5 s: a client that hangs up meanwhile is counted as
    cancelled (its work dropped), and a SIGTERM meanwhile still answers the accepted request, then exits."""
    import signal
    import threading

    import httpx

    with serving(tiny_folder, "--max-wait-ms", "1500", "--shutdown-timeout", "20") as (server, url):
        with pytest.raises(httpx.ReadTimeout):  # hangs up after 0.3 s, while its job waits in the queue
            httpx.post(f"{url}/v1/embeddings", json={"input": "gone"}, timeout=0.3)
        time.sleep(2.0)
        metrics = httpx.get(f"{url}/metrics", timeout=5).text
        assert "polyembed_requests_cancelled_total 1.0" in metrics
        replies: list[httpx.Response] = []
        client = threading.Thread(target=lambda: replies.append(
            httpx.post(f"{url}/v1/embeddings", json={"input": ["kept", "too"]}, timeout=30)))
        client.start()
        time.sleep(0.5)  # accepted, waiting for its batch
        server.send_signal(signal.SIGTERM)
        client.join(timeout=30)
        assert len(replies) == 1 and replies[0].status_code == 200 and len(replies[0].json()["data"]) == 2
        # uvicorn re-raises the signal once drained, so the exit status is SIGTERM's, without a traceback
        assert server.wait(timeout=30) == -signal.SIGTERM
        assert "Traceback" not in server.stderr.read().decode()


class FragileEncoder:
    """The tiny encoder, except that the model fails on any batch holding "boom" and the tokenizer on "tok!"
    (stand-ins for inputs that pass validation and break the model or the tokenizer)."""

    dimension = 32

    def __init__(self, inner) -> None:
        self.inner, self.name, self.calls = inner, "fragile", []

    def tokenizer(self, sentences, **kwargs):
        if any("tok!" in sentence for sentence in sentences):
            raise ValueError("cannot tokenize")
        return self.inner.model.tokenizer(sentences, **kwargs)

    def encode(self, sentences, language=None, *, batch_size=64, show_progress_bar=False):
        self.calls.append(list(sentences))
        if any("boom" in sentence for sentence in sentences):
            raise RuntimeError("the model failed")
        return self.inner.encode(sentences, batch_size=batch_size)


def test_a_request_that_breaks_the_model_fails_alone(encoder) -> None:
    """Requests batched with a failing one still get their embeddings; the failing one a 500 JSON error."""
    fragile = FragileEncoder(encoder)
    app = create_app(fragile, ServerLimits(max_batch_size=64, max_wait_ms=300))
    texts = [*TRAINING_TEXTS[:4], "boom goes the model"]
    with TestClient(app, raise_server_exceptions=False) as test_client, ThreadPoolExecutor(5) as pool:
        responses = list(pool.map(lambda text: test_client.post("/v1/embeddings", json={"input": text}), texts))
    assert [response.status_code for response in responses] == [200, 200, 200, 200, 500]
    shared = [call for call in fragile.calls if len(call) > 1 and any("boom" in text for text in call)]
    assert shared, "the failing request was batched with others (the case under test)"
    for text, response in zip(texts[:4], responses, strict=False):
        vector = np.array(response.json()["data"][0]["embedding"], dtype=np.float32)
        assert np.allclose(vector, polyembed.encode(encoder, [text])[0], atol=1e-5)
    error = responses[-1].json()["error"]
    assert error["type"] == "server_error" and "RuntimeError" in error["message"]


def test_an_input_the_tokenizer_cannot_read_is_refused_before_batching(encoder) -> None:
    app = create_app(FragileEncoder(encoder))
    with TestClient(app) as test_client:
        warmed_up = app.state.batcher.batches_run
        response = test_client.post("/v1/embeddings", json={"input": ["fine", "tok! here"]})
        batches = app.state.batcher.batches_run - warmed_up
    assert response.status_code == 400 and batches == 0
    assert response.json()["error"] == {"message": "input[1] cannot be tokenized by this model (ValueError)",
                                        "type": "invalid_request_error", "param": "input", "code": None}


def test_costly_requests_are_413_and_overload_is_429_with_retry_after(encoder) -> None:
    limits = ServerLimits(max_request_tokens=20, max_body_bytes=300, max_concurrent_requests=1, max_wait_ms=0)
    slow = SlowEncoder(encoder)
    app = create_app(slow, limits)
    with TestClient(app) as test_client, ThreadPoolExecutor(3) as pool:
        tokens = test_client.post("/v1/embeddings", json={"input": ["a b c d e f g h i j k l m n o p q r s t u"]})
        body = test_client.post("/v1/embeddings", json={"input": ["x" * 150, "y" * 150]})
        slow.delay = 1.0
        responses = list(pool.map(lambda text: test_client.post("/v1/embeddings", json={"input": text}),
                                  ["one", "two", "three"]))
        slow.delay = 0.0
        after = test_client.post("/v1/embeddings", json={"input": "one"})
    assert tokens.status_code == 413 and "at most 20 per request" in tokens.json()["error"]["message"]
    assert body.status_code == 413 and "at most 300" in body.json()["error"]["message"]
    codes = sorted(response.status_code for response in responses)
    assert codes[0] == 200 and set(codes[1:]) <= {200, 429} and 429 in codes  # one at a time: the rest refused
    refused = next(response for response in responses if response.status_code == 429)
    assert refused.headers["retry-after"] == "1" and "concurrent requests" in refused.json()["error"]["message"]
    assert after.status_code == 200 and app.state.in_flight == 0  # served again once the load is gone


def test_malformed_requests_among_concurrent_good_ones_fail_alone_and_change_nothing(encoder) -> None:
    """Lone surrogates, an oversized body and a request over the token cap, sent while good requests are being
    batched: each bad one a 4xx, every good one a 200 with its own embedding, and a probe sentence embeds to the
    same vector before and after."""
    app = create_app(encoder, ServerLimits(max_wait_ms=50, max_request_tokens=60, max_body_bytes=4000))
    good = [{"input": text} for text in TRAINING_TEXTS[:12]]
    bad = [(b'{"input": "a \\ud800 b"}', 400), (b'{"input": ["ok", "\\udc00"]}', 400),
           (b'{"input": ["fine", "x \\udbff\\udbff y"]}', 400),
           (('{"input": "' + "long " * 1000 + '"}').encode(), 413),
           (('{"input": "' + "many words here " * 15 + '"}').encode(), 413)]
    assert len(encoder.model.tokenizer("many words here " * 15)["input_ids"]) > 60  # over the cap by tokens alone
    jobs = [("good", payload) for payload in good]
    for index, case in enumerate(bad):  # spread among the good ones
        jobs.insert(2 + 3 * index, ("bad", case))
    probe = {"input": "a fixed probe sentence"}

    def send(job):
        kind, payload = job
        if kind == "good":
            return test_client.post("/v1/embeddings", json=payload)
        return test_client.post("/v1/embeddings", content=payload[0], headers={"content-type": "application/json"})

    with TestClient(app) as test_client, ThreadPoolExecutor(8) as pool:
        before = test_client.post("/v1/embeddings", json=probe).json()["data"][0]["embedding"]
        responses = list(pool.map(send, jobs))
        after = test_client.post("/v1/embeddings", json=probe).json()["data"][0]["embedding"]
    for (kind, payload), response in zip(jobs, responses, strict=True):
        if kind == "bad":
            assert response.status_code == payload[1], response.text
            assert response.json()["error"]["type"] == "invalid_request_error"
        else:
            assert response.status_code == 200
            vector = np.array(response.json()["data"][0]["embedding"], dtype=np.float32)
            assert np.allclose(vector, polyembed.encode(encoder, [payload["input"]])[0], atol=1e-5)
    assert before == after


def test_ready_after_warm_up_and_health_always(encoder) -> None:
    app = create_app(encoder)
    assert app.state.ready is False  # not started: a load balancer would get 503 from /ready
    with TestClient(app) as test_client:
        assert test_client.get("/ready").json() == {"status": "ready", "in_flight": 0}
        assert app.state.batcher.batches_run == 1  # the warm-up encode
        assert test_client.get("/health").status_code == 200
    assert app.state.ready is False


def test_one_long_input_does_not_pad_the_short_ones(encoder) -> None:
    """A long input is encoded in its own model call (token budget); every row still matches encode."""
    texts = ["word " * 60, *TRAINING_TEXTS[:5]]
    app = create_app(encoder, ServerLimits(max_batch_tokens=80, max_wait_ms=0))
    with TestClient(app) as test_client:
        before = app.state.batcher.model_calls
        response = test_client.post("/v1/embeddings", json={"input": texts})
        calls = app.state.batcher.model_calls - before
    assert response.status_code == 200 and calls >= 2
    vectors = np.array([item["embedding"] for item in response.json()["data"]], dtype=np.float32)
    assert np.allclose(vectors, polyembed.encode(encoder, texts, normalize=True), atol=1e-5)


def test_metrics_show_requests_batches_and_queue(client) -> None:
    client.post("/v1/embeddings", json={"input": TRAINING_TEXTS[:2]})
    client.post("/v1/embeddings", json={"input": ""})
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    for name in ("polyembed_requests_total", "polyembed_request_duration_seconds_bucket", "polyembed_queue_depth",
                 "polyembed_requests_in_flight", "polyembed_batch_size_sentences_bucket",
                 "polyembed_batch_padded_tokens_bucket", "polyembed_encode_duration_seconds_bucket",
                 "polyembed_tokens_total", "polyembed_requests_cancelled_total"):
        assert name in text, name
    assert 'polyembed_requests_total{status="200"} 1.0' in text
    assert 'polyembed_requests_total{status="400"} 1.0' in text


def test_metrics_time_the_garbage_collections_while_the_server_runs(encoder) -> None:
    """A collection pauses every thread, the model's too: the objects of the warm server are frozen (a full
    collection no longer walks them) and /metrics times the collections by generation, from start-up until the
    server stops (then the callback is gone and the objects can be collected again)."""
    import gc

    app = create_app(encoder)
    callbacks = len(gc.callbacks)
    with TestClient(app) as test_client:
        assert len(gc.callbacks) == callbacks + 1
        assert gc.get_freeze_count() > 0  # what the warm server holds is out of the collector's sight
        gc.collect()
        text = test_client.get("/metrics").text
    assert len(gc.callbacks) == callbacks and gc.get_freeze_count() == 0
    count = next(line for line in text.splitlines()
                 if line.startswith('polyembed_gc_duration_seconds_count{generation="2"}'))
    assert float(count.rsplit(" ", 1)[1]) >= 1.0


def test_metrics_count_every_refusal_and_failure(encoder) -> None:
    """413 from the body cap (a middleware) and 500 from a failing model are counted like any answer."""
    app = create_app(FragileEncoder(encoder), ServerLimits(max_body_bytes=300, max_wait_ms=0))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        assert test_client.post("/v1/embeddings", json={"input": ["x" * 400]}).status_code == 413
        assert test_client.post("/v1/embeddings", json={"input": "boom"}).status_code == 500
        text = test_client.get("/metrics").text
    assert 'polyembed_requests_total{status="413"} 1.0' in text
    assert 'polyembed_requests_total{status="500"} 1.0' in text
