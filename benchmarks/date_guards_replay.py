"""Date guards replayed on benched replies, with no model call: validAt accuracy per source, before and after.

The guards (`modules/date_guards.py`, option `date_guards`) are post-processing after dates from facts
and change only the dates of the edges they are given; a bench's predictions.jsonl holds each program's
edges after all post-processing. Replaying the guards on those edges is what the program would have
returned with the option on, as long as no later step reads dates: the precision step shows the model
facts, not dates, and the attribute step adds attributes only. So each benched program is scored as
it was and with the guards applied to its edges. A program benched without dates from facts is also
scored with them (`dates_from_facts` on its edges) and with both, so the two levers can be judged
apart and together.

Scoring is the project's own (`eval/scoring.py`, dates at the gold's granularity by `eval/dates.py`);
each Δ is the paired bootstrap difference of validAt accuracy on matched edges (`eval/paired.py`) on
that source's episodes, against the program as benched. The replay is checked first: each run scored
again must give the counts the bench recorded, and for a program benched with dates from facts,
running them again on its edges before them (rebuilt from its `date_from_fact` warnings) must give
its edges as benched.

    python benchmarks/date_guards_replay.py benchmarks/results/test-conversational-program-1.5b \\
        benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \\
        --programs baseline-v1,qwen2.5-coder-1.5b-program --out benchmarks/results/date_guards_replay.md

`--against PROGRAM` adds one more table: every program's validAt accuracy as benched, per source, with
its paired difference from PROGRAM's on the same episodes (is a new program's date worse anywhere?).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from bench_folders import (
    add_folder_arguments,
    command_line,
    folders_of,
    plain_edges,
    rescored,
    write_report,
)
from harness import script_parser

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge, ExtractionWarning, format_utc
from edgewise.eval.dates import same_date
from edgewise.eval.intervals import DEFAULT_RESAMPLES, stat_value
from edgewise.eval.matching import episode_views, match_edges
from edgewise.eval.paired import paired_difference
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.date_guards import guard_dates
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.fact_dates import dates_from_facts
from edgewise.programs.names import resolve_program

Step = Callable[[list[Edge], LabeledEpisode, list[ExtractionWarning]], list[Edge]]


def _fact_dates(edges: list[Edge], episode: LabeledEpisode, context: CallContext) -> list[Edge]:
    return dates_from_facts(edges, episode.reference_time, context)


def _guards(edges: list[Edge], episode: LabeledEpisode, context: CallContext) -> list[Edge]:
    return guard_dates(edges, episode.episode_content, episode.reference_time, context)


class Variant(NamedTuple):
    label: str
    steps: tuple[Step, ...]


def variants(fact_dates_on: bool) -> list[Variant]:
    """The program as benched, then with the guards (and, without dates from facts, with those too)."""
    if fact_dates_on:
        return [Variant("as benched", ()), Variant("+ date_guards", (_guards,))]
    return [
        Variant("as benched", ()),
        Variant("+ date_guards", (_guards,)),
        Variant("+ fact_dates", (_fact_dates,)),
        Variant("+ fact_dates + date_guards", (_fact_dates, _guards)),
    ]


def edges_before_fact_dates(edges: list[Edge], warnings: Sequence[ExtractionWarning]) -> list[Edge]:
    """The edges as dates from facts received them: each `date_from_fact` warning holds the edge before."""
    before = [Edge.model_validate(w.edge) for w in warnings if w.code == "date_from_fact" and w.edge]
    restored = []
    for edge in edges:
        original = next(
            (old for old in before if old.model_copy(update={"valid_at": edge.valid_at}) == edge), None
        )
        if original is not None:
            before.remove(original)
        restored.append(original or edge)
    return restored


def _matching(episode: LabeledEpisode, edges: Sequence[Edge]) -> dict[int, int]:
    return match_edges(episode_views(episode, edges), episode.edges, edges)[0]


def gold_edge(episode: LabeledEpisode, edges: Sequence[Edge], index: int) -> Edge:
    """The gold edge the prediction at `index` is matched to (it must be matched)."""
    return episode.edges[_matching(episode, edges)[index]]


def valid_at_verdicts(episode: LabeledEpisode, edges: Sequence[Edge]) -> dict[int, bool]:
    """For each matched prediction (by index), whether its validAt is right at the gold's granularity."""
    matched = _matching(episode, edges)
    verdicts = {}
    for p, g in matched.items():
        gold = episode.edges[g]
        verdicts[p] = same_date(gold.valid_at, gold.valid_at_granularity, edges[p].valid_at)
    return verdicts


def _code_of_change(warnings: Sequence[ExtractionWarning], edge: Edge) -> str:
    codes = [w.code for w in warnings if w.edge and Edge.model_validate(w.edge) == edge]
    return codes[-1] if codes else "?"


class Change(NamedTuple):
    """One matched edge whose dates a step changed: what it was, what it became, and the gold's."""

    episode_id: str
    code: str
    outcome: str
    fact: str
    before: str
    after: str
    gold: str


def _dates(edge: Edge) -> str:
    return " / ".join(
        "null" if value is None else format_utc(value) for value in (edge.valid_at, edge.invalid_at)
    )


def replay(
    episode: LabeledEpisode,
    edges: list[Edge],
    steps: tuple[Step, ...],
    changes: Counter[tuple[str, str]],
    matched_changes: list[Change],
) -> EpisodeScore:
    """`edges` through `steps`, scored; each changed validAt counted by the warning code that changed it
    and whether it made a matched edge's date right ("fixed"), wrong ("broke") or neither; each change
    to a matched edge is listed in `matched_changes`."""
    new = edges
    for step in steps:
        context = CallContext()
        warnings = context.warnings
        changed = step(new, episode, context)
        old_right = valid_at_verdicts(episode, new)
        new_right = valid_at_verdicts(episode, changed)
        for index, (old_edge, new_edge) in enumerate(zip(new, changed, strict=True)):
            if (old_edge.valid_at, old_edge.invalid_at) == (new_edge.valid_at, new_edge.invalid_at):
                continue
            code = _code_of_change(warnings, old_edge)
            if index not in old_right or index not in new_right:
                outcome = "unmatched"
            elif old_right[index] == new_right[index]:
                outcome = "still right" if new_right[index] else "still wrong"
            else:
                outcome = "fixed" if new_right[index] else "broke"
            changes[(code, outcome)] += 1
            if outcome != "unmatched":
                gold = gold_edge(episode, changed, index)
                matched_changes.append(
                    Change(
                        episode.id,
                        code,
                        outcome,
                        old_edge.fact,
                        _dates(old_edge),
                        _dates(new_edge),
                        _dates(gold),
                    )
                )
        new = changed
    return score_episode(episode, new)


def _accuracy(scores: Sequence[EpisodeScore], stat: Any) -> str:
    matched = sum(s.tp for s in scores)
    return "-" if not matched else f"{stat_value(scores, stat):.3f}"


def _paired(base: Sequence[EpisodeScore], scores: Sequence[EpisodeScore]) -> str:
    if base is scores:
        return "-"
    if not sum(s.tp for s in base) or not sum(s.tp for s in scores):
        return "-"
    return paired_difference(
        base, scores, stat="valid_at_accuracy", n_resamples=DEFAULT_RESAMPLES, seed=0
    ).text()


def valid_at_cells(
    base: dict[str, list[EpisodeScore]], scores: dict[str, list[EpisodeScore]], sources: list[str]
) -> list[str]:
    """Per source and over all: validAt accuracy [matched edges], and its paired Δ from `base`."""
    cells = []
    for source in [*sources, "all"]:
        delta = _paired(base[source], scores[source])
        cells.append(
            f"{_accuracy(scores[source], 'valid_at_accuracy')} [{sum(s.tp for s in scores[source])}]"
            + ("" if delta == "-" else f" Δ {delta}")
        )
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_folder_arguments(parser)
    parser.add_argument(
        "--against",
        help="also pair every program's validAt as benched with this program's, per source "
        "(example: --against baseline-v1)",
    )
    args = parser.parse_args(argv)
    folders = folders_of(args)
    sources = sorted({episode.source for episode in folders.episodes})
    lines = [
        "# Date guards replayed on benched replies",
        "",
        f"Command: `{command_line(__file__, argv)}`",
        "",
        f"{len(folders.episodes)} episodes ("
        + ", ".join(f"{s} {sum(1 for e in folders.episodes if e.source == s)}" for s in sources)
        + "). No model call: each program's benched edges are scored as benched and with the date "
        "post-processing replayed on them (see the script's docstring). validAt accuracy is over the "
        "edges matched for edge-F1, at the gold's granularity (matched edges in brackets); Δ is the paired "
        f"bootstrap difference against the program as benched on the same episodes ({DEFAULT_RESAMPLES} "
        "resamples, seed 0).",
        "",
    ]
    for key, skipped in sorted(folders.incomplete.items()):
        lines.append(f"- left out: {key[0]} {key[1]} lacks {skipped} of the episodes")
    as_benched: dict[tuple[str, str], dict[str, list[EpisodeScore]]] = {}
    for (model, program), predictions in sorted(folders.runs.items()):
        resolved = resolve_program(program)
        if not isinstance(resolved, EdgeExtractor):
            lines.append(f"- left out: {model} {program} is not an EdgeExtractor (no program options)")
            continue
        fact_dates_on = resolved.options.fact_dates
        checks = Counter[str]()
        for episode in folders.episodes:
            prediction = predictions[episode.id]
            edges, _ = rescored(episode, prediction)
            if fact_dates_on:
                again = dates_from_facts(
                    edges_before_fact_dates(edges, prediction.warnings), episode.reference_time, CallContext()
                )
                checks["reproduced" if again == edges else "differs"] += 1
        rows: dict[str, dict[str, list[EpisodeScore]]] = {}
        changes: dict[str, Counter[tuple[str, str]]] = {}
        listed: dict[str, list[Change]] = {}
        for variant in variants(fact_dates_on):
            counted: Counter[tuple[str, str]] = Counter()
            listed[variant.label] = []
            by_source: dict[str, list[EpisodeScore]] = defaultdict(list)
            for episode in folders.episodes:
                edges = plain_edges(predictions[episode.id])
                by_source[episode.source].append(
                    replay(episode, edges, variant.steps, counted, listed[variant.label])
                )
            by_source["all"] = [s for source in sources for s in by_source[source]]
            rows[variant.label] = by_source
            changes[variant.label] = counted
        as_benched[(model, program)] = rows["as benched"]
        lines += [
            "",
            f"## {model} · {program} (fact_dates {'on' if fact_dates_on else 'off'} as benched)",
            "",
        ]
        if fact_dates_on:
            lines.append(
                f"Dates from facts replayed on the edges before them: {checks['reproduced']} of "
                f"{len(folders.episodes)} episodes give the benched edges exactly."
            )
            lines.append("")
        header = "| variant | " + " | ".join(f"{s} ({len(rows['as benched'][s])})" for s in [*sources, "all"])
        lines += [header + " |", "|---|" + "---:|" * (len(sources) + 1)]
        base = rows["as benched"]
        for label, by_source in rows.items():
            lines.append(
                f"| {label} validAt | " + " | ".join(valid_at_cells(base, by_source, sources)) + " |"
            )
        for label, by_source in rows.items():
            cells = [
                f"{_accuracy(by_source[source], 'invalid_at_accuracy')} · {stat_value(by_source[source], 'edge_f1_micro'):.3f}"
                for source in [*sources, "all"]
            ]
            lines.append(f"| {label} invalidAt · edge-F1 | " + " | ".join(cells) + " |")
        lines += [
            "",
            "Changed dates by warning code (matched edges: fixed / broke / still wrong / still right; unmatched):",
            "",
        ]
        lines += [
            "| variant | code | fixed | broke | still wrong | still right | unmatched |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for label, counted in changes.items():
            for code in sorted({code for code, _ in counted}):
                lines.append(
                    f"| {label} | `{code}` | "
                    + " | ".join(
                        str(counted[(code, outcome)])
                        for outcome in ("fixed", "broke", "still wrong", "still right", "unmatched")
                    )
                    + " |"
                )
        lines += ["", "Each change to a matched edge (validAt / invalidAt):", ""]
        lines += [
            "| variant | episode | code | outcome | fact | before | after | gold |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for label, items in listed.items():
            for item in items:
                fact = item.fact if len(item.fact) <= 90 else item.fact[:87] + "..."
                lines.append(
                    f"| {label} | {item.episode_id} | `{item.code}` | {item.outcome} | {fact.replace('|', '/')} "
                    f"| {item.before} | {item.after} | {item.gold} |"
                )
    if args.against:
        lines += against_table(as_benched, args.against, sources)
    write_report("\n".join(lines) + "\n", args.out)
    return 0


def against_table(
    as_benched: dict[tuple[str, str], dict[str, list[EpisodeScore]]], against: str, sources: list[str]
) -> list[str]:
    """Each program's validAt accuracy as benched per source, paired with `against`'s on its model."""
    lines = [
        "",
        f"## validAt as benched, against {against}",
        "",
        (
            "Each program's validAt accuracy on its matched edges [their number], Δ the paired "
            f"difference from {against}'s on the same episodes and model."
        ),
        "",
        "| model | program | " + " | ".join([*sources, "all"]) + " |",
        "|---|---|" + "---:|" * (len(sources) + 1),
    ]
    for (model, program), by_source in sorted(as_benched.items()):
        base = as_benched.get((model, against))
        if base is None:
            raise SystemExit(f"--against: no complete run of {against} on {model}")
        cells = valid_at_cells(base, by_source, sources)
        lines.append(f"| {model} | {program} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
