"""benchmarks/paired_from_results.py: runs merged over folders, and pair / date counts pooled only over whole runs."""

from __future__ import annotations

import importlib.util
import json

from paths import ROOT

from edgewise.eval.bench_records import BenchReport

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
