"""The bench runner and its reports, against a scripted LM whose every reply and token count is known.

Four labeled episodes (tests/fixtures/bench/episodes.jsonl) get fixed replies: one perfect, one with
a reversed, a symmetric and a spurious edge, one with a mistyped edge and a wrong date, and one whose
LM call raises. The expected numbers below are counted by hand from those replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import litellm
import pytest
from fakes import ScriptedLM, edge, edges_reply
from mock_openai import MockOpenAIServer
from paths import FIXTURES, ROOT

import edgewise  # noqa: F401  (offline LiteLLM settings before fakes import litellm)
from edgewise.cli import bench as bench_cli
from edgewise.cli import main
from edgewise.data.loader import load_episodes
from edgewise.data.sampling import stratified_sample
from edgewise.domain.gold import LabeledEpisode
from edgewise.eval import BenchInterrupted, BenchReport, run_bench
from edgewise.eval.error_log import read_errors
from edgewise.eval.report import COLUMNS, markdown_table
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig

FIXTURE = FIXTURES / "bench" / "episodes.jsonl"

REPLIES = {
    "Ana has worked": edges_reply(
        edge("Ana", "WORKS_AT", "Acme", validAt="2021-01-01T00:00:00Z"),
        edge("Ana", "LIVES_IN", "Oslo"),
    ),
    "Bob founded": edges_reply(
        edge("Beta", "FOUNDED", "Bob"),  # reversed
        edge("Cara", "MARRIED_TO", "Bob"),  # symmetric: matches Bob -> Cara
        edge("Cara", "WORKS_AT", "Beta"),  # spurious
    ),
    "Dan founded": edges_reply(
        edge("Dan", "MANAGES", "Delta", invalidAt="2019-01-01T00:00:00Z"),  # wrong invalidAt year
        edge("Dan", "OWNS", "Delta"),  # mistyped (gold FOUNDED)
    ),
}
FAILING = "Eve works"


def load_fixture() -> list[LabeledEpisode]:
    return load_episodes(FIXTURE)


def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    text = "\n".join(str(message.get("content")) for message in messages)
    if FAILING in text:
        raise ConnectionError("provider down")
    for marker, reply in REPLIES.items():
        if marker in text:
            return reply
    raise AssertionError("request for an unknown episode")


def programs(*names: str) -> dict[str, Any]:
    return {name: resolve_program(name) for name in names}


def factory_for(responder: Any) -> Any:
    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(responder, model=config.model)

    return factory


MODELS = [LMConfig(model="openai/gpt-4o-mini"), LMConfig(model="local")]
PROGRAMS = ["seed", "default"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchReport, Path]:
    out = tmp_path_factory.mktemp("bench")
    report = run_bench(
        MODELS,
        programs(*PROGRAMS),
        load_fixture(),
        workers=2,
        seed=0,
        out_dir=out,
        progress=False,
        lm_factory=factory_for(respond),
    )
    return report, out


def test_every_model_and_program_runs_once_in_order(bench: tuple[BenchReport, Path]) -> None:
    report, _ = bench
    assert [(run.model, run.program) for run in report.runs] == [
        ("openai/gpt-4o-mini", "seed"),
        ("openai/gpt-4o-mini", "default"),
        ("local", "seed"),
        ("local", "default"),
    ]
    assert not report.partial
    assert all(run.complete and run.episodes_done == 4 for run in report.runs)


def test_results_json_has_the_hand_computed_scores(bench: tuple[BenchReport, Path]) -> None:
    _, out = bench
    results = json.loads((out / "results.json").read_text())
    assert results["partial"] is False
    assert "cache" not in results  # always off during a bench: not stored
    assert results["data"]["sources"] == {"alpha": 2, "beta": 2}
    for run in results["runs"]:
        scores = run["scores"]
        # tp: a-1 2, a-2 1 (symmetric), b-1 1; fp: a-2 reversed + spurious, b-1 mistyped;
        # fn: a-2 FOUNDED, b-1 FOUNDED, b-2 (failed, scored empty)
        assert (scores["tp"], scores["fp"], scores["fn"]) == (4, 3, 3)
        assert scores["edge_f1"] == pytest.approx(8 / 14)
        assert scores["precision"] == pytest.approx(4 / 7)
        assert scores["recall"] == pytest.approx(4 / 7)
        # pairs ignore the type: b-1's OWNS pairs with FOUNDED; the reversed and spurious pairs stay wrong
        assert (scores["pair_tp"], scores["pair_fp"], scores["pair_fn"]) == (5, 2, 2)
        assert scores["pair_f1"] == pytest.approx(10 / 14)
        assert scores["valid_at_accuracy"] == pytest.approx(1.0)
        assert scores["invalid_at_accuracy"] == pytest.approx(3 / 4)
        assert scores["per_source"]["alpha"]["edge_f1"] == pytest.approx(6 / 9)  # tp 3 fp 2 fn 1
        assert scores["per_source"]["beta"]["edge_f1"] == pytest.approx(2 / 5)  # tp 1 fp 1 fn 2
        completed = run["scores_completed"]
        assert (completed["tp"], completed["fp"], completed["fn"]) == (4, 3, 2)
        low, high = run["edge_f1_ci95"]
        assert 0.0 <= low <= scores["edge_f1"] <= high <= 1.0
        assert run["failed_episodes"] == 1
        assert run["failure_reasons"] == {"connection": 1}  # the one failure vocabulary of every command
        assert run["failed_per_source"] == {"beta": 1}
        assert run["parse_failure_episodes"] == 0


def test_usage_latency_and_cost_per_episode(bench: tuple[BenchReport, Path]) -> None:
    report, _ = bench
    completion = {marker: len(reply) // 4 for marker, reply in REPLIES.items()}  # ScriptedLM's accounting
    total_completion = sum(completion.values())
    for run in report.runs:
        by_id = {episode.id: episode for episode in run.episodes}
        assert [episode.id for episode in run.episodes] == ["a-1", "a-2", "b-1", "b-2"]
        assert (by_id["a-1"].calls, by_id["a-1"].prompt_tokens) == (1, 20)  # system + user message
        assert by_id["a-1"].completion_tokens == completion["Ana has worked"]
        assert by_id["b-2"].status == "failed" and "provider down" in (by_id["b-2"].error or "")
        assert (by_id["b-2"].calls, by_id["b-2"].prompt_tokens) == (0, 0)  # the call raised: nothing billed
        assert run.calls == 3 and run.calls_per_episode == pytest.approx(3 / 4)
        assert run.prompt_tokens_per_episode == pytest.approx(60 / 4)
        assert run.completion_tokens_per_episode == pytest.approx(total_completion / 4)
        assert run.usage_per_step["extract"].calls == 3
        assert 0.0 < run.latency_p50_s <= run.latency_p95_s  # type: ignore[operator]
    priced = litellm.model_cost["gpt-4o-mini"]
    expected = 60 * priced["input_cost_per_token"] + total_completion * priced["output_cost_per_token"]
    assert report.runs[0].cost_usd == pytest.approx(expected)
    assert report.runs[0].cost_per_episode_usd == pytest.approx(expected / 4)
    assert report.runs[2].cost_usd is None  # local: no price


def test_table_has_every_column_and_says_how_failures_count(bench: tuple[BenchReport, Path]) -> None:
    report, out = bench
    table = (out / "results.md").read_text()
    assert table == markdown_table(report)
    lines = table.splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    rows = [line for line in lines[2 : lines.index("")] if line.startswith("|")]
    assert len(rows) == 4
    cells = dict(zip(COLUMNS, (cell.strip() for cell in rows[0].strip("|").split("|")), strict=True))
    assert (cells["model"], cells["program"]) == ("openai/gpt-4o-mini", "seed")
    assert cells["edge-F1 [95% CI]"].startswith("0.571 [")
    assert cells["Δ edge-F1 vs baseline [paired 95% CI]"] == "-"  # no --baseline
    assert cells["macro edge-F1 over sources"] == f"{(6 / 9 + 2 / 5) / 2:.3f}"  # alpha 6/9, beta 2/5
    assert cells["pair-F1"] == "0.714" and cells["invalidAt acc"] == "0.750"
    assert cells["parse-fail"] == "0/4" and cells["failed"] == "1/4"
    assert cells["LM calls/ep"] == "0.75" and cells["prompt tok/ep"] == "15.0"
    assert cells["cost/ep USD"] != "n/a"
    local_cells = [cell.strip() for cell in rows[2].strip("|").split("|")]
    assert local_cells[-1] == "n/a"
    assert "| model | program | alpha (2) | beta (2) |" in table  # the per-source table
    assert "scored as empty predictions" in table


def test_errors_jsonl_lists_every_mistake_of_every_episode(bench: tuple[BenchReport, Path]) -> None:
    _, out = bench
    records = read_errors(out / "errors.jsonl")
    ids = [(record["model"], record["program"], record["id"]) for record in records]
    # the perfect episode a-1 has nothing to report; the others appear once per model x program
    assert sorted(ids) == sorted(
        (model, program, episode)
        for model in ("openai/gpt-4o-mini", "local")
        for program in PROGRAMS
        for episode in ("a-2", "b-1", "b-2")
    )
    record = next(r for r in records if r["id"] == "a-2" and r["program"] == "seed")
    assert [r["predicted"]["sourceEntityName"] for r in record["reversed"]] == ["Beta"]
    assert [s["predicted"]["relationshipType"] for s in record["spurious"]] == ["WORKS_AT"]
    assert record["missed"] == [] and record["mistyped"] == []
    record = next(r for r in records if r["id"] == "b-1" and r["program"] == "default")
    assert [
        (m["predicted"]["relationshipType"], m["gold"]["relationshipType"]) for m in record["mistyped"]
    ] == [("OWNS", "FOUNDED")]
    assert [(w["field"], w["granularity"], w["predicted"]["invalidAt"]) for w in record["wrongDates"]] == [
        ("invalidAt", "year", "2019-01-01T00:00:00Z")
    ]
    record = next(r for r in records if r["id"] == "b-2" and r["program"] == "seed")
    assert record["status"] == "failed" and "ConnectionError" in record["error"]
    assert [m["relationshipType"] for m in record["missed"]] == ["WORKS_AT"]


def test_plot_is_a_png(bench: tuple[BenchReport, Path]) -> None:
    _, out = bench
    data = (out / "plot.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000


def test_parse_failures_are_counted_per_episode(tmp_path: Path) -> None:
    def fenced(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        text = "\n".join(str(message.get("content")) for message in messages)
        if "Ana has worked" in text:
            return "Here you go:\n" + REPLIES["Ana has worked"]  # prose: not JSON.parse-able
        return edges_reply() if FAILING in text else respond(messages, kwargs)

    report = run_bench(
        [LMConfig(model="fake/x")],
        programs("seed"),
        load_fixture(),
        workers=1,
        seed=0,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory_for(fenced),
    )
    run = report.runs[0]
    assert run.parse_failure_episodes == 1 and run.parse_failure_rate == pytest.approx(0.25)
    assert run.failed_episodes == 0
    assert run.scores is not None and run.scores.tp == 2  # a-1's two edges are lost with its reply
    record = next(r for r in read_errors(tmp_path / "errors.jsonl") if r["id"] == "a-1")
    assert record["parseFailures"] == 1 and len(record["missed"]) == 2
    assert any(w["code"] == "parse_failure" for w in record["warnings"])


def test_ctrl_c_writes_the_finished_episodes_as_partial(tmp_path: Path) -> None:
    def interrupting(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        text = "\n".join(str(message.get("content")) for message in messages)
        if "Dan founded" in text:
            raise KeyboardInterrupt  # reaches the main thread like Ctrl-C, through the worker's future
        return edges_reply() if FAILING in text else respond(messages, kwargs)

    with pytest.raises(BenchInterrupted) as caught:
        run_bench(
            [LMConfig(model="fake/x")],
            programs("default"),
            load_fixture(),
            workers=1,
            seed=0,
            out_dir=tmp_path,
            progress=False,
            lm_factory=factory_for(interrupting),
        )
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["partial"] is True
    (run,) = results["runs"]
    assert run["complete"] is False and run["episodes_done"] == 2 and run["episodes_planned"] == 4
    assert [episode["id"] for episode in run["episodes"]] == ["a-1", "a-2"]
    assert run["scores"]["tp"] == 3
    assert caught.value.report.partial
    assert "PARTIAL" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "plot.png").exists()


def test_a_model_that_cannot_start_is_reported_and_the_others_run(tmp_path: Path) -> None:
    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        if config.model == "broken":
            raise RuntimeError("llama-server did not start")
        yield ScriptedLM(
            lambda m, k: edges_reply() if FAILING in str(m) else respond(m, k), model=config.model
        )

    report = run_bench(
        [LMConfig(model="broken"), LMConfig(model="fake/ok")],
        programs("seed"),
        load_fixture(),
        workers=1,
        seed=0,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory,
    )
    broken, ok = report.runs
    assert broken.scores is None and "llama-server did not start" in (broken.error or "")
    assert ok.scores is not None and ok.episodes_done == 4
    assert "not run: could not open the model" in markdown_table(report)


def test_stratified_sample_keeps_source_shares_and_is_reproducible() -> None:
    base = load_fixture()[0]
    episodes = [
        base.model_copy(update={"id": f"{source}-{i}", "source": source})
        for source, count in (("big", 60), ("mid", 30), ("small", 10))
        for i in range(count)
    ]
    sample = stratified_sample(episodes, 10, seed=3)
    assert [e.source for e in sample].count("big") == 6
    assert [e.source for e in sample].count("mid") == 3
    assert [e.source for e in sample].count("small") == 1
    positions = [episodes.index(e) for e in sample]
    assert positions == sorted(positions)  # file order
    assert [e.id for e in stratified_sample(episodes, 10, seed=3)] == [e.id for e in sample]
    assert [e.id for e in stratified_sample(episodes, 10, seed=4)] != [e.id for e in sample]
    # 7 slots: quotas 4.2 / 2.1 / 0.7 -> 4 / 2 / 0, and the leftover slot goes to the largest remainder
    assert [e.source for e in stratified_sample(episodes, 7, seed=0)].count("small") == 1
    assert stratified_sample(episodes, 500, seed=0) == episodes


def test_models_flag_gives_each_model_its_api_base() -> None:
    base = LMConfig(model="local", api_base="http://127.0.0.1:9/v1")
    configs = bench_cli.parse_models(
        "local, openai/gpt-4o-mini ,qwen@http://127.0.0.1:8000/v1,vertex_ai/claude@20240620", base
    )
    assert [(c.model, c.api_base) for c in configs] == [
        ("local", None),
        ("openai/gpt-4o-mini", "http://127.0.0.1:9/v1"),
        ("qwen", "http://127.0.0.1:8000/v1"),
        ("vertex_ai/claude@20240620", "http://127.0.0.1:9/v1"),
    ]
    assert not any(c.cache for c in configs)
    with pytest.raises(ValueError, match="no model name"):
        bench_cli.parse_models("@http://127.0.0.1:1/v1", base)


def test_cli_benches_a_server_end_to_end(tmp_path: Path, capsys: Any) -> None:
    def reply(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"])
        return next((r for marker, r in REPLIES.items() if marker in text), edges_reply())

    with MockOpenAIServer(reply) as server:
        code = main(
            [
                "bench",
                "--models",
                f"mock@{server.api_base}",
                "--programs",
                "seed,default",
                "--data",
                str(FIXTURE),
                "--limit",
                "2",
                "--out",
                str(tmp_path),
                "--no-progress",
                "--max-retries",
                "0",
            ]
        )
    assert code == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("| " + " | ".join(COLUMNS))
    results = json.loads((tmp_path / "results.json").read_text())
    assert [run["program"] for run in results["runs"]] == ["seed", "default"]
    assert results["data"]["sources"] == {"alpha": 1, "beta": 1}  # --limit 2: one per source
    assert all(run["calls"] == 2 and run["prompt_tokens"] > 0 for run in results["runs"])
    assert results["workers"] == 4
    assert {"results.md", "results.json", "plot.png", "errors.jsonl"} <= {p.name for p in tmp_path.iterdir()}


def test_sigterm_stops_a_bench_like_ctrl_c_and_keeps_the_finished_episodes(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    def reply(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"])
        return next((r for marker, r in REPLIES.items() if marker in text), edges_reply())

    with MockOpenAIServer(reply, latency=0.3) as server:
        command = [
            sys.executable, "-m", "edgewise", "bench", "--models", f"mock@{server.api_base}",
            "--programs", "default", "--data", str(FIXTURE), "--workers", "1", "--out", str(tmp_path),
            "--no-progress", "--max-retries", "0",
        ]  # fmt: skip
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["partial"] is True
    (run,) = results["runs"]
    assert run["complete"] is False and 1 <= run["episodes_done"] < run["episodes_planned"]


@pytest.mark.parametrize("spec", ["default", "qwen2.5-coder-1.5b-gold"])
def test_open_types_opens_the_module_and_compiled_programs_only(spec):
    from edgewise.programs.names import resolve_program

    assert resolve_program(spec).closed_types is True
    assert resolve_program(spec, open_types=True).closed_types is False
    assert not hasattr(resolve_program("seed", open_types=True), "closed_types")


def test_bench_has_no_cache_flag_because_its_cache_is_always_off(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--programs", "default", "--split", "smoke", "--no-cache"])
    assert exited.value.code == 1 and "--no-cache" in capsys.readouterr().err  # a usage error: nothing ran


def test_baseline_gives_every_other_program_its_paired_difference(tmp_path: Path) -> None:
    def respond_seed_worse(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        text = "\n".join(str(message.get("content")) for message in messages)
        if "Ana has worked" in text and "[[ ## episode_content ## ]]" not in text:  # the seed prompt
            return edges_reply(edge("Ana", "WORKS_AT", "Acme", validAt="2021-01-01T00:00:00Z"))
        return respond(messages, kwargs)

    report = run_bench(
        [LMConfig(model="openai/gpt-4o-mini")],
        programs("seed", "default"),
        load_fixture(),
        workers=1,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory_for(respond_seed_worse),
        baseline="seed",
    )
    seed_run, default_run = report.runs
    assert seed_run.comparison is None
    comparison = default_run.comparison
    assert comparison is not None and comparison.baseline == "seed"
    overall = comparison.overall
    assert overall.difference == pytest.approx(default_run.scores.edge_f1 - seed_run.scores.edge_f1)
    assert overall.difference > 0 and overall.low <= overall.difference <= overall.high
    assert overall.episodes == 4
    assert comparison.per_source["beta"].difference == 0  # same replies there
    assert comparison.per_source["alpha"].difference > 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["baseline"] == "seed"
    assert results["runs"][1]["comparison"]["overall"]["difference"] == pytest.approx(overall.difference)
    table = (tmp_path / "results.md").read_text()
    assert f"| default | {default_run.scores.edge_f1:.3f} [" in table.replace("openai/gpt-4o-mini | ", "")
    assert overall.text() in table and "| baseline |" in table
    assert f"(Δ {comparison.per_source['alpha'].text()})" in table
    with pytest.raises(ValueError, match="baseline 'nope' is not one of the programs"):
        run_bench([LMConfig(model="x/y")], programs("seed"), load_fixture(), baseline="nope",
                  lm_factory=factory_for(respond), progress=False)  # fmt: skip


def test_the_bundled_examples_are_a_labeled_file_the_bench_scores(tmp_path: Path) -> None:
    """`edgewise bench --data data/examples/episodes.jsonl`: the README's first episodes get a figure."""
    examples = ROOT / "data" / "examples" / "episodes.jsonl"
    reply = edges_reply(edge("User", "WORKS_AT", "Globex", "The user works at Globex."))
    with MockOpenAIServer(reply) as server:
        status = main(
            ["bench", "--data", str(examples), "--models", f"openai/mock@{server.api_base}"]
            + ["--programs", "default", "--out", str(tmp_path), "--no-progress", "--max-retries", "0"]
        )
    assert status == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert (results["data"]["episodes"], results["data"]["gold_edges"]) == (10, 28)
    [run] = results["runs"]
    assert run["complete"] and run["failed_episodes"] == 0
    # the one reply is right on example-07 only (the other episodes lack Globex, so it is dropped there)
    assert [(e["id"], e["tp"]) for e in run["episodes"] if e["tp"]] == [("example-07", 1)]
