"""Paired edge-F1 differences from bench folders' results.json, against any baseline, on any episode set.

`edgewise bench --baseline A` pairs every program with A. This reads the same per-episode counts and
pairs them with any other program of the run, with no model call, so one bench of several programs
answers "against A" and "against B" on exactly the same replies.

Given several folders, it merges each model x program's episodes (the first folder that scored an
episode wins), and `--episodes FILE` keeps only the episodes of that JSONL file (all must be
there): a sample whose parts were benched in separate runs of the same programs and model is scored
as one. Micro edge-F1 pools the counts; macro is the mean of the episodes' F1, and macro over
sources the mean of the sources' micro F1. Pair-F1 and the validAt / invalidAt accuracies come from
the runs' own totals, so they are given only where the episodes are whole runs (the chunks of one
sample), "-" otherwise. Attribute accuracy (right slots over the matched edges' labeled slots) and
attribute precision (values the gold supports over values written) pool the per-episode counts, and
attribute accuracy gets its paired difference as the bench gives it. Unparsed episodes had a reply
that did not parse; failed ones, a model call that failed. Where the benches withheld the entities
(`--withhold-entities`), a second table gives entity-F1 and the edge-F1 through the entities found,
pooled over the episodes that have those counts, each paired against the baseline. `--by-source`
adds a table of each source's micro edge-F1, paired with the baseline on that source's episodes (a
sample's overall gain can hide a source where the program is worse).

    python benchmarks/paired_from_results.py benchmarks/results/test-conversational-graphiti-1.5b/chunk-* \\
        --baseline graphiti-structured --episodes runs/results/test-conversational.jsonl
    python benchmarks/paired_from_results.py benchmarks/results/test-conversational-program-1.5b \\
        benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \\
        --baseline baseline-v1 --programs baseline-v1,qwen2.5-coder-1.5b-program \\
        --episodes runs/results/test-150.jsonl
    python benchmarks/paired_from_results.py benchmarks/results/finetune-0.5b/test-conversational-chunk-* \\
        benchmarks/results/test-program-v2-1.5b/conversational-chunk-* --baseline qwen2.5-coder-1.5b-program-v2 \\
        --baseline-model local/qwen2.5-coder-1.5b --episodes runs/results/test-conversational-no-attributes.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import median
from typing import NamedTuple

import numpy as np

from edgewise.eval.bench_comparison import paired_attributes, paired_counts
from edgewise.eval.bench_records import BenchReport, EpisodeRun, PairedResult
from edgewise.eval.intervals import DEFAULT_RESAMPLES
from edgewise.eval.paired import paired_on_shared
from edgewise.eval.records import SplitScore, f1_of


class MergedRun(NamedTuple):
    """One model x program over the folders: its episodes, and each folder's whole run scores."""

    episodes: list[EpisodeRun]
    parts: list[tuple[frozenset[str], SplitScore | None]]


def merged_runs(folders: list[Path]) -> dict[tuple[str, str], MergedRun]:
    """Each (model, program)'s episodes over the folders, one record per episode id."""
    episodes: dict[tuple[str, str], dict[str, EpisodeRun]] = defaultdict(dict)
    parts: dict[tuple[str, str], list[tuple[frozenset[str], SplitScore | None]]] = defaultdict(list)
    for folder in folders:
        report = BenchReport.model_validate_json((folder / "results.json").read_bytes())
        for run in report.runs:
            key = (run.model, run.program)
            for episode in run.episodes:
                episodes[key].setdefault(episode.id, episode)
            parts[key].append((frozenset(episode.id for episode in run.episodes), run.scores))
    return {key: MergedRun(list(by_id.values()), parts[key]) for key, by_id in episodes.items()}


def pooled_counts(run: MergedRun, ids: set[str]) -> SplitScore | None:
    """The runs' summed pair and date counts, when the runs are disjoint and together exactly `ids`.

    Pair-F1 and date accuracies are not in the per-episode records; each run's totals are, so they
    pool only over whole runs (chunks of one sample), never over part of a run. Only the counts are
    pooled: the macro fields of the result are not, and stay 0.
    """
    seen: set[str] = set()
    totals: list[SplitScore] = []
    for part_ids, scores in run.parts:
        if scores is None or seen & part_ids:
            return None
        seen |= part_ids
        totals.append(scores)
    if seen != ids:
        return None
    fields = ("tp", "fp", "fn", "pair_tp", "pair_fp", "pair_fn", "valid_at_right", "invalid_at_right")
    return SplitScore(
        episodes=len(ids),
        edge_f1_macro=0.0,
        pair_f1_macro=0.0,
        **{field: sum(getattr(score, field) for score in totals) for field in fields},
    )


def micro_f1(episodes: list[EpisodeRun]) -> float:
    """Edge-F1 of the episodes' pooled counts."""
    return f1_of(*(sum(getattr(e, field) for e in episodes) for field in ("tp", "fp", "fn")))


def by_source_episodes(episodes: list[EpisodeRun]) -> dict[str, list[EpisodeRun]]:
    """The episodes grouped by source, sources in name order."""
    sources: dict[str, list[EpisodeRun]] = defaultdict(list)
    for episode in episodes:
        sources[episode.source].append(episode)
    return dict(sorted(sources.items()))


def summary(episodes: list[EpisodeRun], pooled: SplitScore | None = None) -> dict[str, float | int | None]:
    tp, fp, fn = (sum(getattr(e, field) for e in episodes) for field in ("tp", "fp", "fn"))
    source_f1 = [micro_f1(items) for items in by_source_episodes(episodes).values()]
    n = len(episodes)
    return {
        "episodes": n,
        "edge_f1_micro": f1_of(tp, fp, fn),
        "edge_f1_macro_episodes": sum(e.f1 for e in episodes) / n,
        "edge_f1_macro_sources": sum(source_f1) / len(source_f1),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "pair_f1": None if pooled is None else pooled.pair_f1,
        "valid_at_accuracy": None if pooled is None else pooled.valid_at_accuracy,
        "invalid_at_accuracy": None if pooled is None else pooled.invalid_at_accuracy,
        "attribute_judged": sum(e.attribute_total for e in episodes),
        "attribute_accuracy": _share(
            sum(e.attribute_right for e in episodes), sum(e.attribute_total for e in episodes)
        ),
        "attribute_precision": _share(
            sum(e.attribute_supported for e in episodes), sum(e.attribute_values for e in episodes)
        ),
        "calls_per_episode": sum(e.calls for e in episodes) / n,
        "prompt_tokens_per_episode": sum(e.prompt_tokens for e in episodes) / n,
        "uncached_prompt_tokens_per_episode": sum(e.prompt_tokens - e.cached_prompt_tokens for e in episodes)
        / n,
        "completion_tokens_per_episode": sum(e.completion_tokens for e in episodes) / n,
        "latency_p50_s": median(e.latency_s for e in episodes),
        "latency_p95_s": float(np.quantile([e.latency_s for e in episodes], 0.95)),
        "failed": sum(1 for e in episodes if e.status == "failed"),
        "unparsed": sum(1 for e in episodes if e.parse_failures),
        **_found_counts(episodes, "entities", "entity"),
        **_found_counts(episodes, "alias_aware", "alias_aware"),
    }


def _found_counts(episodes: list[EpisodeRun], field: str, name: str) -> dict[str, float | int | None]:
    """F1, precision and recall pooled over the episodes that have `field`'s counts (entities found,
    or the edge counts through them), and how many episodes that is; None where none has them."""
    counted = [found for e in episodes if (found := getattr(e, field)) is not None]
    tp, fp, fn = (sum(getattr(found, part) for found in counted) for part in ("tp", "fp", "fn"))
    return {
        f"{name}_episodes": len(counted),
        f"{name}_f1": f1_of(tp, fp, fn) if counted else None,
        f"{name}_precision": _share(tp, tp + fp) if counted else None,
        f"{name}_recall": _share(tp, tp + fn) if counted else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results_dirs", type=Path, nargs="+", help="folders `edgewise bench --out` wrote")
    parser.add_argument("--baseline", required=True, help="the program every other one is paired with")
    parser.add_argument(
        "--episodes", type=Path, help="a JSONL file: score only its episodes (all must be there)"
    )
    parser.add_argument(
        "--programs", help="only these programs, comma-separated (default: every program of the benches)"
    )
    parser.add_argument(
        "--baseline-model",
        help="take the baseline's episodes from this model's run and pair every model's programs with it "
        "(a program on a smaller model against another model's program); default: each model's own",
    )
    parser.add_argument(
        "--by-source",
        action="store_true",
        help="also print each source's micro edge-F1 with its paired difference from the baseline",
    )
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    runs = merged_runs(args.results_dirs)
    wanted = None
    if args.episodes is not None:
        wanted = [json.loads(line)["id"] for line in args.episodes.read_text().splitlines() if line.strip()]
    rows = []
    if args.baseline_model is not None and (args.baseline_model, args.baseline) not in runs:
        raise SystemExit(f"{args.baseline!r} was not benched on {args.baseline_model}")
    options = {"n_resamples": DEFAULT_RESAMPLES, "seed": 0}
    for model in sorted({model for model, _ in runs}):
        chosen = set(args.programs.split(",")) if args.programs else None
        merged = {
            program: run
            for (m, program), run in runs.items()
            if m == model and (chosen is None or program in chosen or program == args.baseline)
        }
        baseline_key = (args.baseline_model or model, args.baseline)
        if baseline_key not in runs:
            raise SystemExit(f"{args.baseline!r} is not a program of these benches ({', '.join(merged)})")
        base = _chosen_episodes(runs[baseline_key].episodes, wanted, args.episodes, baseline_key)
        for program, run in merged.items():
            is_baseline = (model, program) == baseline_key
            if program == args.baseline and not is_baseline and chosen is not None and program not in chosen:
                continue  # another model's run of the baseline, not asked for
            episodes = _chosen_episodes(run.episodes, wanted, args.episodes, (model, program))
            attributes, entities, aware, paired, paired_macro = (
                (None,) * 5
                if is_baseline
                else (
                    paired_attributes(base, episodes, options),
                    paired_counts(base, episodes, "entities", options),
                    paired_counts(base, episodes, "alias_aware", options),
                    paired_on_shared(base, episodes, **options),
                    paired_on_shared(base, episodes, stat="edge_f1_macro", **options),
                )
            )
            rows.append(
                {
                    "model": model,
                    "program": program,
                    "is_baseline": is_baseline,
                    **summary(episodes, pooled_counts(run, {e.id for e in episodes})),
                    "baseline": args.baseline,
                    "difference": None if paired is None else paired.difference,
                    "low": None if paired is None else paired.low,
                    "high": None if paired is None else paired.high,
                    "macro_difference": None if paired_macro is None else paired_macro.difference,
                    "macro_low": None if paired_macro is None else paired_macro.low,
                    "macro_high": None if paired_macro is None else paired_macro.high,
                    "attribute_difference": None if attributes is None else attributes.model_dump(),
                    "entity_difference": None if entities is None else entities.model_dump(),
                    "alias_aware_difference": None if aware is None else aware.model_dump(),
                    "by_source": by_source(base, episodes, is_baseline, options) if args.by_source else None,
                }
            )
    print(
        f"| model | program | episodes | edge-F1 micro | macro (episodes) | macro (sources) "
        f"| Δ micro vs {args.baseline} [paired 95% CI] | Δ macro (episodes) [paired 95% CI] | pair-F1 "
        "| precision / recall | validAt / invalidAt acc "
        "| calls / prompt tok / uncached prompt tok / completion tok per episode | latency p50 / p95 s "
        "| unparsed / failed episodes | attribute acc (judged) / prec | Δ attribute acc [paired 95% CI] |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        delta, delta_macro = (
            ("baseline", "baseline")
            if row["is_baseline"]
            else (
                f"{row['difference']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]",
                f"{row['macro_difference']:+.3f} [{row['macro_low']:+.3f}, {row['macro_high']:+.3f}]",
            )
        )
        print(
            f"| {row['model']} | {row['program']} | {row['episodes']} | {row['edge_f1_micro']:.3f} "
            f"| {row['edge_f1_macro_episodes']:.3f} | {row['edge_f1_macro_sources']:.3f} "
            f"| {delta} | {delta_macro} | {_rate(row['pair_f1'])} "
            f"| {_rate(row['precision'])} / {_rate(row['recall'])} "
            f"| {_rate(row['valid_at_accuracy'])} / {_rate(row['invalid_at_accuracy'])} "
            f"| {row['calls_per_episode']:.2f} / {row['prompt_tokens_per_episode']:.1f} "
            f"/ {row['uncached_prompt_tokens_per_episode']:.1f} / {row['completion_tokens_per_episode']:.1f} "
            f"| {row['latency_p50_s']:.1f} / {row['latency_p95_s']:.1f} "
            f"| {row['unparsed']} / {row['failed']} "
            f"| {_rate(row['attribute_accuracy'])} ({row['attribute_judged']}) / {_rate(row['attribute_precision'])} "
            f"| {_paired_text(row['attribute_difference'], row['is_baseline'])} |"
        )
    if any(row["entity_episodes"] or row["alias_aware_episodes"] for row in rows):
        _print_found_table(rows, args.baseline)
    if args.by_source:
        _print_source_table(rows, args.baseline)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def _print_found_table(rows: list[dict], baseline: str) -> None:
    """With entities withheld (or an open vocabulary): entity-F1 and the edge-F1 through the entities
    found (alias-aware), each with its paired difference from the baseline."""
    print()
    print(
        f"| model | program | entity-F1 (episodes judged) | entity P / R | Δ entity-F1 vs {baseline} "
        "[paired 95% CI] | alias-aware edge-F1 | alias-aware P / R | Δ alias-aware edge-F1 [paired 95% CI] |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        is_baseline = row["is_baseline"]
        print(
            f"| {row['model']} | {row['program']} | {_rate(row['entity_f1'])} ({row['entity_episodes']}) "
            f"| {_rate(row['entity_precision'])} / {_rate(row['entity_recall'])} "
            f"| {_paired_text(row['entity_difference'], is_baseline)} "
            f"| {_rate(row['alias_aware_f1'])} | {_rate(row['alias_aware_precision'])} / "
            f"{_rate(row['alias_aware_recall'])} | {_paired_text(row['alias_aware_difference'], is_baseline)} |"
        )


def by_source(
    base: list[EpisodeRun], episodes: list[EpisodeRun], is_baseline: bool, options: dict
) -> dict[str, dict]:
    """Per source: the episodes, this program's micro edge-F1 on them and, unless it is the
    baseline, its paired difference from the baseline's on the same episodes (those both scored)."""
    table = {}
    for source, items in by_source_episodes(episodes).items():
        paired = None if is_baseline else paired_on_shared(base, items, **options)
        table[source] = {
            "episodes": len(items),
            "edge_f1_micro": micro_f1(items),
            "difference": None if paired is None else PairedResult.of(paired).model_dump(),
        }
    return table


def _print_source_table(rows: list[dict], baseline: str) -> None:
    """Each source's micro edge-F1, and its paired difference from the baseline's on that source."""
    sources = sorted({source for row in rows for source in row["by_source"]})
    print()
    print(f"Micro edge-F1 per source, Δ vs {baseline} on the source's episodes [paired 95% CI]:")
    print()
    print("| model | program | " + " | ".join(sources) + " |")
    print("|---|---|" + "---:|" * len(sources))
    for row in rows:
        cells = []
        for source in sources:
            cell = row["by_source"].get(source)
            if cell is None:
                cells.append("-")
                continue
            paired = "baseline" if row["is_baseline"] else f"Δ {_paired_text(cell['difference'], False)}"
            cells.append(f"{cell['edge_f1_micro']:.3f} ({cell['episodes']}) {paired}")
        print(f"| {row['model']} | {row['program']} | " + " | ".join(cells) + " |")


def _chosen_episodes(
    episodes: list[EpisodeRun], wanted: list[str] | None, source: Path | None, key: tuple[str, str]
) -> list[EpisodeRun]:
    """`episodes` in `wanted`'s order (all of them when no `--episodes` file was given)."""
    if wanted is None:
        return episodes
    by_id = {episode.id: episode for episode in episodes}
    missing = [episode_id for episode_id in wanted if episode_id not in by_id]
    if missing:
        raise SystemExit(
            f"{key[0]} {key[1]}: {len(missing)} of the {len(wanted)} episodes of {source} were not scored "
            f"(first: {missing[0]})"
        )
    return [by_id[episode_id] for episode_id in wanted]


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _paired_text(paired: dict[str, float] | None, is_baseline: bool) -> str:
    if is_baseline:
        return "baseline"
    return "-" if paired is None else PairedResult.model_validate(paired).text()


if __name__ == "__main__":
    sys.exit(main())
