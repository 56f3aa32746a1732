"""`edgewise bench`: every model x program on labeled episodes; a table, results.json, a plot, errors.jsonl."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from edgewise.cli import add_command
from edgewise.cli.options import (
    add_lm_arguments,
    add_no_progress_argument,
    add_open_types_argument,
    config_from_args,
)
from edgewise.data.loader import SPLITS
from edgewise.data.sampling import stratified_sample
from edgewise.domain.errors import UsageError
from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.bench import BenchInterrupted, run_bench
from edgewise.eval.bench_records import BenchReport
from edgewise.eval.report import markdown_table
from edgewise.programs.names import UNCOMPILED, choose_program, resolve_program
from edgewise.runtime.lm import LMConfig

DEFAULT_PROGRAMS: Final = ("seed", UNCOMPILED)
"""Always benched when --programs is not given, before each model's own shipped program."""
DEFAULT_SPLIT: Final = "test"
_REMOTE_WORKERS: Final = 4
_URL_SCHEMES: Final = ("http://", "https://")

HELP = "benchmark models x programs on labeled episodes (edge-F1, tokens, latency, cost)"
DESCRIPTION = """Run each program with each model over labeled episodes and score every episode by edge-F1.

Writes to --out: results.md (the table, also printed on stdout), results.json (every number, per
source and per relationship type, and per episode), plot.png (edge-F1 against tokens per episode,
one point per model x program), errors.jsonl (every missed, spurious, reversed and mistyped edge,
wrong date and wrong attribute, per episode) and results.html (each episode's text with the gold edges and every
program's edges, marked with those verdicts; `edgewise report` rebuilds it). DSPy's response
cache is always off during a bench, so usage and latency are real. An episode whose LM call fails is recorded as failed and the bench goes on;
Ctrl-C writes what is done so far (results.json with "partial": true) and exits with status 130."""

EXAMPLES = """examples:
  edgewise bench --models local --programs seed,default --split smoke
  edgewise bench --models local,local/qwen2.5-coder-0.5b --programs seed,seed-structured,default --split test
  edgewise bench --models openai/gpt-4o-mini,anthropic/claude-3-5-haiku-latest --split test --limit 50
  edgewise bench --models qwen2.5-7b@http://127.0.0.1:8000/v1 --programs default,runs/prog --data my.jsonl
  edgewise bench --programs default --reflexion-rounds 1 --split smoke --out runs/reflexion1
  edgewise bench --programs graphiti-structured,qwen2.5-coder-1.5b-program --baseline graphiti-structured --data runs/results/test-conversational.jsonl --open-vocabulary

--limit draws a seeded sample stratified by source: each source keeps its share of the episodes
(largest remainders get the leftover slots) and the sample keeps file order, so the same file,
--limit and --seed always bench the same episodes in the same order."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "bench", HELP, DESCRIPTION, EXAMPLES)
    parser.add_argument(
        "--models",
        help="comma-separated models: 'local', 'local/<name>', LiteLLM strings, or MODEL@URL for a model "
        "behind its own OpenAI-compatible server (--api-base applies to the others that are not local) "
        "(default: --model, $EDGEWISE_MODEL, else 'local'). "
        "Example: --models local,openai/gpt-4o-mini,qwen@http://127.0.0.1:8000/v1",
    )
    parser.add_argument(
        "--programs",
        help="comma-separated programs: seed (the verbatim seed prompt), seed-structured, graphiti (Graphiti's "
        "edge prompt, rendered by the installed graphiti-core), graphiti-structured, default (the uncompiled "
        "EdgeExtractor), baseline-v1 (the frozen one), or compiled program directories/names (default: "
        f"{','.join(DEFAULT_PROGRAMS)}, and the shipped program compiled for each model, "
        "qwen2.5-coder-1.5b-program-v2 for local). Example: --programs graphiti-structured,baseline-v1,runs/prog",
    )
    parser.add_argument(
        "--baseline",
        help="one of --programs: every other program gets its edge-F1 difference from it on the same model and "
        "episodes, with a paired bootstrap 95%% interval, overall and per source. Example: --baseline default",
    )
    data = parser.add_mutually_exclusive_group()
    data.add_argument(
        "--split",
        choices=SPLITS,
        help=f"a shipped split of labeled episodes (default: {DEFAULT_SPLIT}). Example: --split smoke",
    )
    data.add_argument(
        "--data",
        type=Path,
        help="a labeled JSONL file of your own instead of a shipped split. Example: --data my_episodes.jsonl",
    )
    parser.add_argument(
        "--limit",
        type=int,
        help="bench a seeded, source-stratified sample of this many episodes (default: all). Example: --limit 50",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help=f"episodes in flight at once (default: 1 when a local model is benched, whose server has one "
        f"slot, else {_REMOTE_WORKERS}). Example: --workers 8",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the --limit sample and of the bootstrap intervals (default 0). Example: --seed 7",
    )
    add_open_types_argument(parser)
    parser.add_argument(
        "--open-vocabulary",
        action="store_true",
        help="send every episode without its edgeTypes, as a memory system without a schema does, and add "
        "the alias-aware edge-F1 (a type that is the gold's, an alias, or normalizes alike counts right) and "
        "each run's most written type to the report; gold edges are scored as labeled. "
        "Example: --open-vocabulary",
    )
    parser.add_argument(
        "--withhold-entities",
        action="store_true",
        help="send every episode as text alone, without its entities: edgewise programs run with their "
        "entity step, llama-index and langchain find their own, and seed/graphiti are reported as unable; "
        "adds each run's entity-F1 (on lines marked exhaustiveEntities) and the alias-aware edge-F1 through "
        "the entities it found. Example: --withhold-entities",
    )
    parser.add_argument(
        "--reflexion-rounds",
        type=int,
        help="rounds of missed-fact review for every program (default: each program's own; 0 for default "
        "and seed). Example: --reflexion-rounds 1",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="directory for the reports (default: runs/bench-<UTC timestamp>). Example: --out runs/bench-smoke",
    )
    add_no_progress_argument(parser, bars="bars")  # one bar per model x program
    add_lm_arguments(parser, cache_flag=False)  # a bench always runs with DSPy's cache off
    parser.set_defaults(func=run)


def default_programs(models: Sequence[LMConfig]) -> list[str]:
    """What a bench without --programs runs: seed, default, then each model's shipped program (once)."""
    names = list(DEFAULT_PROGRAMS)
    for config in models:
        name = choose_program(None, config.model).name
        if name not in names:
            names.append(name)
    return names


def split_list(value: str, flag: str) -> list[str]:
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{flag} is empty; give a comma-separated list")
    return items


def parse_models(spec: str, base: LMConfig) -> list[LMConfig]:
    """`--models` entries as configs: `MODEL@URL` gets its own api base; others share `base.api_base`.

    Only a suffix that starts with http:// or https:// is read as a URL, so model names that contain
    `@` (Vertex AI's `claude-3-5-sonnet@20240620`) stay whole. Local models never take an api base.
    """
    configs: list[LMConfig] = []
    for entry in split_list(spec, "--models"):
        model, api_base = entry, base.api_base
        head, at, tail = entry.rpartition("@")
        if at and tail.startswith(_URL_SCHEMES):
            if not head:
                raise UsageError(f"--models entry {entry!r} has a URL but no model name before '@'")
            model, api_base = head, tail
        config = base.model_copy(update={"model": model, "cache": False})
        config = config.model_copy(update={"api_base": None if config.is_local else api_base})
        configs.append(config)
    return configs


def read_episodes(split: str | None, data: Path | None) -> list[LabeledEpisode]:
    """The labeled episodes of `--data` or `--split`, validated by the data loader."""
    from edgewise.data.loader import load_episodes

    return load_episodes(data if data is not None else (split or DEFAULT_SPLIT))


def default_out_dir() -> Path:
    return Path("runs") / f"bench-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def _print_report(report: BenchReport, out_dir: Path) -> None:
    sys.stdout.write(markdown_table(report))
    sys.stdout.flush()
    written = ", ".join(
        name
        for name in ("results.md", "results.json", "plot.png", "results.html", "errors.jsonl")
        if (out_dir / name).exists()
    )
    state = "partial results" if report.partial else "results"
    print(f"edgewise bench: {state} in {out_dir}: {written}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be >= 1")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be >= 1")
    if args.reflexion_rounds is not None and args.reflexion_rounds < 0:
        raise UsageError("--reflexion-rounds must be >= 0")
    base = config_from_args(args)
    models = parse_models(args.models or base.model, base)
    names = split_list(args.programs, "--programs") if args.programs is not None else default_programs(models)
    if args.baseline is not None and args.baseline not in names:
        raise UsageError(f"--baseline {args.baseline!r} must be one of --programs ({', '.join(names)})")
    programs = {
        spec: resolve_program(spec, reflexion_rounds=args.reflexion_rounds, open_types=args.open_types)
        for spec in names
    }
    episodes: Sequence[LabeledEpisode] = read_episodes(args.split, args.data)
    if args.limit is not None:
        episodes = stratified_sample(episodes, args.limit, args.seed)
    workers = args.workers or (1 if any(config.is_local for config in models) else _REMOTE_WORKERS)
    out_dir = args.out or default_out_dir()
    try:
        report = run_bench(
            models,
            programs,
            episodes,
            workers=workers,
            seed=args.seed,
            out_dir=out_dir,
            reflexion_rounds=args.reflexion_rounds,
            open_types=args.open_types,
            progress=not args.no_progress,
            baseline=args.baseline,
            open_vocabulary=args.open_vocabulary,
            withhold_entities=args.withhold_entities,
        )
    except BenchInterrupted as interrupted:
        _print_report(interrupted.report, out_dir)
        return 130
    _print_report(report, out_dir)
    return 0 if any(run.scores is not None for run in report.runs) else 1
