"""benchmarks/paired_latency.py: latency medians of two programs benched side by side."""

from __future__ import annotations

import pytest
from benchmark_scripts import RESULTS, load_script

CHUNKS = sorted((RESULTS / "finetune-1.5b").glob("test-conversational-chunk-*"))
COMPACT, TUNED = "runs/qwen2.5-coder-1.5b-compact", "runs/qwen2.5-coder-1.5b-lora"


def test_a_program_against_itself_has_ratios_of_one_and_every_reply_equal() -> None:
    rows = dict(load_script("paired_latency").latency_report(CHUNKS, TUNED, TUNED))
    assert rows["episodes in both"] == "53"
    assert rows["median of the paired latency ratios"] == "1.000"
    assert rows["median paired ratio, replies within 20 tokens (53 episodes)"] == "1.000"


def test_pairs_the_two_programs_on_their_shared_episodes(tmp_path) -> None:
    script = load_script("paired_latency")
    out = tmp_path / "latency.md"
    assert script.main([*map(str, CHUNKS), "--baseline", COMPACT, "--program", TUNED, "--out", str(out)]) == 0
    rows = dict(
        line.strip("| ").split(" | ") for line in out.read_text().splitlines() if line.startswith("| median")
    )
    baseline_s, program_s = (
        float(value) for value in rows["median latency s (baseline / program)"].split(" / ")
    )
    assert 0 < baseline_s < program_s  # the adapter writes more and takes longer on these episodes
    with pytest.raises(SystemExit, match="not in these benches"):
        script.main([*map(str, CHUNKS), "--baseline", "nothing", "--program", TUNED])
