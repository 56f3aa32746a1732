"""Latency of one program against another on the same episodes of one bench, with no model call.

A tuned program that writes more edges takes longer per episode for that reason alone; whether its
weights also cost time shows per completion token and on the episodes whose replies are about as
long. This reads `results.json` of bench folders run side by side (same server, same load) and
writes each of those medians.

    python benchmarks/paired_latency.py benchmarks/results/finetune-1.5b/test-conversational-chunk-* \\
        --baseline runs/qwen2.5-coder-1.5b-compact --program runs/qwen2.5-coder-1.5b-lora
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from bench_folders import command_line, write_report
from paired_from_results import merged_runs

from edgewise.eval.bench_records import EpisodeRun

EQUAL_OUTPUT_TOKENS = 20
"""Replies within this many completion tokens of each other count as equal output."""


def episodes_of(folders: list[Path], program: str) -> dict[str, EpisodeRun]:
    """The program's episodes in the folders' `results.json` (first folder wins), by id."""
    found: dict[str, EpisodeRun] = {}
    for (_, name), run in merged_runs(folders).items():
        if name == program:
            for episode in run.episodes:
                found.setdefault(episode.id, episode)
    if not found:
        raise SystemExit(f"{program!r} is not in these benches")
    return found


def latency_report(folders: list[Path], baseline: str, program: str) -> list[tuple[str, str]]:
    """(what, value) rows: medians of latency, paired ratios and seconds per completion token."""
    base, tuned = episodes_of(folders, baseline), episodes_of(folders, program)
    ids = sorted(base.keys() & tuned.keys())
    per_token = lambda e: e.latency_s / max(1, e.completion_tokens)
    equal = [
        i for i in ids if abs(base[i].completion_tokens - tuned[i].completion_tokens) <= EQUAL_OUTPUT_TOKENS
    ]
    median = statistics.median
    return [
        ("episodes in both", str(len(ids))),
        (
            "median latency s (baseline / program)",
            f"{median(base[i].latency_s for i in ids):.2f} / {median(tuned[i].latency_s for i in ids):.2f}",
        ),
        (
            "median of the paired latency ratios",
            f"{median(tuned[i].latency_s / base[i].latency_s for i in ids):.3f}",
        ),
        (
            "median completion tokens (baseline / program)",
            f"{median(base[i].completion_tokens for i in ids)} / {median(tuned[i].completion_tokens for i in ids)}",
        ),
        (
            "median s per completion token (baseline / program)",
            f"{median(per_token(base[i]) for i in ids):.4f} / {median(per_token(tuned[i]) for i in ids):.4f}",
        ),
        (
            f"median paired ratio, replies within {EQUAL_OUTPUT_TOKENS} tokens ({len(equal)} episodes)",
            f"{median(tuned[i].latency_s / base[i].latency_s for i in equal):.3f}" if equal else "-",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results_dirs", type=Path, nargs="+", help="folders `edgewise bench --out` wrote")
    parser.add_argument("--baseline", required=True, help="the program the other is timed against")
    parser.add_argument("--program", required=True, help="the program timed")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    rows = latency_report(args.results_dirs, args.baseline, args.program)
    text = "\n".join(
        [
            f"# Latency: {args.program} against {args.baseline}",
            "",
            f"Command: `{command_line(__file__, argv)}`",
            "",
            "| what | value |",
            "|---|---:|",
            *(f"| {what} | {value} |" for what, value in rows),
        ]
    )
    write_report(text + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
