"""Hub ids: one request with a short timeout and no retries; a gated repo, a missing (or private) one, a repo
without config.json and no network each give their own one line; the local cache is used when the Hub is away."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from refusal import assert_refused, run

huggingface_hub = pytest.importorskip("huggingface_hub")
httpx2 = pytest.importorskip("httpx2")  # the HTTP client huggingface_hub 2.x raises the errors of
errors = pytest.importorskip("huggingface_hub.errors")
constants = pytest.importorskip("huggingface_hub.constants")

LLAMA = {
    "model_type": "llama",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
}
REPO = "some-org/some-model"


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(
        status, request=httpx2.Request("HEAD", f"https://huggingface.co/{REPO}/resolve/main/config.json")
    )


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The Hub client with its requests replaced: ``hub.answer`` is raised by the HEAD request; no cache."""

    class Fake:
        answer: Exception | None = None
        requests = 0
        downloads = 0
        cached: Path | None = None

    fake = Fake()

    def metadata(url, timeout=None, **_):
        fake.requests += 1
        assert timeout is not None and timeout <= 3, "the request must have a short timeout"
        if fake.answer is not None:
            raise fake.answer

    def download(repo_id, filename, **_):
        fake.downloads += 1
        path = tmp_path / "downloaded" / filename
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(LLAMA))
        return str(path)

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", metadata)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: fake.cached and str(fake.cached))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return fake


def test_hub_id_that_answers_is_downloaded(hub) -> None:
    assert run("count", REPO).exit_code == 0
    assert hub.requests == 1 and hub.downloads == 1


def test_gated_repo_says_to_log_in(hub) -> None:
    hub.answer = errors.GatedRepoError("gated", response=_response(403))
    assert_refused(run("count", REPO), REPO, "gated", "log in", "HF_TOKEN")
    assert hub.requests == 1 and hub.downloads == 0


def test_missing_repo_says_no_such_repo(hub) -> None:
    hub.answer = errors.RepositoryNotFoundError("missing", response=_response(404))
    assert_refused(run("count", REPO), REPO, "no such repo", "private")


def test_repo_without_config_json(hub) -> None:
    hub.answer = errors.RemoteEntryNotFoundError("no entry", response=_response(404))
    assert_refused(run("count", REPO), REPO, "no config.json")


@pytest.mark.parametrize(
    "failure",
    [httpx2.ConnectError("Name or service not known"), httpx2.ConnectTimeout("timed out"), OSError("unreachable")],
    ids=["no_dns", "timeout", "os_error"],
)
def test_no_network_and_no_cache_is_one_request(hub, failure) -> None:
    hub.answer = failure
    assert_refused(run("count", REPO), REPO, "cannot reach the Hub", "cache")
    assert hub.requests == 1 and hub.downloads == 0  # no retries


def test_server_error_falls_back_to_the_cache(hub, tmp_path) -> None:
    hub.cached = tmp_path / "cached.json"
    hub.cached.write_text(json.dumps(LLAMA))
    hub.answer = errors.HfHubHTTPError("503", response=_response(503))
    assert run("count", REPO).exit_code == 0


def test_offline_mode_makes_no_request(hub, monkeypatch) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert_refused(run("count", REPO), REPO, "HF_HUB_OFFLINE", "cache")
    assert hub.requests == 0


def test_offline_mode_reads_the_cache(hub, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub.cached = tmp_path / "cached.json"
    hub.cached.write_text(json.dumps(LLAMA))
    assert run("count", REPO).exit_code == 0 and hub.requests == 0


def test_a_cached_config_is_still_read_strictly(hub, tmp_path) -> None:
    hub.answer = httpx2.ConnectError("down")
    hub.cached = tmp_path / "cached.json"
    hub.cached.write_text('{"model_type": "llama", "model_type": "llama"}')
    assert_refused(run("count", REPO), "cached.json", "'model_type'", "twice")


def quicker_of_two(script: str, env: dict) -> tuple[float, str]:
    """Run ``script`` twice; the shorter time it prints and its message (the other tests share the cores)."""
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        seconds, message = done.stdout.split(" ", 1)
        runs.append((float(seconds), message))
    return min(runs)


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "http://10.255.255.1:81"], ids=["refused", "blackholed"])
def test_unreachable_hub_fails_within_3_seconds(tmp_path: Path, endpoint: str) -> None:
    """A real process, a real (unreachable) endpoint, an empty cache: the lookup itself takes under 3 s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=endpoint)
    script = (
        "import time\n"
        "from llmcount.errors import LlmcountError\n"
        "from llmcount.sources import resolve\n"
        "import huggingface_hub\n"
        "start = time.monotonic()\n"
        "try:\n"
        f"    resolve({REPO!r})\n"
        "except LlmcountError as exc:\n"
        "    print(round(time.monotonic() - start, 2), exc)\n"
    )
    seconds, message = quicker_of_two(script, env)
    assert seconds < 3, message
    assert REPO in message and "cache" in message


@pytest.mark.parametrize(
    ("error", "needles"),
    [
        (lambda: errors.GatedRepoError("gated", response=_response(403)), ["gated", "log in"]),
        (lambda: errors.RepositoryNotFoundError("missing", response=_response(404)), ["no such repo"]),
    ],
    ids=["gated", "missing"],
)
def test_verify_hub_tells_gated_from_missing(monkeypatch, error, needles) -> None:
    def metadata(repo_id, **_):
        raise error()

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "model_info", lambda repo_id, **_: None)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", metadata)
    assert_refused(run("verify", "qwen3-8b", "--hub"), "Qwen/Qwen3-8B", *needles)


# --- verify --hub: every request has a short timeout; a timeout is one line naming the repo ------------------


@pytest.fixture
def hub_headers(monkeypatch):
    """``model_info`` and ``get_safetensors_metadata`` replaced: each records its timeout, then raises
    ``answers[name]`` if set."""

    class Fake:
        def __init__(self) -> None:
            self.timeouts: dict[str, float | None] = {}
            self.answers: dict[str, Exception] = {}

    fake = Fake()

    def model_info(repo_id, timeout=None, **_):
        fake.timeouts["model_info"] = timeout
        if "model_info" in fake.answers:
            raise fake.answers["model_info"]

    def metadata(repo_id, timeout=10, **_):  # huggingface_hub's own default is 10 s
        fake.timeouts["get_safetensors_metadata"] = timeout
        if "get_safetensors_metadata" in fake.answers:
            raise fake.answers["get_safetensors_metadata"]
        raise AssertionError("the fake has no headers")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "model_info", model_info)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", metadata)
    return fake


@pytest.mark.parametrize(
    ("where", "failure"),
    [
        ("model_info", httpx2.ConnectTimeout("timed out")),
        ("model_info", httpx2.ReadTimeout("timed out")),
        ("get_safetensors_metadata", httpx2.ReadTimeout("timed out")),
        ("get_safetensors_metadata", httpx2.PoolTimeout("timed out")),
    ],
    ids=["lookup_connect", "lookup_read", "headers_read", "headers_pool"],
)
def test_verify_hub_timeout_is_one_line_naming_the_repo(hub_headers, where, failure) -> None:
    hub_headers.answers[where] = failure
    assert_refused(run("verify", "qwen3-8b", "--hub"), "Qwen/Qwen3-8B", "did not answer within 2 s")


def test_verify_hub_requests_have_a_short_timeout(hub_headers) -> None:
    hub_headers.answers["get_safetensors_metadata"] = httpx2.ConnectError("down")
    assert_refused(run("verify", "qwen3-8b", "--hub"), "Qwen/Qwen3-8B", "cannot reach the Hub")
    assert set(hub_headers.timeouts) == {"model_info", "get_safetensors_metadata"}
    assert all(t is not None and t <= 3 for t in hub_headers.timeouts.values()), hub_headers.timeouts


def test_verify_hub_missing_repo_is_found_by_the_lookup(hub_headers) -> None:
    """get_safetensors_metadata calls a missing repo 'not a safetensors repo'; the lookup says it is missing."""
    hub_headers.answers["model_info"] = errors.RepositoryNotFoundError("missing", response=_response(404))
    assert_refused(run("verify", "qwen3-8b", "--hub"), "Qwen/Qwen3-8B", "no such repo")
    assert "get_safetensors_metadata" not in hub_headers.timeouts


def test_verify_hub_unreachable_fails_within_3_seconds(tmp_path: Path) -> None:
    """A real process and an endpoint that refuses connections: --hub gives up at once, naming the repo."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="http://127.0.0.1:9")
    script = (
        "import time\n"
        "from llmcount.errors import LlmcountError\n"
        "from llmcount.checkpoint import read_hub\n"
        "import huggingface_hub\n"
        "start = time.monotonic()\n"
        "try:\n"
        f"    read_hub({REPO!r})\n"
        "except LlmcountError as exc:\n"
        "    print(round(time.monotonic() - start, 2), exc)\n"
    )
    seconds, message = quicker_of_two(script, env)
    assert seconds < 3, message
    assert REPO in message and "Hub" in message
