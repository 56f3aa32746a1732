"""benchmarks/injection_from_results.py: the rate counted again from a bench's predictions is the bench's
own, and programs benched apart are paired on the same episodes."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from benchmark_scripts import RESULTS, load_script
from paths import ROOT

from edgewise.eval.bench_records import BenchReport

INJECTION = RESULTS / "injection-1.5b"
EPISODES = ROOT / "data" / "episodes" / "injection.jsonl"
V2 = "qwen2.5-coder-1.5b-program-v2"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("injection_from_results")


def _chunks(name: str) -> list[Path]:
    return sorted((INJECTION / name).glob("chunk-*"))


def _rows(report: str) -> dict[str, list[str]]:
    """The table's cells after model and program, by program."""
    rows = [line.strip("|").split(" | ") for line in report.splitlines() if line.startswith("| local/")]
    return {cells[1].strip(): [cell.strip() for cell in cells[2:]] for cells in rows}


def test_counts_again_what_the_bench_wrote(script) -> None:
    """The speaker-marks chunks were benched with the rate written per episode: the script, reading
    only their predictions, gets the same count for every episode."""
    for chunk in _chunks("injection-speaker-marks"):
        report = BenchReport.model_validate_json((chunk / "results.json").read_bytes())
        (run,) = report.runs
        folders = load_script("bench_folders").read_folders([chunk])
        counted = {item.id: item for item in script.run_counts(folders)[(run.model, run.program)]}
        assert run.injection is not None and run.injection.injections > 0
        for episode in run.episodes:
            assert (counted[episode.id].injections, counted[episode.id].injected_edges) == (
                episode.injections,
                episode.injected_edges,
            )


def test_pairs_programs_benched_apart(script, tmp_path: Path) -> None:
    out = tmp_path / "rate.md"
    folders = [*_chunks("injection"), *_chunks("injection-speaker-marks")]
    argv = [*map(str, folders), "--baseline", V2, "--episodes", str(EPISODES), "--out", str(out)]
    assert script.main(argv) == 0
    rows = _rows(out.read_text(encoding="utf-8"))
    assert rows[V2][1] == "baseline"
    assert rows[V2][0].endswith("(46/59)")
    # baseline-v1 wrote the same edges as v2 on this set: no difference, and an interval of zero width
    assert rows["baseline-v1"][1] == "+0.000 [+0.000, +0.000]"
    marks = next(cells for program, cells in rows.items() if program.endswith("v2-speaker-marks"))
    assert marks[0].endswith("(17/59)")
    difference = float(marks[1].split(" ")[0])
    assert difference == round(17 / 59 - 46 / 59, 3)  # the same 59 injections in both runs


def test_programs_named_without_the_baseline_still_pair_with_it(script, tmp_path: Path) -> None:
    out = tmp_path / "rate.md"
    folders = [*_chunks("injection"), *_chunks("injection-speaker-marks")]
    marks_chunk = _chunks("injection-speaker-marks")[0] / "results.json"
    (marks_run,) = BenchReport.model_validate_json(marks_chunk.read_bytes()).runs
    marks = marks_run.program
    argv = [*map(str, folders), "--baseline", V2, "--programs", marks, "--out", str(out)]
    assert script.main(argv) == 0
    rows = _rows(out.read_text(encoding="utf-8"))
    assert set(rows) == {V2, marks} and rows[V2][1] == "baseline"
    assert rows[marks][1].startswith("-0.")


def test_a_run_lacking_episodes_is_left_out_not_scored(script, tmp_path: Path) -> None:
    folders = [*_chunks("injection"), _chunks("injection-speaker-marks")[0]]
    out = tmp_path / "rate.md"
    assert (
        script.main([*map(str, folders), "--baseline", V2, "--episodes", str(EPISODES), "--out", str(out)])
        == 0
    )
    text = out.read_text(encoding="utf-8")
    assert "- left out: local/qwen2.5-coder-1.5b /work/main/runs/injection/v2-speaker-marks lacks" in text
    assert not any(program.endswith("v2-speaker-marks") for program in _rows(text))


def test_refuses_episodes_without_injections_and_an_absent_baseline(script) -> None:
    chunk = str(_chunks("dev-conversational")[0])
    with pytest.raises(SystemExit, match="labels an injection"):
        script.main([chunk, "--baseline", V2])
    with pytest.raises(SystemExit, match="no complete run"):
        script.main([str(_chunks("injection")[0]), "--baseline", "nothing"])
