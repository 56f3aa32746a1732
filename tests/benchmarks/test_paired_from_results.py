"""benchmarks/paired_from_results.py: runs merged over folders, pair / date counts pooled only over whole runs,
and entity-F1 pooled and paired over chunks as one bench pairs it."""

from __future__ import annotations

import importlib.util
import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from fakes import ScriptedLM, edge, edges_reply
from paths import ROOT

from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.bench import run_bench
from edgewise.eval.bench_records import BenchReport
from edgewise.eval.records import f1_of
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig

RESULTS = ROOT / "benchmarks" / "results"
_spec = importlib.util.spec_from_file_location(
    "paired_from_results", RESULTS.parent / "paired_from_results.py"
)
paired_from_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paired_from_results)

CHUNKS = sorted((RESULTS / "test-conversational-graphiti-1.5b").glob("chunk-*"))
KEY = ("local/qwen2.5-coder-1.5b", "graphiti-structured")


def test_one_whole_run_pools_to_the_bench_s_own_scores() -> None:
    folder = CHUNKS[0]
    (run,) = [r for r in BenchReport.model_validate_json((folder / "results.json").read_bytes()).runs
              if (r.model, r.program) == KEY]  # fmt: skip
    merged = paired_from_results.merged_runs([folder])[KEY]
    pooled = paired_from_results.pooled_counts(merged, {e.id for e in merged.episodes})
    assert pooled is not None
    assert (pooled.pair_f1, pooled.valid_at_accuracy, pooled.invalid_at_accuracy, pooled.edge_f1) == (
        run.scores.pair_f1,
        run.scores.valid_at_accuracy,
        run.scores.invalid_at_accuracy,
        run.scores.edge_f1,
    )


def test_chunks_pool_to_the_sum_of_their_counts() -> None:
    merged = paired_from_results.merged_runs(CHUNKS)[KEY]
    pooled = paired_from_results.pooled_counts(merged, {e.id for e in merged.episodes})
    scores = [score for _, score in merged.parts]
    assert len(scores) == len(CHUNKS) >= 2
    assert pooled.pair_tp == sum(s.pair_tp for s in scores) and pooled.tp == sum(s.tp for s in scores)
    assert pooled.valid_at_right == sum(s.valid_at_right for s in scores)
    assert pooled.tp == sum(e.tp for e in merged.episodes)  # the runs' totals agree with their episodes


def test_part_of_a_run_or_a_run_counted_twice_pools_nothing() -> None:
    merged = paired_from_results.merged_runs(CHUNKS)[KEY]
    ids = {e.id for e in merged.episodes}
    assert paired_from_results.pooled_counts(merged, ids - {next(iter(ids))}) is None
    twice = paired_from_results.merged_runs([CHUNKS[0], CHUNKS[0]])[KEY]
    assert paired_from_results.pooled_counts(twice, {e.id for e in twice.episodes}) is None


def test_attribute_accuracy_and_its_paired_difference_are_the_bench_s_own(tmp_path) -> None:
    folder = RESULTS / "test-conversational-open-1.5b"
    report = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    baseline = "graphiti-structured"
    out = tmp_path / "rows.json"
    assert paired_from_results.main([str(folder), "--baseline", baseline, "--json", str(out)]) == 0
    rows = {row["program"]: row for row in json.loads(out.read_text())}
    for run in report.runs:
        row = rows[run.program]
        assert row["attribute_judged"] == run.scores.attribute_total > 0
        assert row["attribute_accuracy"] == run.scores.attribute_accuracy
        if run.program == baseline:
            assert row["attribute_difference"] is None
        else:
            assert row["attribute_difference"] == run.comparison.attribute_accuracy.model_dump()


def test_a_program_on_another_model_pairs_with_the_baseline_model_s_run(tmp_path) -> None:
    folder = RESULTS / "test-conversational-open-1.5b"
    report = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    baseline = "graphiti-structured"
    other = next(run.program for run in report.runs if run.program != baseline)
    moved = tmp_path / "moved"
    moved.mkdir()
    for run in report.runs:
        if run.program == other:
            run.model = "local/qwen2.5-coder-0.5b"
    (moved / "results.json").write_text(report.model_dump_json())
    same, across = tmp_path / "same.json", tmp_path / "across.json"
    assert paired_from_results.main([str(folder), "--baseline", baseline, "--json", str(same)]) == 0
    arguments = [str(moved), "--baseline", baseline, "--baseline-model", "local/qwen2.5-coder-1.5b"]
    assert paired_from_results.main([*arguments, "--json", str(across)]) == 0
    row_same = next(row for row in json.loads(same.read_text()) if row["program"] == other)
    row_across = next(
        row
        for row in json.loads(across.read_text())
        if (row["model"], row["program"]) == ("local/qwen2.5-coder-0.5b", other)
    )
    assert [row["model"] for row in json.loads(across.read_text()) if row["program"] == baseline] == [
        "local/qwen2.5-coder-1.5b"
    ]
    assert row_across["difference"] is not None
    assert (row_across["difference"], row_across["low"], row_across["high"]) == (
        row_same["difference"],
        row_same["low"],
        row_same["high"],
    )


def _withheld_bench(out: Path, episodes: list[LabeledEpisode]) -> None:
    """Two models through the default program with the entities withheld: `openai/full` finds every
    entity, `openai/half` finds half of each episode's and one that is not there."""

    def factory(config: LMConfig):
        def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
            text = messages[-1]["content"]
            names = [name for name in ("Ann", "Acme", "Bo", "Leeds", "Cy", "Oslo") if name in text]
            if "`entities`" in text[-300:]:
                found = names if config.model == "openai/full" else [*names[: len(names) // 2], "Tuesday"]
                return json.dumps({"entities": [{"name": name, "type": None} for name in found]})
            return edges_reply(edge(names[0], "WORKS_AT", names[1]))

        return nullcontext(ScriptedLM(respond, model=config.model))

    run_bench(
        [LMConfig(model="openai/full"), LMConfig(model="openai/half")],
        {"default": resolve_program("default")},
        episodes,
        workers=1,
        out_dir=out,
        progress=False,
        lm_factory=factory,
        withhold_entities=True,
    )


def _labeled(number: int, names: tuple[str, str, str, str]) -> LabeledEpisode:
    ann, acme, bo, leeds = names
    return LabeledEpisode.model_validate(
        {
            "id": f"conv-9-{number}",
            "source": "conversational",
            "license": "CC-BY-4.0",
            "exhaustiveEntities": True,
            "episodeContent": f"{ann} works at {acme}. {bo} lives in {leeds}.",
            "referenceTime": "2025-01-01T00:00:00Z",
            "entities": [{"name": name} for name in names],
            "edgeTypes": [{"name": "WORKS_AT"}, {"name": "LIVES_IN"}],
            "edges": [
                {
                    "relationshipType": "WORKS_AT",
                    "sourceEntityName": ann,
                    "targetEntityName": acme,
                    "fact": "x",
                },
                {
                    "relationshipType": "LIVES_IN",
                    "sourceEntityName": bo,
                    "targetEntityName": leeds,
                    "fact": "y",
                },
            ],
        }
    )


def test_entities_withheld_chunks_pool_and_pair_like_one_bench(tmp_path, capsys) -> None:
    episodes = [_labeled(1, ("Ann", "Acme", "Bo", "Leeds")), _labeled(2, ("Cy", "Oslo", "Bo", "Leeds"))]
    _withheld_bench(tmp_path / "whole", episodes)
    for number, episode in enumerate(episodes, 1):
        _withheld_bench(tmp_path / f"chunk-{number}", [episode])
    arguments = ["--baseline", "default", "--baseline-model", "openai/full"]
    rows = {}
    for name, folders in {"whole": ["whole"], "chunks": ["chunk-1", "chunk-2"]}.items():
        out = tmp_path / f"{name}.json"
        assert (
            paired_from_results.main([*(str(tmp_path / f) for f in folders), *arguments, "--json", str(out)])
            == 0
        )
        rows[name] = {
            row["model"]: {key: value for key, value in row.items() if not key.startswith("latency")}
            for row in json.loads(out.read_text())
        }
    assert rows["whole"] == rows["chunks"]  # all but the timings
    full, half = rows["chunks"]["openai/full"], rows["chunks"]["openai/half"]
    assert (full["entity_episodes"], full["entity_f1"]) == (2, 1.0)
    assert half["entity_f1"] == f1_of(4, 2, 4)  # two of four found in each episode, one spurious
    assert half["entity_difference"]["difference"] == f1_of(4, 2, 4) - 1.0
    whole = BenchReport.model_validate_json((tmp_path / "whole" / "results.json").read_bytes())
    assert half["alias_aware_f1"] == next(
        r.edge_f1_alias_aware for r in whole.runs if r.model == "openai/half"
    )
    assert "Δ entity-F1 vs default" in capsys.readouterr().out


def test_by_source_pairs_each_source_as_a_sample_of_that_source_alone(tmp_path, capsys) -> None:
    folders = [str(path) for path in sorted(RESULTS.glob("test-150-rest-*-program-1.5b"))]
    baseline, program = "baseline-v1", "qwen2.5-coder-1.5b-program"
    arguments = [*folders, "--baseline", baseline, "--programs", f"{baseline},{program}"]
    whole = tmp_path / "whole.json"
    assert paired_from_results.main([*arguments, "--by-source", "--json", str(whole)]) == 0
    table = capsys.readouterr().out
    rows = {row["program"]: row for row in json.loads(whole.read_text())}
    sources = rows[program]["by_source"]
    assert set(sources) == {"redocred", "tempreason", "timeqa"}
    assert rows[baseline]["by_source"]["redocred"]["difference"] is None
    merged = paired_from_results.merged_runs([Path(folder) for folder in folders])
    for source, cell in sources.items():
        ids = [e.id for e in merged[("local/qwen2.5-coder-1.5b", program)].episodes if e.source == source]
        only = tmp_path / f"{source}.jsonl"
        only.write_text("".join(json.dumps({"id": episode_id}) + "\n" for episode_id in ids))
        alone = tmp_path / f"{source}.json"
        assert paired_from_results.main([*arguments, "--episodes", str(only), "--json", str(alone)]) == 0
        row = next(row for row in json.loads(alone.read_text()) if row["program"] == program)
        assert cell["episodes"] == row["episodes"] == len(ids)
        assert cell["edge_f1_micro"] == row["edge_f1_micro"]
        assert (cell["difference"]["difference"], cell["difference"]["low"], cell["difference"]["high"]) == (
            row["difference"],
            row["low"],
            row["high"],
        )
    assert f"Δ vs {baseline} on the source's episodes" in table
    assert f"({sources['tempreason']['episodes']}) Δ " in table
