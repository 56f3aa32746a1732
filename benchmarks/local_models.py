"""Benchmark of the local models: assembly, server start, speed, memory and parse failures per model.

For each local model it assembles the file into a fresh temporary cache (cold) and again (warm),
starts llama-server, and runs `EdgeExtractor` over the example episodes twice: with
`response_format` json_schema (constrained decoding, the default for local models) and without it
(free text that must still parse as JSON). Token rates come from llama-server's own /metrics
counters; peak RSS from /proc. It prints a Markdown table and writes it to
benchmarks/results/local_models.md.

    python benchmarks/local_models.py                       # all three models, 10 example episodes
    python benchmarks/local_models.py --models qwen2.5-coder-0.5b --limit 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from harness import progress

from edgewise.local.local_models import MODELS, LocalModelSpec, ensure_model_file, missing_parts
from edgewise.local.local_server import LocalServer, default_threads, peak_rss_bytes

ROOT: Final = Path(__file__).resolve().parents[1]
DEFAULT_EPISODES: Final = ROOT / "data" / "examples" / "episodes.jsonl"
DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "local_models.md"
MODES: Final = ("json_schema", "none")
_OPENER: Final = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_METRICS: Final = (
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_seconds_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:tokens_predicted_seconds_total",
)


@dataclass
class ModeRun:
    """One pass over the episodes with one response_format setting."""

    seconds: list[float] = field(default_factory=list)
    parse_failed_episodes: int = 0
    errors: list[str] = field(default_factory=list)
    edges: int = 0
    calls: int = 0
    truncated: int = 0
    counters: dict[str, float] = field(default_factory=dict)
    scores: list[object] = field(default_factory=list)

    def rate(self, tokens: str, seconds: str) -> float | None:
        spent = self.counters.get(seconds, 0.0)
        return self.counters.get(tokens, 0.0) / spent if spent > 0 else None


@dataclass
class ModelRun:
    """Everything measured for one model."""

    spec: LocalModelSpec
    assemble_cold_s: float = 0.0
    assemble_warm_s: float = 0.0
    start_s: float = 0.0
    peak_rss: int | None = None
    modes: dict[str, ModeRun] = field(default_factory=dict)


def load_episodes(path: Path, limit: int) -> tuple[list[object], list[object | None]]:
    """Episodes to extract, and their gold (a `LabeledEpisode`) where the line carries gold edges."""
    from edgewise.domain.episode import Episode
    from edgewise.domain.gold import LabeledEpisode

    episodes: list[object] = []
    gold: list[object | None] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        data = json.loads(line)
        if "edges" in data:
            labeled = LabeledEpisode.model_validate(data)
            episodes.append(labeled.episode())
            gold.append(labeled)
        else:
            fields = {key: value for key, value in data.items() if key != "id"}
            try:
                episodes.append(Episode.model_validate(fields))
            except ValueError as error:
                raise SystemExit(f"{path} line {number}: {error}") from error
            gold.append(None)
        if len(episodes) >= limit:
            break
    return episodes, gold


def run_mode(
    server: LocalServer,
    episodes: list[object],
    gold: list[object | None],
    mode: str,
    max_tokens: int,
    *,
    quiet: bool = False,
) -> ModeRun:
    """Extract every episode once with one response_format setting, timing each."""
    import dspy
    from dspy.utils.exceptions import AdapterParseError

    from edgewise.eval import score_episode
    from edgewise.modules.extractor import EdgeExtractor
    from edgewise.runtime.lm import LMConfig, build_lm, lm_context

    config = LMConfig(
        model=f"openai/{server.model_name}",
        api_base=server.api_base,
        api_key="local",
        cache=False,
        max_tokens=max_tokens,
        response_format=mode,  # type: ignore[arg-type]
    )
    run = ModeRun()
    extractor = EdgeExtractor()
    lm = build_lm(config)
    before = server.metrics()
    with lm_context(lm), dspy.track_usage() as tracker:
        for index, (episode, labeled) in enumerate(zip(episodes, gold, strict=True), start=1):
            started = time.monotonic()
            try:
                result = extractor(episode).result
            except AdapterParseError:
                run.parse_failed_episodes += 1
                run.seconds.append(time.monotonic() - started)
                continue
            except Exception as error:  # noqa: BLE001 (a benchmark reports failures instead of stopping)
                run.errors.append(f"episode {index}: {type(error).__name__}: {str(error)[:200]}")
                continue
            run.seconds.append(time.monotonic() - started)
            run.parse_failed_episodes += int(result.parse_failures > 0)
            run.edges += len(result.edges)
            if labeled is not None:
                run.scores.append(score_episode(labeled, result.edges))  # type: ignore[arg-type]
            if quiet:
                continue
            progress(
                f"  {server.model_name} {mode:11} episode {index}/{len(episodes)}: {run.seconds[-1]:.1f} s, "
                f"{len(result.edges)} edges, parse failures {result.parse_failures}",
            )
    after = server.metrics()
    completions = [
        int(entry.get("completion_tokens") or 0)
        for entries in tracker.usage_data.values()
        for entry in entries
    ]
    run.calls = len(completions)
    run.truncated = sum(tokens >= max_tokens for tokens in completions)
    run.counters = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in _METRICS}
    return run


def bench_model(
    spec: LocalModelSpec, episodes: list[object], gold: list[object | None], args: argparse.Namespace
) -> ModelRun:
    """Assemble cold and warm into a temporary cache, then serve and run both modes."""
    measured = ModelRun(spec)
    with tempfile.TemporaryDirectory(prefix="edgewise-bench-") as temp:
        cache = Path(temp)
        started = time.monotonic()
        ensure_model_file(spec, cache)
        measured.assemble_cold_s = time.monotonic() - started
        started = time.monotonic()
        ensure_model_file(spec, cache)
        measured.assemble_warm_s = time.monotonic() - started
        progress(f"{spec.name}: assembled in {measured.assemble_cold_s:.1f} s")
        server = LocalServer(
            spec,
            threads=args.threads,
            server_binary=args.server_binary,
            cache_dir=cache,
            extra_args=("--metrics",),
        )
        with server:
            measured.start_s = server.start_seconds or 0.0
            progress(f"{spec.name}: server healthy after {measured.start_s:.2f} s")
            # One unmeasured extraction puts the shared instructions into llama-server's prompt cache,
            # so that the first measured pass does not pay for them alone.
            warm_up = episodes[0].model_copy(update={"episode_content": "A short note with no facts."})  # type: ignore[attr-defined]
            run_mode(server, [warm_up], [None], "json_schema", args.max_tokens, quiet=True)
            for mode in MODES:
                measured.modes[mode] = run_mode(server, episodes, gold, mode, args.max_tokens)
            measured.peak_rss = peak_rss_bytes(server.pid)
    return measured


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _cut(run: ModeRun) -> str:
    return f"{run.truncated}/{run.calls}"


def _edge_f1(run: ModeRun) -> str:
    if not run.scores:
        return "n/a"
    from edgewise.eval import aggregate

    return f"{aggregate(run.scores).edge_f1:.2f}"  # type: ignore[arg-type]


def markdown(runs: list[ModelRun], episodes: int, source: str, args: argparse.Namespace, binary: str) -> str:
    """The results table plus the conditions it was measured under."""

    def failures(mode: ModeRun) -> str:
        text = f"{mode.parse_failed_episodes}/{episodes}"
        return text + (f" (+{len(mode.errors)} errors)" if mode.errors else "")

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    prompt_rate = ("llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total")
    gen_rate = ("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")
    metrics: list[tuple[str, Callable[[ModelRun], str]]] = [
        ("assemble, cold (s)", lambda run: _fmt(run.assemble_cold_s)),
        ("assemble, warm (s)", lambda run: _fmt(run.assemble_warm_s, 3)),
        ("server start to healthy (s)", lambda run: _fmt(run.start_s, 2)),
        ("prompt tokens/s", lambda run: _fmt(run.modes["json_schema"].rate(*prompt_rate), 0)),
        ("generation tokens/s", lambda run: _fmt(run.modes["json_schema"].rate(*gen_rate), 0)),
        ("s/episode, json_schema (median)", lambda run: _fmt(median(run.modes["json_schema"].seconds))),
        ("s/episode, free text (median)", lambda run: _fmt(median(run.modes["none"].seconds))),
        ("peak RSS of llama-server (MB)", lambda run: _fmt(run.peak_rss / 1e6 if run.peak_rss else None, 0)),
        ("episodes with a parse failure, json_schema", lambda run: failures(run.modes["json_schema"])),
        ("episodes with a parse failure, free text", lambda run: failures(run.modes["none"])),
        ("replies cut at max_tokens, json_schema", lambda run: _cut(run.modes["json_schema"])),
        ("replies cut at max_tokens, free text", lambda run: _cut(run.modes["none"])),
        ("edges returned, json_schema", lambda run: str(run.modes["json_schema"].edges)),
        ("edges returned, free text", lambda run: str(run.modes["none"].edges)),
    ]
    if any(mode.scores for run in runs for mode in run.modes.values()):
        metrics.append(("edge-F1, json_schema", lambda run: _edge_f1(run.modes["json_schema"])))
        metrics.append(("edge-F1, free text", lambda run: _edge_f1(run.modes["none"])))
    lines = [
        "| | " + " | ".join(f"local/{run.spec.name}" for run in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]
    lines += [f"| {label} | " + " | ".join(cell(run) for run in runs) + " |" for label, cell in metrics]
    threads = args.threads or default_threads()
    notes = [
        "",
        (
            f"Measured {datetime.now(UTC).strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores "
            f"({platform.machine()}), llama-server {binary}, {threads} threads, one slot, temperature 0, "
            f"max_tokens {args.max_tokens}, `EdgeExtractor()` (no reflexion round), {episodes} episodes from {source}, "
            "after one unmeasured warm-up extraction."
        ),
        (
            "s/episode: median wall time of one extraction; token rates from llama-server's /metrics counters "
            "over the json_schema pass (prompt tokens exclude the prefix reused from llama-server's cache); "
            "parse failures: episodes with at least one reply that did not parse (DSPy's JSONAdapter parses "
            "tolerantly); cut at max_tokens: replies that hit the token limit / all replies; "
            "assemble cold: joining the parts into an empty cache folder (parts already in the page cache)."
        ),
    ]
    for run in runs:
        for mode_name, mode in run.modes.items():
            for error in mode.errors:
                notes.append(f"- local/{run.spec.name} {mode_name}: {error}")
    return "\n".join(lines + notes) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated registry names")
    parser.add_argument("--episodes", type=Path, default=DEFAULT_EPISODES, help="episodes JSONL")
    parser.add_argument("--limit", type=int, default=10, help="episodes to run (default 10)")
    parser.add_argument(
        "--threads", type=int, default=None, help="llama-server threads (default: cores, max 8)"
    )
    parser.add_argument("--server-binary", default=None, help="llama-server to run")
    parser.add_argument("--max-tokens", type=int, default=2048, help="reply token limit (edgewise's default)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the Markdown table")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import edgewise.runtime.offline  # noqa: F401  (no network fetch of LiteLLM's price map)
    from edgewise.local.local_server import find_server_binary

    episodes, gold = load_episodes(args.episodes, args.limit)
    source = str(args.episodes.relative_to(ROOT) if args.episodes.is_relative_to(ROOT) else args.episodes)
    binary = find_server_binary(args.server_binary)
    runs = []
    for name in args.models.split(","):
        spec = MODELS[name.strip()]
        if missing_parts(spec):
            print(f"skipping {spec.name}: not installed ({spec.install_command})", file=sys.stderr)
            continue
        runs.append(bench_model(spec, episodes, gold, args))
    table = markdown(runs, len(episodes), source, args, f"from {binary.source}")
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("# Local models\n\n" + table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
