"""The reply cache knows whose reply it is: keyed by the endpoint (never by the key), kept in a private
folder of edgewise's own, and shared between the service's clients only when asked for."""

from __future__ import annotations

import argparse
import json
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.clients.execution import IGNORED_CACHE_KEYS
from fakes import edge, edges_reply
from fastapi.testclient import TestClient
from mock_openai import MockOpenAIServer

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED, main
from edgewise.cli import serve as serve_cli
from edgewise.runtime import reply_cache
from edgewise.runtime.reply_cache import ReplyCache, ReplyCacheError, name_endpoint, private_folder

EPISODE = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme Corp in 2021. Bob lives in Berlin.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}, {"name": "Bob"}, {"name": "Berlin"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
FIRST = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021."))
SECOND = edges_reply(edge("Bob", "LIVES_IN", "Berlin", "Bob lives in Berlin."))
_ABSENT = object()


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """edgewise's cache folder under `tmp_path`, DSPy's own one beside it; DSPy's process-wide cache
    is put back as it was afterwards (read from the module, so that reading it builds nothing)."""
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "edgewise"))
    monkeypatch.setenv("DSPY_CACHEDIR", str(tmp_path / "dspy"))
    saved = dspy.__dict__.get("cache", _ABSENT)
    yield tmp_path / "edgewise" / "replies"
    if saved is _ABSENT:
        dspy.__dict__.pop("cache", None)
    else:
        dspy.__dict__["cache"] = saved


def extract(tmp_path: Path, api_base: str, *flags: str) -> tuple[int, dict[str, Any]]:
    """`edgewise extract` of EPISODE with the cache on; the exit status and the output line."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(EPISODE) + "\n")
    argv = ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", api_base]
    code = main([*argv, "--max-retries", "0", "--timeout", "5", "--no-progress", *flags])
    return code, json.loads(out.read_text())


def dead_port() -> int:
    """A port of 127.0.0.1 where nothing listens (bound by the OS, then closed again)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_cache_is_edgewise_s_own_private_folder_not_dspy_s(private_cache: Path, tmp_path: Path) -> None:
    with MockOpenAIServer(FIRST) as server:
        code, record = extract(tmp_path, server.api_base)
    assert code == EXIT_OK and record["edges"]
    assert isinstance(dspy.cache, ReplyCache) and len(dspy.cache.disk_cache) == 1
    assert not (tmp_path / "dspy").exists()
    assert stat.S_IMODE(private_cache.stat().st_mode) == 0o700
    files = [path for path in private_cache.rglob("*") if path.is_file()]
    folders = [path for path in private_cache.rglob("*") if path.is_dir()]
    assert files and {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o600}
    assert {stat.S_IMODE(path.stat().st_mode) for path in folders} == {0o700}


def test_another_endpoint_is_never_answered_with_the_first_endpoint_s_replies(
    private_cache: Path, tmp_path: Path
) -> None:
    with MockOpenAIServer(FIRST) as first:
        code, record = extract(tmp_path, first.api_base)
        assert code == EXIT_OK and [edge["fact"] for edge in record["edges"]] == [
            "Alice joined Acme Corp in 2021."
        ]
        code, again = extract(tmp_path, first.api_base)
        assert (code, len(first.requests), again["edges"]) == (EXIT_OK, 1, record["edges"])  # from the cache
    code, down = extract(tmp_path, f"http://127.0.0.1:{dead_port()}/v1")
    assert code == EXIT_SOME_FAILED and down["error"]["reason"] == "connection"
    with MockOpenAIServer(SECOND) as second:
        code, other = extract(tmp_path, second.api_base)
        assert len(second.requests) == 1
    assert code == EXIT_OK and [edge["fact"] for edge in other["edges"]] == ["Bob lives in Berlin."]


def test_the_key_holds_the_endpoint_and_never_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reply_cache, "_ENDPOINT_NAMES", {})
    cache = ReplyCache(None)
    request = {"model": "openai/mock", "messages": [{"role": "user", "content": "x"}], "api_key": "sk-one"}

    def key(**changes: Any) -> str:
        return cache.cache_key({**request, **changes}, IGNORED_CACHE_KEYS)

    here, there = "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"
    assert key(api_base=here, api_key="sk-two") == key(api_base=here)
    assert key(api_base=here) != key(api_base=there) != key(api_base=there, model="openai/other")
    # A managed local server: a new port each run, the same model file, the same replies.
    name_endpoint(here, "local/model@sha256:abc")
    name_endpoint(there, "local/model@sha256:abc")
    assert key(api_base=here) == key(api_base=there)


def test_a_cache_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "replies").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ReplyCacheError, match="not a link"):
        private_folder(tmp_path / "replies")
    assert private_folder(tmp_path / "own") == tmp_path / "own"
    assert stat.S_IMODE((tmp_path / "own").stat().st_mode) == 0o700


def _serve(monkeypatch: pytest.MonkeyPatch, *argv: str) -> Any:
    """The app `edgewise serve ARGV` would run (uvicorn stubbed out)."""
    import uvicorn

    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **_settings: captured.update(app=app))
    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    parser = argparse.ArgumentParser(prog="edgewise")
    serve_cli.register(parser.add_subparsers(dest="command"))
    assert serve_cli.run(parser.parse_args(["serve", *argv])) == 0
    return captured["app"]


def _calls(body: dict[str, Any]) -> int:
    return sum(step["calls"] for step in body["usage"].values())


@pytest.mark.parametrize(("flags", "model_requests"), [((), 2), (("--shared-cache",), 1)])
def test_the_service_shares_no_cache_between_clients_unless_asked(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...], model_requests: int
) -> None:
    episode = {**EPISODE, "nodes": [entity["name"] for entity in EPISODE["entities"]]}
    del episode["entities"], episode["id"]
    with MockOpenAIServer(FIRST) as server:
        app = _serve(monkeypatch, "--model", "openai/mock", "--api-base", server.api_base, *flags)
        with TestClient(app) as client:
            first, second = (client.post("/v1/extract", json=episode) for _ in range(2))
        assert len(server.requests) == model_requests
    assert first.status_code == second.status_code == 200, second.text
    assert _calls(first.json()) == 1
    # What the second client's response says it cost is what it cost: a model call, or (shared) none.
    assert _calls(second.json()) == (1 if model_requests == 2 else 0)
