"""Paired edge-F1 differences against another baseline, from a bench folder's results.json.

`edgewise bench --baseline A` pairs every program with A. This reads the same per-episode counts and
pairs them with any other program of the run, with no model call, so one bench of several programs
answers "against A" and "against B" on exactly the same replies.

    python benchmarks/paired_from_results.py benchmarks/results/test-conversational-graphiti \\
        --baseline graphiti-structured
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from edgewise.eval.bench import BenchReport
from edgewise.eval.paired import paired_on_shared


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results_dir", type=Path, help="a folder `edgewise bench --out` wrote")
    parser.add_argument("--baseline", required=True, help="the program every other one is paired with")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    report = BenchReport.model_validate_json((args.results_dir / "results.json").read_bytes())
    rows = []
    for model in report.models:
        runs = {run.program: run for run in report.runs if run.model == model}
        if args.baseline not in runs:
            raise SystemExit(f"{args.baseline!r} is not a program of this bench ({', '.join(runs)})")
        base = runs[args.baseline]
        for program, run in runs.items():
            paired = (
                None
                if program == args.baseline
                else paired_on_shared(
                    base.episodes, run.episodes, n_resamples=report.bootstrap_resamples, seed=report.seed
                )
            )
            rows.append(
                {
                    "model": model,
                    "program": program,
                    "edge_f1": round(run.scores_completed.edge_f1, 4),
                    "baseline": args.baseline,
                    "difference": None if paired is None else round(paired.difference, 4),
                    "low": None if paired is None else round(paired.low, 4),
                    "high": None if paired is None else round(paired.high, 4),
                    "episodes": len(run.episodes),
                }
            )
    print(f"| model | program | edge-F1 | Δ vs {args.baseline} [paired 95% CI] |")
    print("|---|---|---:|---:|")
    for row in rows:
        delta = (
            "baseline"
            if row["difference"] is None
            else f"{row['difference']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]"
        )
        print(f"| {row['model']} | {row['program']} | {row['edge_f1']:.3f} | {delta} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
