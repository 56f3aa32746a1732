"""benchmarks/bench_in_chunks.py: source-stratified chunks, complete chunks skipped, a failed chunk stops the run."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path

import pytest
from paths import ROOT

SCRIPT = ROOT / "benchmarks" / "bench_in_chunks.py"
_spec = importlib.util.spec_from_file_location("bench_in_chunks", SCRIPT)
bench_in_chunks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_in_chunks)


def _line(episode_id: str, source: str) -> str:
    return json.dumps({"id": episode_id, "source": source}) + "\n"


def test_every_chunk_keeps_each_sources_share_in_file_order() -> None:
    lines = [_line(f"a{i}", "a") for i in range(5)] + [_line(f"b{i}", "b") for i in range(3)] + ["\n"]
    parts = bench_in_chunks.chunk_lines(lines, 2)
    ids = [[json.loads(line)["id"] for line in part] for part in parts]
    assert ids == [["a0", "a2", "a4", "b0", "b2"], ["a1", "a3", "b1"]]


def test_a_line_that_is_not_json_names_its_line() -> None:
    with pytest.raises(SystemExit, match="line 2"):
        bench_in_chunks.chunk_lines([_line("a0", "a"), "{oops\n"], 2)


def _fake_edgewise(tmp_path: Path, *, fail_on: str | None = None) -> Path:
    """An `edgewise` that records its arguments and writes a complete results.json to --out."""
    script = tmp_path / "fake-edgewise"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys, pathlib\n"
        "args = sys.argv[1:]\n"
        f"log = pathlib.Path({str(tmp_path / 'calls.jsonl')!r})\n"
        "with log.open('a') as f: f.write(json.dumps(args) + '\\n')\n"
        "data, out = args[args.index('--data') + 1], pathlib.Path(args[args.index('--out') + 1])\n"
        f"if {fail_on!r} and data.endswith({fail_on!r}): sys.exit(3)\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        "(out / 'results.json').write_text(json.dumps({'partial': False}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _calls(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_chunks_are_benched_in_order_and_a_rerun_skips_the_complete_ones(tmp_path: Path) -> None:
    data = tmp_path / "episodes.jsonl"
    data.write_text("".join(_line(f"e{i}", "s") for i in range(5)))
    fake = _fake_edgewise(tmp_path, fail_on="episodes-2.jsonl")
    argv = [str(data), "--chunks", "3", "--out", str(tmp_path / "out" / "chunk-{n}"),
            "--chunk-dir", str(tmp_path / "chunks"), "--edgewise", str(fake),
            "--", "--programs", "a,b", "--seed", "0"]  # fmt: skip

    assert bench_in_chunks.main(argv) == 3  # chunk 2 failed: chunk 3 is not started
    first = _calls(tmp_path)
    assert [call[call.index("--data") + 1].rsplit("/", 1)[1] for call in first] == [
        "episodes-1.jsonl",
        "episodes-2.jsonl",
    ]
    assert first[0][:5] == ["bench", "--programs", "a,b", "--seed", "0"]
    assert [json.loads(line)["id"] for line in (tmp_path / "chunks" / "episodes-1.jsonl").open()] == [
        "e0",
        "e3",
    ]

    (tmp_path / "calls.jsonl").unlink()
    _fake_edgewise(tmp_path)  # the same command, now succeeding
    assert bench_in_chunks.main(argv) == 0
    again = [call[call.index("--out") + 1].rsplit("/", 1)[1] for call in _calls(tmp_path)]
    assert again == ["chunk-2", "chunk-3"]  # chunk 1 was complete


def test_a_partial_results_file_is_run_again(tmp_path: Path) -> None:
    folder = tmp_path / "chunk-1"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"partial": True}))
    assert not bench_in_chunks.is_complete(folder)
    (folder / "results.json").write_text(json.dumps({"partial": False}))
    assert bench_in_chunks.is_complete(folder)


@pytest.mark.parametrize("extra", [["--data", "x.jsonl"], ["--out=x"], ["--limit", "3"]])
def test_the_chunks_data_and_folder_cannot_be_given_to_the_bench(tmp_path: Path, extra: list[str]) -> None:
    argv = [str(tmp_path / "d.jsonl"), "--chunks", "2", "--out", "o-{n}", "--", *extra]
    with pytest.raises(SystemExit) as raised:
        bench_in_chunks.main(argv)
    assert raised.value.code == 2


def test_out_without_the_chunk_number_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as raised:
        bench_in_chunks.main([str(tmp_path / "d.jsonl"), "--chunks", "2", "--out", "o"])
    assert raised.value.code == 2
