"""Hostile input over a real socket: bodies past the cap (chunked, or with a Content-Length that lies), bodies that
stall, request heads too large, and requests far over the token cap; each refused with its 4xx and bounded in the
memory and time it costs, and the server serving others on."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from polyembed.serve import ServerLimits, create_app
from polyembed.serve.app import RequestError, _token_counts
from tests.serve.servers import serving

BODY_CAP = 2**20
GUARDED = ("--no-access-log", "--max-body-bytes", str(BODY_CAP), "--body-timeout", "2", "--max-header-bytes",
           "8192", "--max-headers", "50", "--max-concurrent-requests", "2")
GOOD_BODY = b'{"input": "hello"}'


@pytest.fixture(scope="module")
def guarded(tiny_folder) -> Iterator[str]:
    """A server with small limits: 1 MiB bodies, 2 s to send one, 8 KiB heads of at most 50 fields, 2 requests at
    once."""
    with serving(tiny_folder, *GUARDED) as (_, url):
        yield url


class Connection:
    """A raw HTTP/1.1 connection: what a hostile client sends, byte for byte, and the responses read back."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.socket = socket.create_connection((host, int(port)), timeout=timeout)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each piece its own segment, at once
        self.buffer = b""
        self.sent = 0

    def send(self, *pieces: bytes | Iterable[bytes]) -> None:
        """Send until done or the server closes the connection (it answered: the answer is read next)."""
        try:
            for piece in pieces:
                for part in [piece] if isinstance(piece, bytes) else piece:
                    self.socket.sendall(part)
                    self.sent += len(part)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def response(self) -> tuple[int, dict[str, str], Any]:
        """The next response: status, headers (lower-case names), JSON body."""
        while b"\r\n\r\n" not in self.buffer:
            self._receive()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = (line.partition(":") for line in lines[1:])
        headers = {name.strip().lower(): value.strip() for name, _, value in fields}
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            self._receive()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), headers, json.loads(body)

    def _receive(self) -> None:
        try:
            piece = self.socket.recv(2**16)
        except ConnectionResetError:  # what the server wrote before it closed was read already
            piece = b""
        if not piece:
            raise AssertionError(f"the server closed the connection without a full response: {self.buffer[:200]!r}")
        self.buffer += piece

    def close(self) -> None:
        self.socket.close()


def post_head(length: int | None = None, *extra: bytes) -> bytes:
    """The head of a POST /v1/embeddings: with a Content-Length, or chunked when `length` is None."""
    framing = b"transfer-encoding: chunked" if length is None else b"content-length: %d" % length
    return b"\r\n".join([b"POST /v1/embeddings HTTP/1.1", b"host: test", b"content-type: application/json",
                         framing, *extra, b"", b""])


def served(url: str) -> bool:
    """Whether the server still answers an ordinary request."""
    reply = httpx.post(f"{url}/v1/embeddings", json={"input": "still here"}, timeout=30)
    return reply.status_code == 200 and len(reply.json()["data"][0]["embedding"]) == 32


def test_a_chunked_body_is_413_as_soon_as_it_passes_the_cap(guarded) -> None:
    """No Content-Length to check up front: the body is counted as it arrives and refused once past the cap, not
    read to its end (32 MiB offered, the server stops reading early)."""
    offered = 32 * 2**20
    piece = b"a" * 2**16
    chunks = (b"%x\r\n" % len(piece) + piece + b"\r\n" for _ in range(offered // len(piece)))
    connection = Connection(guarded)
    connection.send(post_head(None), chunks)
    status, headers, body = connection.response()
    connection.close()
    assert status == 413 and headers["connection"] == "close"
    assert body["error"] == {"message": f"the request body has more than {BODY_CAP:,} bytes; at most {BODY_CAP:,}",
                             "type": "invalid_request_error", "param": None, "code": None}
    assert connection.sent < offered  # refused while the client was still sending
    assert served(guarded)
    assert 'polyembed_requests_total{status="413"}' in httpx.get(f"{guarded}/metrics", timeout=10).text


def test_a_client_that_sends_its_whole_body_first_reads_the_413(guarded) -> None:
    """A body a little over the cap (1.2x), sent to its end before the client reads (as most clients do): the
    server reads and drops the rest before it answers and closes, so the answer arrives instead of a reset."""
    piece = b"a" * 2**16
    chunks = [b"%x\r\n" % len(piece) + piece + b"\r\n" for _ in range(BODY_CAP * 6 // 5 // len(piece))]
    connection = Connection(guarded)
    connection.send(post_head(None), chunks, b"0\r\n\r\n")
    assert connection.sent == len(post_head(None)) + sum(map(len, chunks)) + 5  # all of it went out
    status, headers, _ = connection.response()
    connection.close()
    assert status == 413 and headers["connection"] == "close"


def test_a_body_that_lies_about_its_length_is_counted_not_trusted(encoder) -> None:
    """Whatever Content-Length says, the bytes that arrive are counted (an ASGI server need not enforce it): a
    body declared small that keeps coming is a 413 at the cap, and nothing past it is read."""
    app = create_app(encoder, ServerLimits(max_body_bytes=1000))
    scope = {"type": "http", "method": "POST", "path": "/v1/embeddings", "raw_path": b"/v1/embeddings",
             "query_string": b"", "headers": [(b"content-type", b"application/json"), (b"content-length", b"10")]}
    received: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        received.append(300)
        return {"type": "http.request", "body": b"x" * 300, "more_body": len(received) < 100}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    # refused at the first message past 1000 bytes (the 4th); then at most a quarter of the cap more is read and
    # dropped (so a client that finishes its body can read the answer), not the 100 messages offered
    assert sent[0]["status"] == 413 and 4 < len(received) <= 6
    assert "more than 1,000 bytes" in json.loads(sent[1]["body"])["error"]["message"]


def test_a_stalled_body_is_408_and_frees_its_slot(guarded) -> None:
    """Two clients send 3 of 17 declared bytes and stall, holding both slots: others get a 429 meanwhile, the two
    a 408 after --body-timeout 2, and then the server is free again."""
    stalled = [Connection(guarded) for _ in range(2)]
    started = time.monotonic()
    for connection in stalled:
        connection.send(post_head(17), b'{"i')
    time.sleep(0.3)
    locked_out = httpx.post(f"{guarded}/v1/embeddings", json={"input": "me too"}, timeout=30)
    answers = [connection.response() for connection in stalled]
    waited = time.monotonic() - started
    for connection in stalled:
        connection.close()
    assert locked_out.status_code == 429 and "concurrent requests" in locked_out.json()["error"]["message"]
    for status, headers, body in answers:
        assert status == 408 and headers["connection"] == "close"
        assert body["error"]["message"] == "the request body did not arrive within 2 s (received 3 bytes)"
        assert body["error"]["type"] == "invalid_request_error"
    assert 1.9 <= waited < 30
    assert served(guarded)
    assert httpx.get(f"{guarded}/ready", timeout=10).json()["in_flight"] == 0


HEADS = [
    ("a value just over the limit", [b"x-big: " + b"a" * 9000], "over 8,192 bytes"),
    ("a 1 MiB value", [b"x-big: " + b"a" * 2**20], "over 8,192 bytes"),
    ("a 16 MiB value", [b"x-big: " + b"a" * 2**24], "over 8,192 bytes"),
    ("51 fields", [b"x-%d: v" % index for index in range(48)], "over 50 header fields"),
    ("20,000 fields", [b"x-%d: v" % index for index in range(20_000)], "over 50 header fields"),
]


@pytest.mark.parametrize(("case", "fields", "message"), HEADS, ids=[case[0] for case in HEADS])
def test_a_head_over_the_limits_is_431_and_the_server_serves_on(guarded, case, fields, message) -> None:
    connection = Connection(guarded)
    connection.send(post_head(len(GOOD_BODY), *fields) + GOOD_BODY)
    status, headers, body = connection.response()
    connection.close()
    assert status == 431 and headers["connection"] == "close", case
    assert message in body["error"]["message"] and body["error"]["type"] == "invalid_request_error"
    assert served(guarded)


def test_heads_within_the_limits_pass_in_pieces_kept_alive_and_pipelined(guarded) -> None:
    """The head is counted per request: requests of nearly 8 KiB and 50 fields each, one after another on one
    connection, a head sent in small pieces, and two requests in one write, are all answered."""
    fields = [b"x-%d: v" % index for index in range(40)] + [b"x-big: " + b"a" * 7000]
    request = post_head(len(GOOD_BODY), *fields) + GOOD_BODY
    connection = Connection(guarded)
    for _ in range(3):
        connection.send(request)
        assert connection.response()[0] == 200
    connection.send(request[index:index + 500] for index in range(0, len(request), 500))
    assert connection.response()[0] == 200
    connection.send(request + request)
    assert [connection.response()[0], connection.response()[0]] == [200, 200]
    connection.close()


def test_head_limits_hold_under_any_asgi_server(encoder) -> None:
    """Served by another ASGI server than `polyembed serve` (here the test client), the middleware still refuses
    a head over the limits, on every path."""
    with TestClient(create_app(encoder, ServerLimits(max_headers=20, max_header_bytes=2048))) as client:
        many = client.post("/v1/embeddings", json={"input": "x"}, headers={f"x-{i}": "v" for i in range(20)})
        large = client.get("/health", headers={"x-big": "a" * 3000})
        fine = client.post("/v1/embeddings", json={"input": "x"}, headers={"x-big": "a" * 1000})
    assert many.status_code == 431 and "header fields; at most 20" in many.json()["error"]["message"]
    assert large.status_code == 431 and "at most 2,048" in large.json()["error"]["message"]
    assert fine.status_code == 200


class RecordingTokenizer:
    """A tokenizer that records how many characters it was given."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.characters = inner, 0

    def __call__(self, sentences: list[str], **kwargs: Any) -> Any:
        self.characters += sum(len(sentence) for sentence in sentences)
        return self.inner(sentences, **kwargs)


def test_counting_stops_at_the_token_cap_and_matches_one_call_below_it(encoder) -> None:
    """Tokenized a slice at a time: a request far over the cap is refused after work bounded by the cap, and one
    under the cap gets exactly the counts of a single call."""
    tokenizer = encoder.model.tokenizer
    text = "the quick brown fox jumps over the lazy dog " * 170
    recording = RecordingTokenizer(tokenizer)
    with pytest.raises(RequestError, match="^'input' has over 1,000 tokens") as refused:
        _token_counts(recording, [text] * 2048, 1000)
    assert refused.value.status == 413
    assert recording.characters < 4 * len(text)  # not the 2048 inputs
    mixed = ["short", text[:300], "a b c", text, "x" * 50, *["tiny one"] * 30]
    whole = [len(ids) for ids in tokenizer(mixed, add_special_tokens=True)["input_ids"]]
    assert _token_counts(tokenizer, mixed, sum(whole)) == whole
    with pytest.raises(RequestError, match=f"^'input' has {sum(whole):,} tokens; at most"):
        _token_counts(tokenizer, mixed, sum(whole) - 1)


def test_a_request_far_over_the_token_cap_does_not_hold_up_the_next_one(tiny_folder, encoder) -> None:
    """A 15 MB request under the body cap, far over the token cap, then a one-word request 0.3 s later: the first
    is a 413 and the second is answered long before the first could have been tokenized whole."""
    text = ("the quick brown fox jumps over the lazy dog " * 200)[:7500]
    inputs = [text] * 2048
    payload = json.dumps({"input": inputs}).encode()
    assert len(payload) < 16 * 2**20  # under the default body cap
    started = time.perf_counter()
    encoder.model.tokenizer(inputs[:256], add_special_tokens=True)
    whole = 8 * (time.perf_counter() - started)  # what tokenizing all of it takes here
    results: dict[str, tuple[httpx.Response, float]] = {}

    def post(name: str, content: bytes) -> None:
        began = time.perf_counter()
        reply = httpx.post(f"{url}/v1/embeddings", content=content, headers={"content-type": "application/json"},
                           timeout=120)
        results[name] = (reply, time.perf_counter() - began)

    with serving(tiny_folder, "--no-access-log") as (_, url):
        large = threading.Thread(target=post, args=("large", payload))
        large.start()
        time.sleep(0.3)
        post("small", GOOD_BODY)
        large.join()
    (big, _), (small, small_seconds) = results["large"], results["small"]
    assert big.status_code == 413 and "at most 65,536 per request" in big.json()["error"]["message"]
    assert small.status_code == 200
    assert small_seconds < whole / 2, (small_seconds, whole)
