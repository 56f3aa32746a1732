"""benchmarks/ship_finetuned.py: a fine-tuned program is shipped only when its dev bench says it is better
beyond noise, and the shipped manifest carries the same paired verdict the bench's pairing gives."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from paths import ROOT

import edgewise
from edgewise.eval.bench_records import EpisodeRun
from edgewise.eval.records import f1_of
from edgewise.programs.artifact import read_manifest
from edgewise.programs.lora_adapter import ADAPTER_ATTRIBUTE

BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the script imports its sibling `paired_from_results`


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ship_finetuned = _script("ship_finetuned")
paired_from_results = _script("paired_from_results")
MergedRun = paired_from_results.MergedRun

FOLDER = BENCHMARKS / "results" / "finetune-0.5b"
PROGRAM = FOLDER / "program"
CHUNKS = sorted(FOLDER.glob("dev-conversational-chunk-*"))
TUNED = "runs/qwen2.5-coder-0.5b-lora"  # the tuned program's name in those benches


def _episodes(tmp_path: Path, extra_ids: tuple[str, ...] = ()) -> Path:
    lines = [line for chunk in CHUNKS for line in (chunk / "episodes.jsonl").read_text().splitlines() if line]
    lines += [json.dumps({"id": episode_id}) for episode_id in extra_ids]
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _argv(episodes: Path, compiled: Path, *, tuned: str = TUNED, baseline: str = "default") -> list[str]:
    return [
        str(PROGRAM),
        *map(str, CHUNKS),
        "--tuned",
        tuned,
        "--baseline",
        baseline,
        "--episodes",
        str(episodes),
        "--name",
        "tuned-0.5b",
        "--compiled-dir",
        str(compiled),
    ]


def test_a_program_better_on_dev_is_shipped_with_the_bench_s_paired_verdict(tmp_path: Path) -> None:
    episodes, compiled = _episodes(tmp_path), tmp_path / "compiled"
    compiled.mkdir()
    assert ship_finetuned.main(_argv(episodes, compiled)) == 0
    shipped = compiled / "tuned-0.5b"
    assert sorted(p.name for p in compiled.iterdir()) == ["tuned-0.5b"]  # no staging folder left behind
    manifest = read_manifest(shipped)
    rows_file = tmp_path / "rows.json"
    assert (
        paired_from_results.main([*map(str, CHUNKS), "--baseline", "default", "--json", str(rows_file)]) == 0
    )
    rows = {row["program"]: row for row in json.loads(rows_file.read_text())}
    verdict = manifest.notes["paired_dev_difference"]
    assert verdict["episodes"] == rows[TUNED]["episodes"] == len(episodes.read_text().splitlines())
    for field in ("difference", "low", "high"):
        assert verdict[field] == pytest.approx(rows[TUNED][field], abs=1e-4)
    assert verdict["low"] > 0 and manifest.notes["selected"] == "compiled"
    by_source = manifest.notes["paired_dev_difference_by_source"]
    assert list(by_source) == ["conversational"] and by_source["conversational"] == verdict  # one source here
    assert manifest.dev_score_before == pytest.approx(rows["default"]["edge_f1_micro"], abs=1e-4)
    assert manifest.dev_score_after == pytest.approx(rows[TUNED]["edge_f1_micro"], abs=1e-4)
    assert manifest.notes["training"] == read_manifest(PROGRAM).notes["training"]  # the rest as it was
    assert (shipped / "adapter.gguf").read_bytes() == (PROGRAM / "adapter.gguf").read_bytes()
    program = edgewise.load(shipped)  # the adapter still matches its sha256 record
    assert getattr(program, ADAPTER_ATTRIBUTE).record == manifest.adapter


def test_a_program_not_better_on_dev_is_not_shipped(tmp_path: Path, capsys) -> None:
    episodes, compiled = _episodes(tmp_path), tmp_path / "compiled"
    compiled.mkdir()
    # the same runs the other way round: the program without the adapter judged against the tuned one
    assert ship_finetuned.main(_argv(episodes, compiled, tuned="default", baseline=TUNED)) == 1
    assert list(compiled.iterdir()) == []
    assert "not better beyond noise: not shipped" in capsys.readouterr().err


def test_a_dev_episode_the_bench_did_not_score_is_refused(tmp_path: Path) -> None:
    compiled = tmp_path / "compiled"
    compiled.mkdir()
    with pytest.raises(SystemExit, match="no result for 1 dev episode"):
        ship_finetuned.main(_argv(_episodes(tmp_path, ("dev-never-benched",)), compiled))
    assert list(compiled.iterdir()) == []


def _episode(episode_id: str, source: str, tp: int, fp: int, fn: int) -> EpisodeRun:
    return EpisodeRun(
        id=episode_id, source=source, status="ok", latency_s=1.0, n_gold=tp + fn, n_predicted=tp + fp,
        tp=tp, fp=fp, fn=fn, f1=f1_of(tp, fp, fn),
    )  # fmt: skip


def test_a_program_better_pooled_but_worse_on_a_source_is_not_shipped(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """Better on 40 chat episodes by more than it loses on 20 documents, where it finds nothing."""
    model = read_manifest(PROGRAM).task_model
    chats = [f"chat-{n}" for n in range(40)]
    documents = [f"doc-{n}" for n in range(20)]
    runs = {
        (model, "default"): [_episode(i, "chat", 1, 3, 3) for i in chats]
        + [_episode(i, "docs", 1, 1, 1) for i in documents],
        (model, TUNED): [_episode(i, "chat", 4, 0, 0) for i in chats]
        + [_episode(i, "docs", 0, 2, 2) for i in documents],
    }
    monkeypatch.setattr(
        ship_finetuned, "merged_runs", lambda folders: {key: MergedRun(eps, []) for key, eps in runs.items()}
    )
    episodes = tmp_path / "dev.jsonl"
    episodes.write_text("".join(json.dumps({"id": i}) + "\n" for i in chats + documents))
    manifest, pooled = ship_finetuned.judged_manifest(
        PROGRAM, [tmp_path], tuned=TUNED, baseline="default", ids=chats + documents
    )
    by_source = manifest.notes["paired_dev_difference_by_source"]
    assert pooled.better and by_source["chat"]["low"] > 0 and by_source["docs"]["high"] < 0
    assert manifest.notes["selected"] == "uncompiled"
    compiled = tmp_path / "compiled"
    compiled.mkdir()
    assert ship_finetuned.main(_argv(episodes, compiled)) == 1
    assert list(compiled.iterdir()) == []
    assert "worse beyond noise on a source: not shipped" in capsys.readouterr().err
