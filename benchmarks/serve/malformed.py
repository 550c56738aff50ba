"""The malformed suite on a real server: bad requests among concurrent good ones, a burst over the concurrency
limit, and a probe sentence embedded alone before, between and after."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.serve.render import render
from benchmarks.serve.server import running, sentences
from benchmarks.serve.spec import MALFORMED_LIMITS
from benchmarks.serve.store import load, save


def _malformed_cases(texts: list[str]) -> list[tuple[str, bytes, int | None]]:
    """(case, raw body, the status the issue asks for; None: any 4xx)."""
    return [("lone high surrogate", b'{"input": "a \\ud800 b"}', 400),
            ("lone low surrogate among good inputs", b'{"input": ["ok", "\\udc00"]}', 400),
            ("two high surrogates", b'{"input": ["fine", "x \\udbff\\udbff y"]}', 400),
            ("low surrogate before a high one", b'{"input": "\\udc00\\ud800"}', 400),
            ("bytes that are not UTF-8", b'{"input": "\xff\xfe"}', None),
            ("truncated JSON", b'{"input": ["a", ', None),
            ("input of the wrong type", b'{"input": 5}', None),
            ("no inputs", b'{"input": []}', None),
            ("body over --max-body-bytes 65536", json.dumps({"input": ["word " * 2000] * 8}).encode(), 413),
            ("tokens over --max-request-tokens 256", json.dumps({"input": " ".join(texts[:40])}).encode(), 413)]


def malformed(models: list[str], backend: str) -> None:
    """Bad requests mixed into concurrent good traffic on a real server (MALFORMED_LIMITS): every bad one a 4xx,
    every good one a 200 (its embedding compared with the same sentence sent alone afterwards), then a burst of
    large requests over --max-concurrent-requests (429 with Retry-After; /metrics scraped every 20 ms while it
    runs, the most requests in flight and queued it showed), and a probe sentence embedded alone before, between
    and after: identical vectors."""
    texts = sentences(512)
    saved = load() or {"entries": [], "ceilings": {}}
    found = saved.setdefault("malformed", {})
    for model in models:
        with running("polyembed", model, backend, None, MALFORMED_LIMITS) as server:
            found[f"{model}/{backend}"] = _malformed_on(server.url, texts)
        print(json.dumps(found[f"{model}/{backend}"], indent=1), flush=True)
        save(saved)
    render()


def _malformed_on(url: str, texts: list[str]) -> dict[str, Any]:
    """The malformed suite against one running server (see `malformed`)."""
    import httpx
    import numpy as np

    metrics_url = url.replace("/v1/embeddings", "/metrics")
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(6) as pool:
        def post(body: bytes) -> httpx.Response:
            return client.post(url, content=body, headers={"content-type": "application/json"})

        def probe() -> list[float]:
            return post(json.dumps({"input": "A fixed probe sentence."}).encode()).json()["data"][0]["embedding"]

        probes = [probe()]
        good = [json.dumps({"input": text}).encode() for text in texts[:48]]
        jobs: list[tuple[str, bytes, int | None]] = [("good", body, 200) for body in good]
        for index, case in enumerate(_malformed_cases(texts)):  # spread among the good ones
            jobs.insert(2 + 5 * index, case)
        answers = list(pool.map(lambda job: post(job[1]), jobs))
        probes.append(probe())
        alone = [post(body).json()["data"][0]["embedding"] for body in good]
        burst_body = json.dumps({"input": texts[:16]}).encode()
        with ThreadPoolExecutor(24) as burst_pool:
            pending = [burst_pool.submit(post, burst_body) for _ in range(24)]
            during: list[str] = []  # what /metrics shows while the burst runs, every 20 ms
            while not all(future.done() for future in pending):
                during.append(httpx.get(metrics_url, timeout=10).text)
                time.sleep(0.02)
            burst = [future.result() for future in pending]
        probes.append(probe())
        after = httpx.get(metrics_url, timeout=10).text
    in_traffic = [answer.json()["data"][0]["embedding"] for job, answer in zip(jobs, answers, strict=True)
                  if job[0] == "good" and answer.status_code == 200]
    cosines = [float(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y))
               for x, y in zip(in_traffic, alone, strict=True)] if len(in_traffic) == len(alone) else []

    def gauge(name: str) -> float | None:
        """The highest value of a gauge over the scrapes during the burst."""
        values = [float(line.split()[-1]) for text in during for line in text.splitlines()
                  if line.startswith(name + " ")]
        return max(values, default=None)

    def message(answer: httpx.Response) -> str:
        if answer.headers.get("content-type", "").startswith("application/json"):
            return str(answer.json().get("error", {}).get("message", ""))[:160]
        return answer.text[:160]

    return {"limits": list(MALFORMED_LIMITS),
            "cases": [{"case": job[0], "expected": job[2], "status": answer.status_code, "error": message(answer)}
                      for job, answer in zip(jobs, answers, strict=True) if job[0] != "good"],
            "good": {"sent": len(good),
                     "statuses": _count(answer.status_code for job, answer in zip(jobs, answers, strict=True)
                                        if job[0] == "good"),
                     "min_cosine_to_alone": round(min(cosines), 6) if cosines else None},
            "burst": {"sent": len(burst), "statuses": _count(answer.status_code for answer in burst),
                      "retry_after_on_every_429": all(answer.headers.get("retry-after") for answer in burst
                                                      if answer.status_code == 429),
                      "scrapes_during": len(during),
                      "in_flight_during": gauge("polyembed_requests_in_flight"),
                      "queue_depth_during": gauge("polyembed_queue_depth")},
            "probe_identical": all(vector == probes[0] for vector in probes[1:]),
            "requests_by_status": {line.split('"')[1]: int(float(line.split()[-1])) for line in after.splitlines()
                                   if line.startswith("polyembed_requests_total{")}}


def _count(statuses: Iterable[int]) -> dict[str, int]:
    """Answers by status code, in code order, as the tables show them."""
    return dict(sorted(Counter(map(str, statuses)).items()))
