"""`edgewise extract` on good and bad JSONL, end to end over HTTP against the mock server."""

from __future__ import annotations

import argparse
import io
import json
import pickle
import shlex
import sys
from contextlib import contextmanager

import pytest
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer

from edgewise.cli import build_parser, main
from edgewise.cli import extract as extract_cli
from edgewise.local.local_server import LocalServerError
from edgewise.modules.extractor import EdgeExtractor
from edgewise.programs.artifact import ArtifactError, load
from edgewise.runtime.jsonl import parse_episode_line

GOOD = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021.", validAt="2021"))


def _run_cli(
    tmp_path, lines: list[str | bytes], server: MockOpenAIServer, *extra: str, expect: int = 0
) -> list[dict]:
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
    assert code == expect
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
        records = _run_cli(tmp_path, lines, server, expect=2)  # 2: the run ended, some lines failed
    assert [r["line"] for r in records] == list(range(1, 10))
    assert records[0]["error"]["message"].startswith("not valid JSON")
    assert records[1]["error"]["field"] == "episodeContent"
    assert records[2]["error"]["field"] == "referenceTime"
    assert "edges" in records[3]  # 500 entities is valid input
    assert records[4]["error"]["field"] == "entities"  # no entities: refused, no LM call
    assert "UTF-8" in records[5]["error"]["message"]
    assert records[6]["error"]["message"] == "expected a JSON object"
    assert records[7]["error"]["field"] == "entities[0].name"
    assert len(records[8]["edges"]) == 1
    assert len(server.requests) == 2


def test_provider_failure_is_an_error_line(tmp_path):
    with MockOpenAIServer(REPLY, faults=["500", None]) as server:
        records = _run_cli(tmp_path, [json.dumps(GOOD), json.dumps({**GOOD, "id": "ep-2"})], server, expect=2)
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


def test_a_batch_with_the_cache_on_keeps_few_replies_in_memory(tmp_path, monkeypatch):
    import dspy
    from dspy.clients.cache import Cache

    from edgewise.runtime.reply_cache import MEMORY_CACHE_ENTRIES

    monkeypatch.setattr(dspy, "cache", Cache(True, True, str(tmp_path / "cache"), 10**8, 1_000_000))
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "edgewise"))
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    with MockOpenAIServer(REPLY) as server:
        args = [
            "extract",
            "-i",
            str(source),
            "-o",
            str(out),
            "--model",
            "openai/mock",
            "--api-base",
            server.api_base,
        ]
        assert main([*args, "--no-progress"]) == 0
    assert dspy.cache.memory_cache.maxsize == MEMORY_CACHE_ENTRIES
    assert len(dspy.cache.memory_cache) == 1 and "edges" in json.loads(out.read_text())


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


# -- the batch contract, case by case ------------------------------------------------------------------


def _extract_args(source, out, server, *extra: str) -> list[str]:
    return ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", server.api_base,
            "--no-progress", "--no-cache", "--max-retries", "0", *extra]  # fmt: skip


def test_the_input_is_never_the_output(tmp_path, capsys):
    source = tmp_path / "same.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    before = source.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(source)
    (tmp_path / "hard.jsonl").hardlink_to(source)
    with MockOpenAIServer(REPLY) as server:
        for out in (source, tmp_path / "link.jsonl", tmp_path / "hard.jsonl"):
            assert main(_extract_args(source, out, server)) == 1
            assert "the output is the input file" in capsys.readouterr().err
        with open(source, "rb") as stdin, pytest.MonkeyPatch.context() as patch:  # -o same.jsonl < same.jsonl
            patch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
            code = main(["extract", "-o", str(source), "--model", "openai/mock", "--api-base",
                         server.api_base, "--no-progress"])  # fmt: skip
        assert code == 1
        assert server.requests == []
    assert source.read_bytes() == before


def test_earlier_results_survive_a_run_that_cannot_start(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EDGEWISE_API_KEY", raising=False)
    source, previous = tmp_path / "in.jsonl", tmp_path / "prev.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    previous.write_text('{"id": "ep-0", "line": 1, "edges": []}\n')
    before = previous.read_bytes()
    args = ["extract", "-i", str(source), "-o", str(previous), "--no-progress"]
    assert main([*args, "--model", "openai/gpt-4o-mini"]) == 1  # no key
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert previous.read_bytes() == before

    @contextmanager
    def server_that_does_not_start(config):
        raise LocalServerError("llama-server exited during start-up")
        yield

    monkeypatch.setattr(extract_cli, "open_lm", server_that_does_not_start)
    assert main([*args, "--model", "local"]) == 1
    assert previous.read_bytes() == before
    fresh = tmp_path / "fresh.jsonl"
    assert main(["extract", "-i", str(source), "-o", str(fresh), "--no-progress", "--model", "local"]) == 1
    assert not fresh.exists(), "a results file the failed run created is not left behind"


def test_exit_status_says_whether_every_line_succeeded(tmp_path):
    with MockOpenAIServer(REPLY) as server:
        assert len(_run_cli(tmp_path, [json.dumps(GOOD)] * 2, server, expect=0)) == 2
        records = _run_cli(tmp_path, [json.dumps(GOOD), "not json"], server, expect=2)
    assert "edges" in records[0] and records[1]["error"]["kind"] == "input"
    with MockOpenAIServer(REPLY, faults=["500"] * 10) as server:
        records = _run_cli(tmp_path, [json.dumps(GOOD)] * 2, server, expect=2)
    assert [r["error"]["reason"] for r in records] == ["server_error", "server_error"]
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps(records[0]) + "\n")  # a run stopped after its first line, which failed
    with MockOpenAIServer(REPLY) as server:
        resumed = _run_cli(tmp_path, [json.dumps(GOOD)] * 2, server, "--resume", expect=0)
    assert "edges" in resumed[0] and "edges" in resumed[1]  # a kept server error is run again
    out.write_text(
        json.dumps({"id": None, "line": 1, "error": {"kind": "input", "reason": "invalid_input"}}) + "\n"
    )
    with MockOpenAIServer(REPLY) as server:
        resumed = _run_cli(tmp_path, ["not json", json.dumps(GOOD)], server, "--resume", expect=2)
    assert "error" in resumed[0] and "edges" in resumed[1]  # a kept input error still counts


UNKNOWN_PROVIDER = (
    "edgewise: error: unknown model 'foo/bar': LiteLLM has no provider 'foo'; use a LiteLLM model string such "
    "as openai/gpt-4o-mini, 'local' for the bundled model, or --api-base URL for an OpenAI-compatible server"
)


def test_an_unknown_provider_is_one_line_on_stderr_and_nothing_on_stdout(tmp_path, capfd):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    out.write_text("earlier results\n")
    for key in ([], ["--api-key", "sk-test"]):
        assert main(["extract", "-i", str(source), "--model", "foo/bar", "--no-progress", *key]) == 1
        streams = capfd.readouterr()
        assert streams.out == ""  # no "Provider List" banner among the results
        assert [line for line in streams.err.splitlines() if "foo/bar" in line] == [UNKNOWN_PROVIDER]
    assert main(["extract", "-i", str(source), "-o", str(out), "--model", "foo/bar", "--no-progress"]) == 1
    assert out.read_text() == "earlier results\n"


def test_whatever_prints_during_a_run_goes_to_stderr_and_stdout_stays_jsonl(monkeypatch, capfd):
    def chatty(body):
        print("Provider List: https://docs.litellm.ai/docs/providers")  # as LiteLLM does, mid-run
        return REPLY

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((json.dumps(GOOD) + "\n").encode() * 2)))
    with MockOpenAIServer(chatty) as server:
        code = main(["extract", "--model", "openai/mock", "--api-base", server.api_base, "--no-progress",
                     "--no-cache"])  # fmt: skip
    streams = capfd.readouterr()
    assert code == 0
    assert [json.loads(line)["line"] for line in streams.out.splitlines()] == [1, 2]
    assert streams.err.count("Provider List") == 2


@pytest.mark.parametrize(
    ("change", "hint"),
    [
        ({}, ""),
        ({"entites": [{"name": "Alice"}, {"name": "Acme Corp"}]}, "this episode has 'entites'"),
        ({"nodez": ["Alice", "Acme Corp"]}, "this episode has 'nodez'"),
        ({"entities": []}, ""),
    ],
)
def test_a_line_without_entities_is_an_input_error_naming_the_field(tmp_path, change, hint):
    line = {key: value for key, value in GOOD.items() if key != "entities"} | change
    with MockOpenAIServer(REPLY) as server:
        [record] = _run_cli(tmp_path, [json.dumps(line)], server, expect=2)
        assert server.requests == []
    error = record["error"]
    assert (error["kind"], error["reason"], error["field"], error["line"]) == (
        "input",
        "invalid_input",
        "entities",
        1,
    )
    assert error["message"].startswith("no entities: edges need at least two entities to connect")
    assert hint in error["message"]


def test_unknown_keys_are_reported_as_the_service_reports_them(tmp_path):
    with MockOpenAIServer(REPLY) as server:
        [record] = _run_cli(tmp_path, [json.dumps({**GOOD, "userId": "u-1", "colour": "red"})], server)
    assert len(record["edges"]) == 1
    assert record["warnings"][0] == {
        "code": "ignored_field",
        "message": "line 1: ignored unknown fields colour, userId",
        "edge": None,
    }


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-tokens", "-5", "argument --max-tokens: must be >= 1, got -5"),
        ("--max-retries", "-1", "argument --max-retries: must be >= 0, got -1"),
        ("--max-rps", "0", "argument --max-rps: must be > 0, got 0"),
        ("--timeout", "nan", "argument --timeout: expected a finite number, got 'nan'"),
        ("--workers", "0", "argument --workers: must be >= 1, got 0"),
        ("--episode-timeout", "0", "argument --episode-timeout: must be > 0, got 0"),
        ("--reflexion-rounds", "-1", "argument --reflexion-rounds: must be >= 0, got -1"),
        ("--temperature", "-0.5", "argument --temperature: must be >= 0, got -0.5"),
    ],
)
def test_a_flag_out_of_range_is_a_usage_error_naming_the_flag(tmp_path, capsys, flag, value, message):
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    with pytest.raises(SystemExit) as exited:
        main(["extract", "-o", str(out), "--model", "openai/mock", f"{flag}={value}"])
    assert exited.value.code == 1  # nothing ran
    assert message in capsys.readouterr().err
    assert out.read_text() == "earlier results\n"


def test_the_stdin_example_in_extract_help_is_one_valid_line_when_pasted(capsys):
    with pytest.raises(SystemExit):
        main(["extract", "--help"])
    examples = capsys.readouterr().out.split("examples:", 1)[1].splitlines()
    [command] = [line.strip() for line in examples if line.strip().startswith("echo ")]
    words = shlex.split(command)  # raises on an unclosed quote: a command split over lines
    assert words[0] == "echo" and words[2] == "|" and words[3:5] == ["edgewise", "extract"]
    item = parse_episode_line(words[1].encode(), 1, "<stdin>")
    assert item.error is None and item.episode is not None and len(item.episode.entities) == 2


def test_a_pickle_as_program_json_says_what_the_file_is(tmp_path, capsys):
    from edgewise.programs.artifact import PROGRAM_FILE, new_manifest, save

    program = EdgeExtractor()
    folder = save(program, tmp_path / "prog", new_manifest(program, task_model="x", optimizer="none"))
    (folder / PROGRAM_FILE).write_bytes(pickle.dumps({"extract": {"demos": []}}))
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n")
    assert main(["extract", "-i", str(source), "--program", str(folder), "--model", "openai/mock",
                 "--api-base", "http://127.0.0.1:9/v1", "--no-progress"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "program.json is not JSON (it looks like a Python pickle); edgewise never loads pickles" in err
    (folder / PROGRAM_FILE).write_bytes(b'{"extract": "\xff"}')
    with pytest.raises(
        ArtifactError, match=r"program.json is not JSON: it is not UTF-8 text \(byte 13 is 0xff\)"
    ):
        load(folder)


def test_find_entities_takes_lines_without_entities_and_keeps_given_ones(tmp_path):
    text_only = {
        "id": "t",
        "episodeContent": "Alice joined Acme Corp in 2021.",
        "referenceTime": GOOD["referenceTime"],
    }
    found = json.dumps(
        {"entities": [{"name": "Alice", "type": "Person"}, {"name": "Acme Corp", "type": None}]}
    )

    def respond(body: dict) -> str:
        asks_entities = "`entities`" in body["messages"][-1]["content"].split("Respond with")[-1]
        return found if asks_entities else REPLY

    # Without the flag a line without entities is an input error that says how to run it.
    with MockOpenAIServer(respond) as server:
        [refused] = _run_cli(tmp_path, [json.dumps(text_only)], server, expect=2)
        assert refused["error"]["field"] == "entities" and "--find-entities" in refused["error"]["message"]
        assert server.requests == []
    with MockOpenAIServer(respond) as server:
        lines = _run_cli(tmp_path, [json.dumps(text_only), json.dumps(GOOD)], server, "--find-entities")
        assert len(server.requests) == 3  # the entity step and two extractions
    assert [e["name"] for e in lines[0]["entities"]] == ["Alice", "Acme Corp"]
    assert lines[0]["usage"]["entities"]["calls"] == 1
    assert [e["targetEntityName"] for e in lines[0]["edges"]] == ["Acme Corp"]
    assert "entities" not in lines[1]  # given entities are kept, and not echoed
    assert "entities" not in lines[1]["usage"]
