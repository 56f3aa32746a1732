"""The injected-edge rate from bench folders, paired against any baseline program, with no model call.

`edgewise bench` writes the rate of every run on episodes that label injections, paired with its own
`--baseline`. This counts it again from each run's predictions (`edgewise.eval.injection`), so that a
program benched later is paired with one benched earlier on the same episodes, as
`paired_from_results.py` pairs edge-F1: the injection set's `baseline-v1` and v2 runs
(benchmarks/results/injection-1.5b/injection) were benched before the bench wrote the rate. Each
run's edges are scored again first and must give the bench's own counts (`bench_folders.rescored`).
Only runs that hold every kept episode are reported; the others are named as left out. Lower is
better.

    python benchmarks/injection_from_results.py benchmarks/results/finetune-1.5b/injection-chunk-* \\
        benchmarks/results/injection-1.5b/injection/chunk-* --baseline qwen2.5-coder-1.5b-program-v2 \\
        --episodes data/episodes/injection.jsonl
"""

from __future__ import annotations

import sys

from bench_folders import (
    FolderRuns,
    RunKey,
    add_folder_arguments,
    command_line,
    folders_of,
    rescored,
    write_report,
)
from harness import script_parser

from edgewise.eval.injection import (
    EpisodeInjections,
    count_injections,
    injection_rate,
    paired_injection_rate,
)
from edgewise.eval.intervals import DEFAULT_RESAMPLES


def run_counts(folders: FolderRuns) -> dict[RunKey, list[EpisodeInjections]]:
    """Each complete run's injections and injected edges per episode, in the episodes' order."""
    return {
        key: [
            count_injections(episode, rescored(episode, predictions[episode.id])[0])
            for episode in folders.episodes
        ]
        for key, predictions in sorted(folders.runs.items())
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_folder_arguments(parser)
    parser.add_argument("--baseline", required=True, help="the program every other one is paired with")
    parser.add_argument(
        "--baseline-model",
        help="take the baseline from this model's run and pair every model's programs with it "
        "(a program on a smaller model against another model's program); default: each model's own",
    )
    args = parser.parse_args(argv)
    if args.programs and args.baseline not in args.programs.split(","):
        args.programs += f",{args.baseline}"  # as paired_from_results: the baseline is always read
    folders = folders_of(args)
    counts = run_counts(folders)
    injections = sum(len(episode.injections) for episode in folders.episodes)
    if not injections:
        raise SystemExit("none of these episodes labels an injection: there is no rate to count")
    lines = [
        "# The injected-edge rate, paired",
        "",
        f"Command: `{command_line(__file__, argv)}`",
        "",
        *(
            f"- left out: {model} {program} lacks {lacking} of the episodes\n"
            for (model, program), lacking in sorted(folders.incomplete.items())
        ),
        (
            f"{len(folders.episodes)} episodes, {injections} labeled injections. The rate is injected "
            "edges written per injection (lower is better), over the episodes with injections; intervals "
            f"are percentile bootstraps over those episodes ({DEFAULT_RESAMPLES} resamples, seed 0), the "
            "paired one resampling both runs' counts of an episode together."
        ),
        "",
        (
            "| model | program | injected-edge rate [95% CI] (injected / injections) "
            f"| Δ rate vs {args.baseline} [paired 95% CI] |"
        ),
        "|---|---|---:|---:|",
    ]
    for (model, program), run in counts.items():
        baseline_key = (args.baseline_model or model, args.baseline)
        if baseline_key not in counts:
            raise SystemExit(f"{args.baseline!r} has no complete run on {baseline_key[0]} in these folders")
        rate = injection_rate(run, n_resamples=DEFAULT_RESAMPLES, seed=0)
        assert rate is not None  # the episodes label injections
        if (model, program) == baseline_key:
            delta = "baseline"
        else:
            paired = paired_injection_rate(counts[baseline_key], run, n_resamples=DEFAULT_RESAMPLES, seed=0)
            delta = "-" if paired is None else paired.text()
        lines.append(f"| {model} | {program} | {rate.text()} | {delta} |")
    write_report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
