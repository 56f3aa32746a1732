# Over 400 lines: one script, its kinds of miss and their table read top to bottom.
"""Why gold edges are missed, from a bench's own files: pair recall per source and each miss by its kind.

No model call. Each gold edge a program did not find (edge-F1's matching, `eval/scoring.py`) is put in
the first kind that explains it:

- `wrong type`: a prediction joins the two entities in the gold's direction with a type the gold does
  not accept (the metric's `mistyped` record).
- `reversed`: the gold's type with source and target swapped (`reversed`).
- `dropped by post-processing`: the model wrote an edge between the two entities, and post-processing
  dropped it; its warning code is given (`type_signature`: its type cannot connect its entity types).
- `name not in the entity list`: the model wrote the pair under a name that is not an entity of the
  episode (an `unknown_entity` warning whose name, read loosely, is one of the two).
- `other name of the same person`: the model wrote the edge (any type) with one end named by the
  person's other entity row ("Joey" where the gold says "Speaker 1"), as the episode's own gold
  ALSO_KNOWN_AS edges tell.
- `no pair`: nothing between the two, split by whether the model wrote any edge in the episode and
  whether it named either entity at all.

Pair recall is pair-F1's recall: gold edges whose two entities a prediction joins (direction counts
unless the type is symmetric), whatever its type. A second section describes the data of one source
(`--describe`, by default dialogre): entity rows, gold types and which ends are speakers, and what the
programs wrote there.

    python benchmarks/diagnose_misses.py benchmarks/results/test-dialogre-program-1.5b \\
        --out benchmarks/results/diagnose_misses_dialogre.md
    python benchmarks/diagnose_misses.py benchmarks/results/test-conversational-program-1.5b \\
        benchmarks/results/test-dialogre-program-1.5b benchmarks/results/test-150-rest-*-program-1.5b \\
        --episodes runs/results/test-150.jsonl --programs baseline-v1,qwen2.5-coder-1.5b-program \\
        --out benchmarks/results/diagnose_misses_test150.md
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Final

from bench_folders import (
    FolderRuns,
    add_folder_arguments,
    command_line,
    folders_of,
    plain_edges,
    write_report,
)
from harness import script_parser

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Edge
from edgewise.eval.episode_log import EpisodePrediction
from edgewise.eval.intervals import DEFAULT_RESAMPLES
from edgewise.eval.matching import normalize_type
from edgewise.eval.paired import paired_difference
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.speaker_names import add_speaker_names

KINDS: Final = (
    "found",
    "wrong type",
    "reversed",
    "dropped by post-processing",
    "name not in the entity list",
    "other name of the same person",
    "no pair: no edge in the episode",
    "no pair: neither entity named",
    "no pair: an entity named elsewhere",
)
ALIAS_TYPE: Final = "ALSO_KNOWN_AS"
_SPEAKER: Final = re.compile(r"^Speaker \d+$")


def _alias_classes(episode: LabeledEpisode) -> dict[str, str]:
    """Each entity's normalized name -> a representative of the names the gold says are one person."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for gold in episode.edges:
        if normalize_type(gold.relationship_type) == ALIAS_TYPE:
            a, b = (
                find(normalize_name(gold.source_entity_name)),
                find(normalize_name(gold.target_entity_name)),
            )
            parent[a] = b
    return {name: find(name) for name in list(parent)}


def _loose(name: str, entities: Sequence[str]) -> set[str]:
    """The entities a name not in the list may mean: one whose words it shares ("Joey" for "Joey Tribbiani")."""
    words = set(normalize_name(name).replace(".", " ").split())
    return {
        normalize_name(entity)
        for entity in entities
        if words and words & set(normalize_name(entity).replace(".", " ").split())
    }


def _pair(edge: Edge | GoldEdge) -> frozenset[str]:
    return frozenset((normalize_name(edge.source_entity_name), normalize_name(edge.target_entity_name)))


def _dropped(prediction: EpisodePrediction) -> list[tuple[str, Edge]]:
    """The edges post-processing dropped (their warning says "dropped:"), with the warning code."""
    dropped = []
    for warning in prediction.warnings:
        if warning.edge and warning.message.startswith("dropped:") and warning.code != "duplicate":
            fields = {
                "relationshipType": warning.edge.get("relationshipType", ""),
                "sourceEntityName": warning.edge.get("sourceEntityName", ""),
                "targetEntityName": warning.edge.get("targetEntityName", ""),
                "fact": warning.edge.get("fact") or "-",
            }
            dropped.append((warning.code, Edge.model_validate(fields)))
    return dropped


def classify(
    episode: LabeledEpisode, prediction: EpisodePrediction, score: EpisodeScore, edges: list[Edge]
) -> list[tuple[GoldEdge, str, str]]:
    """(gold edge, kind, detail) for every gold edge of the episode."""
    mistyped = {id(record.gold): record for record in score.mistyped}
    reversed_ = {id(record.gold) for record in score.reversed}
    missed = {id(record.gold) for record in score.missed}
    dropped = _dropped(prediction)
    aliases = _alias_classes(episode)
    entities = [entity.name for entity in episode.entities]
    named = {normalize_name(n) for e in edges for n in (e.source_entity_name, e.target_entity_name)}

    def same_person(edge: Edge) -> frozenset[str]:
        return frozenset(aliases.get(name, name) for name in _pair(edge))

    rows = []
    for gold in episode.edges:
        pair = _pair(gold)
        if id(gold) in mistyped:
            rows.append((gold, "wrong type", mistyped[id(gold)].predicted.relationship_type))
        elif id(gold) in reversed_:
            rows.append((gold, "reversed", ""))
        elif id(gold) not in missed:
            rows.append((gold, "found", ""))
        elif codes := [code for code, edge in dropped if _pair(edge) == pair]:
            rows.append((gold, "dropped by post-processing", codes[0]))
        elif unknown := [
            edge
            for code, edge in dropped
            if code == "unknown_entity"
            and all(
                pair & ({normalize_name(n)} | _loose(n, entities))
                for n in (edge.source_entity_name, edge.target_entity_name)
            )
        ]:
            rows.append(
                (
                    gold,
                    "name not in the entity list",
                    f"{unknown[0].source_entity_name} / {unknown[0].target_entity_name}",
                )
            )
        elif gold.relationship_type != ALIAS_TYPE and (
            others := [
                edge for edge in edges if _pair(edge) != pair and same_person(edge) == same_person(gold)
            ]
        ):
            rows.append(
                (
                    gold,
                    "other name of the same person",
                    f"{others[0].source_entity_name} / {others[0].target_entity_name}",
                )
            )
        elif not edges:
            rows.append((gold, "no pair: no edge in the episode", ""))
        elif not pair & named:
            rows.append((gold, "no pair: neither entity named", ""))
        else:
            rows.append((gold, "no pair: an entity named elsewhere", ""))
    return rows


def _rate(part: int, whole: int) -> str:
    return "-" if not whole else f"{part / whole:.3f}"


REPLAYS: Final = ("speaker_names",)
"""Post-processing options that `--replay` applies to the benched edges (they only add edges, after
every step that reads the model's reply, so this is what the program returns with the option on)."""


def replayed(option: str | None, episode: LabeledEpisode, edges: list[Edge]) -> list[Edge]:
    """The benched edges, with the post-processing option `option` applied (None: as benched)."""
    if option is None:
        return edges
    if option == "speaker_names":
        return add_speaker_names(edges, episode.episode(), CallContext())
    raise ValueError(f"--replay: unknown option {option!r}; choose from {', '.join(REPLAYS)}")


def report(folders: FolderRuns, describe: str, command: str, replays: Sequence[str] = ()) -> str:
    sources = sorted({episode.source for episode in folders.episodes})
    runs = [
        (model, program if option is None else f"{program} + {option}", predictions, option)
        for (model, program), predictions in sorted(folders.runs.items())
        for option in (None, *replays)
    ]
    scores: dict[tuple[str, str], dict[str, list[EpisodeScore]]] = {}
    lines = [
        "# Missed gold edges by kind",
        "",
        f"Command: `{command}`",
        "",
        f"{len(folders.episodes)} episodes ("
        + ", ".join(f"{s} {sum(1 for e in folders.episodes if e.source == s)}" for s in sources)
        + f"), {sum(len(e.edges) for e in folders.episodes)} gold edges. No model call: the benched "
        "predictions and warnings, scored again by `eval/scoring.py` (see the script's docstring).",
        "",
    ]
    for key, lacking in sorted(folders.incomplete.items()):
        lines.append(f"- left out: {key[0]} {key[1]} lacks {lacking} of the episodes")
    by_type: dict[tuple[str, str], Counter[str]] = {}
    confusions: dict[tuple[str, str], Counter[tuple[str, str]]] = {}
    written: dict[tuple[str, str], Counter[str]] = {}
    examples: dict[tuple[str, str], list[str]] = {}
    lines += ["## Pair and edge recall per source", ""]
    lines += [
        "| model | program | source | gold edges | pair recall | edge recall | precision | predicted edges / episode |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    kinds_rows = []
    for model, program, predictions, option in runs:
        per_source: dict[str, Counter[str]] = defaultdict(Counter)
        scores[(model, program)] = defaultdict(list)
        by_type[(model, program)] = Counter()
        confusions[(model, program)] = Counter()
        written[(model, program)] = Counter()
        examples[(model, program)] = []
        for episode in folders.episodes:
            prediction = predictions[episode.id]
            edges = replayed(option, episode, plain_edges(prediction))
            score = score_episode(episode, edges)
            scores[(model, program)][episode.source].append(score)
            counts = per_source[episode.source]
            counts["gold"] += score.n_gold
            counts["pair_tp"] += score.pair_tp
            counts["tp"] += score.tp
            counts["fp"] += score.fp
            counts["predicted"] += score.n_predicted
            counts["episodes"] += 1
            for gold, kind, detail in classify(episode, prediction, score, edges):
                counts[kind] += 1
                if episode.source == describe:
                    by_type[(model, program)][f"{gold.relationship_type}\t{kind}"] += 1
                    if kind == "wrong type":
                        confusions[(model, program)][(gold.relationship_type, detail)] += 1
                    if (
                        kind in ("other name of the same person", "dropped by post-processing")
                        and len(examples[(model, program)]) < 8
                    ):
                        examples[(model, program)].append(
                            f"{episode.id}: gold {gold.source_entity_name} -{gold.relationship_type}-> "
                            f"{gold.target_entity_name}; {kind}: {detail}"
                        )
            if episode.source == describe:
                written[(model, program)].update(edge.relationship_type for edge in edges)
        total: Counter[str] = Counter()
        for source in sources:
            counts = per_source[source]
            total.update(counts)
            lines.append(_recall_row(model, program, source, counts))
        lines.append(_recall_row(model, program, "all", total))
        kinds_rows.append((model, program, per_source, total))
    lines += ["", "## Gold edges by what became of them (count, share of the source's gold edges)", ""]
    lines += [
        "| model | program | source | " + " | ".join(KINDS) + " |",
        "|---|---|---|" + "---:|" * len(KINDS),
    ]
    for model, program, per_source, total in kinds_rows:
        for source, counts in [*((s, per_source[s]) for s in sources), ("all", total)]:
            cells = [f"{counts[kind]} ({_rate(counts[kind], counts['gold'])})" for kind in KINDS]
            lines.append(f"| {model} | {program} | {source} | " + " | ".join(cells) + " |")
    if replays:
        lines += [
            "",
            f"## The replayed options against the program as benched (paired, {DEFAULT_RESAMPLES} resamples)",
            "",
            "| model | program | source | Δ edge-F1 | Δ recall | Δ precision |",
            "|---|---|---|---:|---:|---:|",
        ]
        for model, program, _, option in runs:
            if option is None:
                continue
            base = scores[(model, program.removesuffix(f" + {option}"))]
            for source in [*sources, "all"]:
                a = _scores_of(base, source, sources)
                b = _scores_of(scores[(model, program)], source, sources)
                cells = [
                    paired_difference(a, b, stat=stat, n_resamples=DEFAULT_RESAMPLES, seed=0).text()
                    for stat in ("edge_f1_micro", "recall", "precision")
                ]
                lines.append(f"| {model} | {program} | {source} | " + " | ".join(cells) + " |")
    lines += _describe(folders, describe, by_type, confusions, written, examples)
    return "\n".join(lines) + "\n"


def _scores_of(
    by_source: dict[str, list[EpisodeScore]], source: str, sources: list[str]
) -> list[EpisodeScore]:
    """One source's episode scores, or every source's for "all" (in source order)."""
    return [score for name in sources for score in by_source[name]] if source == "all" else by_source[source]


def _recall_row(model: str, program: str, source: str, counts: Counter[str]) -> str:
    return (
        f"| {model} | {program} | {source} | {counts['gold']} | {_rate(counts['pair_tp'], counts['gold'])} "
        f"| {_rate(counts['tp'], counts['gold'])} | {_rate(counts['tp'], counts['tp'] + counts['fp'])} "
        f"| {_rate(counts['predicted'], counts['episodes'])} |"
    )


def _describe(
    folders: FolderRuns,
    source: str,
    by_type: dict[tuple[str, str], Counter[str]],
    confusions: dict[tuple[str, str], Counter[tuple[str, str]]],
    written: dict[tuple[str, str], Counter[str]],
    examples: dict[tuple[str, str], list[str]],
) -> list[str]:
    """The data of one source, and per gold type what the programs made of it."""
    episodes = [episode for episode in folders.episodes if episode.source == source]
    if not episodes:
        return []
    golds = [gold for episode in episodes for gold in episode.edges]
    entity_rows = [entity for episode in episodes for entity in episode.entities]
    in_gold = sum(
        1
        for episode in episodes
        for entity in episode.entities
        if any(entity.name in (g.source_entity_name, g.target_entity_name) for g in episode.edges)
    )
    speaker_ends = Counter(
        sum(bool(_SPEAKER.match(name)) for name in (g.source_entity_name, g.target_entity_name))
        for g in golds
    )
    aliased = 0
    for episode in episodes:
        classes = _alias_classes(episode)
        aliased += sum(
            1
            for g in episode.edges
            if g.relationship_type != ALIAS_TYPE
            and any(
                _SPEAKER.match(name) and normalize_name(name) in classes
                for name in (g.source_entity_name, g.target_entity_name)
            )
        )
    types = Counter(g.relationship_type for g in golds)
    offered = Counter(len(episode.edge_types) for episode in episodes)
    lines = [
        "",
        f"## The {source} episodes",
        "",
        (
            f"- {len(episodes)} episodes, {len(golds)} gold edges, {len(entity_rows)} entity rows "
            f"({len(entity_rows) / len(episodes):.1f} per episode); {in_gold} of them are an end of some gold "
            f"edge, the other {len(entity_rows) - in_gold} are distractors. "
            f'{sum(1 for e in entity_rows if _SPEAKER.match(e.name))} rows are speakers ("Speaker N"), the '
            "turns' own labels; the text names a speaker only by what others call them."
        ),
        (
            "- Relationship types offered per episode: "
            + ", ".join(f"{n} types in {c} episodes" for n, c in sorted(offered.items()))
            + f"; exhaustive: {sum(e.exhaustive for e in episodes)} of {len(episodes)} (unjudged predictions "
            "are not counted)."
        ),
        '- Gold edges by how many ends are a "Speaker N": '
        + ", ".join(f"{n} ends: {speaker_ends[n]}" for n in (0, 1, 2))
        + f". Gold edges other than {ALIAS_TYPE} with a speaker end whose name the same episode's gold "
        f"{ALIAS_TYPE} gives: {aliased}.",
        "- Gold types: " + ", ".join(f"{name} {count}" for name, count in types.most_common()) + ".",
        "",
        "Per gold type, what became of its edges (found / wrong type / reversed / dropped / other name / no pair):",
        "",
        "| gold type | gold edges | " + " | ".join(f"{program}" for _, program in sorted(by_type)) + " |",
        "|---|---:|" + "---:|" * len(by_type),
    ]
    for name, count in types.most_common():
        cells = []
        for key in sorted(by_type):
            c = by_type[key]
            no_pair = sum(c[f"{name}\t{kind}"] for kind in KINDS if kind.startswith("no pair"))
            cells.append(
                " / ".join(
                    str(c[f"{name}\t{kind}"])
                    for kind in (
                        "found",
                        "wrong type",
                        "reversed",
                        "dropped by post-processing",
                        "other name of the same person",
                    )
                )
                + f" / {no_pair}"
            )
        lines.append(f"| {name} | {count} | " + " | ".join(cells) + " |")
    for key in sorted(by_type):
        lines += [
            "",
            f"{key[1]}: types written in the {source} episodes: "
            + ", ".join(f"{name} {n}" for name, n in written[key].most_common())
            + ".",
            "",
            f"{key[1]}: wrong types (gold -> written): "
            + (", ".join(f"{g} -> {p} {n}" for (g, p), n in confusions[key].most_common(12)) or "none")
            + ".",
        ]
        if examples[key]:
            lines += ["", f"{key[1]}: examples of dropped edges and of the other name:", ""]
            lines += [f"- {example}" for example in examples[key]]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_folder_arguments(parser)
    parser.add_argument(
        "--describe", default="dialogre", help="the source whose data is described (default dialogre)"
    )
    parser.add_argument(
        "--replay",
        default="",
        help=f"post-processing options to replay on the benched edges, comma-separated ({', '.join(REPLAYS)})",
    )
    args = parser.parse_args(argv)
    replays = [name for name in args.replay.split(",") if name]
    for name in replays:
        if name not in REPLAYS:
            parser.error(f"--replay: unknown option {name!r}; choose from {', '.join(REPLAYS)}")
    write_report(report(folders_of(args), args.describe, command_line(__file__, argv), replays), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
