"""What a server on a user's own machine needs beside the embeddings: an API key, the name clients see, what runs
the model (log line and /v1/models), and every option from a POLYEMBED_* environment variable."""

from __future__ import annotations

import logging

import pytest
import torch
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from polyembed.cli import app as cli
from polyembed.errors import PolyembedError
from polyembed.serve import create_app
from polyembed.serve.app import describe_backend
from polyembed.serve.auth import key_digest, refusal
from tests.serve.servers import serving

KEY = "sk-local-0123456789"


def test_with_a_key_only_the_probes_and_metrics_are_open(tiny_folder) -> None:
    """A real server with --api-key and --served-model-name: 401 (OpenAI's body, WWW-Authenticate) without the
    key or with a wrong one, on the embeddings, the model list and the docs alike; the probes and the metrics
    answer anyone; with the key, answers name the served model whatever the request named."""
    import httpx

    with serving(tiny_folder, "--api-key", KEY, "--served-model-name", "tiny-served", "--no-access-log") as (
            server, url):
        request = {"input": ["hello", "world"], "model": "text-embedding-3-small"}
        missing = httpx.post(f"{url}/v1/embeddings", json=request, timeout=30)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert missing.json()["error"]["type"] == "invalid_request_error" and missing.json()["error"]["code"] is None
        for header in (f"Bearer {KEY}x", f"Bearer {KEY[:-1]}", f"Basic {KEY}", KEY, "Bearer"):
            wrong = httpx.post(f"{url}/v1/embeddings", json=request, headers={"authorization": header}, timeout=30)
            assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer", header
            assert KEY not in wrong.text  # the key is never echoed
        assert wrong.json()["error"]["code"] is None  # "Bearer" with nothing after it: no key given
        assert httpx.post(f"{url}/v1/embeddings", json=request, headers={"authorization": f"Bearer {KEY}x"},
                          timeout=30).json()["error"]["code"] == "invalid_api_key"
        for path in ("/v1/models", "/docs", "/openapi.json", "/nowhere"):
            assert httpx.get(f"{url}{path}", timeout=30).status_code == 401, path
        for path in ("/health", "/ready", "/metrics"):
            assert httpx.get(f"{url}{path}", timeout=30).status_code == 200, path
        assert httpx.get(f"{url}/health", timeout=30).json()["model"] == "tiny-served"

        keyed = {"authorization": f"bearer {KEY}"}  # the scheme is case-insensitive (RFC 9110)
        answer = httpx.post(f"{url}/v1/embeddings", json=request, headers=keyed, timeout=30)
        assert answer.status_code == 200 and answer.json()["model"] == "tiny-served"
        assert len(answer.json()["data"]) == 2
        [listed] = httpx.get(f"{url}/v1/models", headers=keyed, timeout=30).json()["data"]
        assert listed["id"] == "tiny-served" and listed["object"] == "model" and isinstance(listed["created"], int)
        assert listed["polyembed"]["backend"] == "torch" and listed["polyembed"]["dimension"] == 32
        assert listed["polyembed"]["device"] == ("cuda:0" if torch.cuda.is_available() else "cpu")  # auto
        assert listed["polyembed"]["precision"] == "float32"
        metrics = httpx.get(f"{url}/metrics", timeout=30).text
    assert 'polyembed_requests_total{status="401"} 7.0' in metrics  # refusals of the embeddings are counted
    log = server.stderr.read().decode()
    [line] = [line for line in log.splitlines() if line.startswith("serving tiny-served")]
    assert f"(model {tiny_folder})" in line and "backend torch" in line and "device cpu" in line
    assert "32 dimensions" in line and line.endswith("API key required")
    assert KEY not in log


def test_options_come_from_the_environment_and_a_flag_wins(tiny_folder) -> None:
    """POLYEMBED_MAX_INPUTS=1 makes a two-input request the max-inputs 400; POLYEMBED_API_KEY is overridden by
    --api-key."""
    import httpx

    env = {"POLYEMBED_MAX_INPUTS": "1", "POLYEMBED_API_KEY": "from-the-environment",
           "POLYEMBED_SERVED_MODEL_NAME": "env-name", "POLYEMBED_ACCESS_LOG": "false"}
    with serving(tiny_folder, "--api-key", KEY, env=env) as (server, url):
        body = {"input": ["one", "two"]}
        assert httpx.post(f"{url}/v1/embeddings", json=body, timeout=30,
                          headers={"authorization": "Bearer from-the-environment"}).status_code == 401
        refused = httpx.post(f"{url}/v1/embeddings", json=body, headers={"authorization": f"Bearer {KEY}"},
                             timeout=30)
        assert refused.status_code == 400 and "at most 1 per request" in refused.json()["error"]["message"]
        assert httpx.get(f"{url}/health", timeout=30).json()["model"] == "env-name"
    assert "POST /v1/embeddings" not in server.stdout.read().decode()  # POLYEMBED_ACCESS_LOG=false


def test_every_serve_option_has_its_environment_variable() -> None:
    """POLYEMBED_<OPTION>, shown in --help, for every option: a container sets the server up from variables."""
    command = typer.main.get_command(cli)
    serve = command.get_command(None, "serve")  # type: ignore[attr-defined]
    options = [param for param in serve.params if param.name != "help"]
    assert len(options) >= 20
    for option in options:
        assert option.envvar == f"POLYEMBED_{option.name.upper()}", option.name
        assert option.show_envvar, option.name


@pytest.mark.parametrize(("env", "expected"), [
    ({"POLYEMBED_API_KEY": ""}, "error: POLYEMBED_API_KEY is set but empty"),
    ({"POLYEMBED_API_KEY": "two words"}, "error: POLYEMBED_API_KEY: has ' '"),
    ({"POLYEMBED_API_KEY": "key\n"}, "error: POLYEMBED_API_KEY: has '\\n'"),
    ({"POLYEMBED_SERVED_MODEL_NAME": " "}, "error: POLYEMBED_SERVED_MODEL_NAME: empty"),
    ({"POLYEMBED_MAX_INPUTS": "0"}, "POLYEMBED_MAX_INPUTS"),
    ({"POLYEMBED_PORT": "eighty"}, "POLYEMBED_PORT"),
], ids=["key-empty", "key-with-a-space", "key-with-a-newline", "name-blank", "max-inputs-0", "port-text"])
def test_a_bad_environment_variable_is_one_error_naming_it(env: dict[str, str], expected: str) -> None:
    """Refused before any model is loaded; an empty POLYEMBED_API_KEY (which click would read as unset, serving
    without a key) is an error too: whoever set it meant the server to need one."""
    result = CliRunner().invoke(cli, ["serve", "-m", "/nowhere"], env=env)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], result.stderr


def test_only_the_first_authorization_header_counts_and_a_mount_keeps_the_probes_open() -> None:
    digest = key_digest(KEY)

    def scope(path: str, *values: bytes, root: str = "") -> dict:
        return {"path": path, "root_path": root, "headers": [(b"authorization", value) for value in values]}

    assert refusal(scope("/v1/embeddings", b"Bearer " + KEY.encode()), digest) is None
    assert refusal(scope("/v1/embeddings", b"BEARER  " + KEY.encode() + b" "), digest) is None
    assert refusal(scope("/v1/embeddings", b"Bearer wrong", b"Bearer " + KEY.encode()), digest) is not None
    assert refusal(scope("/api/health", root="/api"), digest) is None
    assert refusal(scope("/api/v1/models", root="/api"), digest) is not None
    assert refusal(scope("/health/../v1/models"), digest) is not None


def test_create_app_refuses_a_key_or_name_no_client_could_use(encoder) -> None:
    with pytest.raises(PolyembedError, match="^api_key: empty"):
        create_app(encoder, api_key="")
    with pytest.raises(PolyembedError, match="^api_key: has 'é'"):
        create_app(encoder, api_key="clé")
    with pytest.raises(PolyembedError, match="^served_model_name: empty"):
        create_app(encoder, served_model_name="")


def test_an_export_folder_says_which_graph_it_serves(tiny_folder, tmp_path, caplog) -> None:
    """An export folder runs its int8 graph by default: /v1/models and the startup line say so; --backend onnx
    serves (and says) the fp32 graph."""
    from polyembed.models.backends import load_with_backend
    from polyembed.models.onnx_export import export_onnx

    folder = export_onnx(str(tiny_folder), tmp_path / "export", optimize=False)
    int8 = load_with_backend(str(folder))
    with caplog.at_level(logging.INFO, logger="polyembed"), TestClient(create_app(int8)) as client:
        described = client.get("/v1/models").json()["data"][0]["polyembed"]
    assert described == {"backend": "onnxruntime", "graph": "onnx/model_qint8.onnx", "precision": "int8",
                         "device": "cpu", "dimension": 32, "max_seq_length": int8.max_seq_length, "languages": None}
    [line] = [record.getMessage() for record in caplog.records if record.getMessage().startswith("serving ")]
    assert f"graph {folder}/onnx/model_qint8.onnx (int8)" in line and line.endswith("API key not required")
    fp32 = describe_backend(load_with_backend(str(folder), "onnx"))
    assert fp32["graph"] == "onnx/model.onnx" and fp32["precision"] == "float32"
