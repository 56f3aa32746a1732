"""A reply that cannot be parsed, or that stopped at the token limit, is retried once without the cache
and with room to finish; when it fails again the episode fails (`parse_failure`) in the batch, the
service and the Ray stage, is never cached, and the bench still scores it and counts it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedLM, edge, edges_reply
from fastapi.testclient import TestClient
from mock_openai import MockOpenAIServer
from test_cache_trust import EPISODE, _serve, extract, private_cache  # noqa: F401  (a fixture)

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED
from edgewise.domain.episode import Episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.seed_prompt import SeedPromptExtractor
from edgewise.runtime.lm import lm_context
from edgewise.runtime.runner import ParseFailure, run_episode

FACT = "Alice joined Acme Corp in 2021."
REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", FACT))
BROKEN = "Sure! Here are the edges: none"


def replies(*texts: str) -> Callable[[dict[str, Any]], str]:
    """A responder that answers with `texts` in turn, then with the last one."""
    queue = list(texts)
    return lambda _body: queue.pop(0) if len(queue) > 1 else queue[0]


def token_limit(body: dict[str, Any]) -> int:
    return int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)


class CutServer(MockOpenAIServer):
    """Stops every reply to a request with a token limit under `room` at half its text, finish reason
    `length`, as a server does at max_tokens."""

    def __init__(self, content: str, room: int) -> None:
        super().__init__(lambda body: content if token_limit(body) >= room else content[: len(content) // 2])
        self.room = room

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        completion = super()._completion(body, content)
        if token_limit(body) < self.room:
            for choice in completion["choices"]:
                choice["finish_reason"] = "length"
        return completion


def test_an_unparseable_reply_then_a_good_one_is_a_result_after_two_calls(
    private_cache: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with MockOpenAIServer(replies(BROKEN, REPLY)) as server:
        code, record = extract(tmp_path, server.api_base)
        limits = [token_limit(body) for body in server.requests]
    assert code == EXIT_OK and [edge["fact"] for edge in record["edges"]] == [FACT]
    assert (record["usage"]["extract"]["calls"], record["parseFailures"]) == (2, 0)
    assert limits == [1024, 2048]  # the retry has twice the room


def test_two_unparseable_replies_are_an_error_line_and_a_rerun_asks_the_model_again(
    private_cache: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with MockOpenAIServer(BROKEN) as server:
        code, record = extract(tmp_path, server.api_base)
        assert (code, len(server.requests)) == (EXIT_SOME_FAILED, 2)
        assert "edges" not in record
        assert (record["error"]["kind"], record["error"]["reason"]) == ("lm", "parse_failure")
        assert "extract" in record["error"]["message"] and BROKEN not in record["error"]["message"]
        code, again = extract(tmp_path, server.api_base)  # the bad reply was never kept in the cache
        assert (code, len(server.requests), again["error"]["reason"]) == (
            EXIT_SOME_FAILED,
            4,
            "parse_failure",
        )


def test_a_reply_cut_at_the_token_limit_is_retried_with_twice_the_room(
    private_cache: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with CutServer(REPLY, room=500) as server:
        code, record = extract(tmp_path, server.api_base, "--max-tokens", "300")
        assert [token_limit(body) for body in server.requests] == [300, 600]
        extract(tmp_path, server.api_base, "--max-tokens", "300")
        # Asked again: the cut reply was dropped from the cache, and a retried reply is never stored.
        assert [token_limit(body) for body in server.requests] == [300, 600] * 2
    assert code == EXIT_OK and [edge["fact"] for edge in record["edges"]] == [FACT]


def test_a_reply_cut_on_its_retry_too_is_an_error_line(
    private_cache: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    with CutServer(REPLY, room=10_000) as server:
        code, record = extract(tmp_path, server.api_base, "--max-tokens", "300")
        assert len(server.requests) == 2
    assert code == EXIT_SOME_FAILED and record["error"]["reason"] == "parse_failure"
    assert "token limit" in record["error"]["message"]


def test_the_service_answers_502_parse_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    episode = {
        "episodeContent": FACT,
        "nodes": ["Alice", "Acme Corp"],
        "referenceTime": "2025-04-30T00:00:00Z",
    }
    with MockOpenAIServer(BROKEN) as server:
        app = _serve(
            monkeypatch, "--model", "openai/mock", "--api-base", server.api_base, "--max-retries", "0"
        )
        with TestClient(app) as client:
            answer = client.post("/v1/extract", json=episode)
        assert len(server.requests) == 2
    assert answer.status_code == 502, answer.text
    assert {key: answer.json()["error"][key] for key in ("status", "reason")} == {
        "status": 502,
        "reason": "parse_failure",
    }


def test_a_ray_stage_row_is_an_error_row() -> None:
    pytest.importorskip("ray")
    import pyarrow as pa

    from edgewise.runtime.lm import LMConfig
    from edgewise.scale import ray_stage

    with MockOpenAIServer(BROKEN) as server:
        config = LMConfig(model="openai/mock", api_base=server.api_base, cache=False, num_retries=0)
        stage = ray_stage.EpisodeStage(
            program="default",
            reflexion_rounds=None,
            open_types=False,
            settings=ray_stage.lm_settings(config, 1),
            api_bases=[],
            endpoint_counter=None,
            episode_timeout_s=None,
            workers=1,
        )
        table = stage(pa.Table.from_pylist([{**EPISODE, "line": 1}]))
    assert table.column("error").to_pylist() == ["parse_failure"]
    assert "edges" not in json.loads(table.column("record")[0].as_py())


def test_the_runner_fails_the_episode_and_the_bench_s_way_scores_it() -> None:
    episode = Episode.model_validate({key: value for key, value in EPISODE.items() if key != "id"})
    lm = ScriptedLM(lambda _messages, _kwargs: BROKEN)
    with lm_context(lm):
        failed = run_episode(EdgeExtractor(), episode)
        kept = run_episode(EdgeExtractor(), episode, keep_unparsed=True)
    assert (failed.reason, type(failed.error), failed.result, failed.usage.calls) == (
        "parse_failure",
        ParseFailure,
        None,
        2,
    )
    assert kept.result is not None and kept.usage.calls == 2
    assert (kept.result.parse_failures, kept.result.edges) == (1, [])
    assert [call["kwargs"].get("max_tokens") for call in lm.calls] == [None, 2000] * 2


def test_the_prompt_baselines_retry_through_the_same_call() -> None:
    episode = Episode.model_validate({key: value for key, value in EPISODE.items() if key != "id"})
    lm = ScriptedLM([BROKEN, REPLY])
    with lm_context(lm):
        result = SeedPromptExtractor()(episode).result
    assert (result.parse_failures, [edge.fact for edge in result.edges]) == (0, [FACT])
    assert result.usage["extract"].calls == 2 and lm.calls[1]["kwargs"]["cache"] is False
