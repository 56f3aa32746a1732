"""`edgewise extract` on good and bad JSONL, end to end over HTTP against the mock server."""

from __future__ import annotations

import argparse
import io
import json
import sys

from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer

from edgewise.cli import build_parser, main

GOOD = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021.", validAt="2021"))


def _run_cli(tmp_path, lines: list[str | bytes], server: MockOpenAIServer, *extra: str) -> list[dict]:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "extract",
            "--input",
            str(source),
            "--output",
            str(out),
            "--model",
            "openai/mock",
            "--api-base",
            server.api_base,
            "--max-retries",
            "0",
            "--no-progress",
            "--no-cache",
            *extra,
        ]
    )
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_good_line_returns_edges_in_the_seed_shape(tmp_path):
    with MockOpenAIServer(REPLY) as server:
        [record] = _run_cli(tmp_path, [json.dumps(GOOD)], server)
    assert record["id"] == "ep-1" and record["line"] == 1
    assert record["edges"] == [
        {
            "relationshipType": "WORKS_AT",
            "sourceEntityName": "Alice",
            "targetEntityName": "Acme Corp",
            "fact": "Alice joined Acme Corp in 2021.",
            "validAt": "2021-01-01T00:00:00Z",
            "invalidAt": None,
            "attributes": {},
        }
    ]
    assert record["usage"]["extract"]["calls"] == 1
    assert record["usage"]["extract"]["promptTokens"] > 0


def test_bad_lines_yield_error_lines_and_never_stop_the_run(tmp_path):
    lines = [
        "this is not json",
        json.dumps({k: v for k, v in GOOD.items() if k != "episodeContent"}),
        json.dumps({**GOOD, "referenceTime": "yesterday-ish"}),
        json.dumps({**GOOD, "entities": [{"name": f"Entity {i}"} for i in range(500)]}),
        json.dumps({**GOOD, "episodeContent": "", "entities": []}),
        b"\xff\xfe not utf-8",
        json.dumps([1, 2]),
        json.dumps({**GOOD, "entities": [{"name": ""}]}),
        json.dumps(GOOD),
    ]
    with MockOpenAIServer(REPLY) as server:
        records = _run_cli(tmp_path, lines, server)
    assert [r["line"] for r in records] == list(range(1, 10))
    assert records[0]["error"]["message"].startswith("not valid JSON")
    assert records[1]["error"]["field"] == "episodeContent"
    assert records[2]["error"]["field"] == "referenceTime"
    assert "edges" in records[3]  # 500 entities is valid input
    assert records[4]["edges"] == [] and records[4]["usage"] == {}  # empty episode: no LM call
    assert "UTF-8" in records[5]["error"]["message"]
    assert records[6]["error"]["message"] == "expected a JSON object"
    assert records[7]["error"]["field"] == "entities[0].name"
    assert len(records[8]["edges"]) == 1
    assert len(server.requests) == 2


def test_provider_failure_is_an_error_line(tmp_path):
    with MockOpenAIServer(REPLY, faults=["500", None]) as server:
        records = _run_cli(tmp_path, [json.dumps(GOOD), json.dumps({**GOOD, "id": "ep-2"})], server)
    assert records[0]["error"]["kind"] == "lm" and records[0]["id"] == "ep-1"
    assert "edges" in records[1]


def test_output_keeps_input_order_with_workers(tmp_path):
    lines = [json.dumps({**GOOD, "id": f"ep-{i}"}) for i in range(12)]
    with MockOpenAIServer(REPLY, latency=0.01) as server:
        records = _run_cli(tmp_path, lines, server, "--workers", "4")
    assert [r["id"] for r in records] == [f"ep-{i}" for i in range(12)]


def test_resume_skips_complete_lines_and_repairs_a_cut_line(tmp_path):
    lines = [json.dumps({**GOOD, "id": f"ep-{i}"}) for i in range(5)]
    out = tmp_path / "out.jsonl"
    done = [{"id": f"ep-{i}", "line": i + 1, "edges": []} for i in range(2)]
    out.write_text("".join(json.dumps(d) + "\n" for d in done) + '{"id": "ep-2", "li')
    with MockOpenAIServer(REPLY) as server:
        records = _run_cli(tmp_path, lines, server, "--resume")
        assert len(server.requests) == 3
    assert [r["id"] for r in records] == [f"ep-{i}" for i in range(5)]


def test_stdin_to_stdout(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((json.dumps(GOOD) + "\n").encode())))
    with MockOpenAIServer(REPLY) as server:
        code = main(["extract", "--model", "openai/mock", "--api-base", server.api_base, "--no-progress"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["edges"][0]["relationshipType"] == "WORKS_AT"


def test_baseline_seed_sends_the_seed_prompt(tmp_path):
    with MockOpenAIServer(REPLY) as server:
        [record] = _run_cli(tmp_path, [json.dumps(GOOD)], server, "--baseline", "seed")
        body = server.requests[0]
    assert body["messages"][1]["content"].lstrip().startswith("<PREVIOUS_EPISODES>")
    assert "response_format" not in body
    assert len(record["edges"]) == 1


def test_missing_api_key_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EDGEWISE_API_KEY", raising=False)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["extract", "--model", "openai/gpt-4o-mini", "--no-progress"]) == 1
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def _flag_actions(parser: argparse.ArgumentParser, name: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _flag_actions(sub, f"{name} {sub_name}".strip())
        elif action.option_strings and action.dest != "help":
            yield name, action


def test_every_flag_of_every_command_has_help_with_an_example():
    actions = list(_flag_actions(build_parser(), ""))
    assert {name.split()[0] for name, _ in actions} >= {
        "extract",
        "bench",
        "optimize",
        "data",
        "serve",
        "local-model",
    }
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, action in actions
        if "Example:" not in (action.help or "")
    ]
    assert missing == []
