"""What `edgewise bench` itself costs per episode, against a mock OpenAI-compatible server that answers at once.

The bench's own overhead is the wall time of `run_bench` minus the time spent inside the programs'
calls (the extraction a user runs anyway): scoring, per-episode records, errors.jsonl and
predictions.jsonl, progress, bootstrap intervals, results.json, the table, the plot and results.html.
With one worker the episodes run one after another, so the program time is the sum of the
per-episode latencies the bench records, and the split below adds up. The program time itself is split into the LM call (DSPy's LM layer, the HTTP client,
the mock's serving, all in this process), DSPy's adapter formatting and parsing (the `default` program
only; `seed` sends fixed messages) and the rest (post-processing, module dispatch).

    python benchmarks/bench_overhead.py                  # 300 episodes, seed and default, median of 3
    python benchmarks/bench_overhead.py --episodes 100 --runs 1 --programs seed
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import edgewise  # noqa: F401  (offline LiteLLM settings first)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import dspy
import mock_openai
from dspy.utils.callback import BaseCallback
from fakes import ScriptedLM
from mock_openai import MockOpenAIServer

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.eval import bench as bench_module
from edgewise.eval import run_bench
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig

GOAL_MS: Final = 3.0
SOURCES: Final = ("alpha", "beta", "gamma")
REPLY: Final = json.dumps(
    {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Ana",
                "targetEntityName": "Acme",
                "fact": "Ana works at Acme.",
                "validAt": "2021-01-01T00:00:00Z",
                "invalidAt": None,
            }
        ]
    }
)


def synthetic_episodes(count: int) -> list[LabeledEpisode]:
    """Episodes the fixed reply half matches, so errors.jsonl and the scorer do real work."""
    episodes = []
    for index in range(count):
        gold = [
            GoldEdge(
                relationship_type="WORKS_AT" if index % 2 == 0 else "FOUNDED",
                source_entity_name="Ana",
                target_entity_name="Acme",
                fact="Ana works at Acme.",
                valid_at=datetime(2021, 1, 1, tzinfo=UTC),
                valid_at_granularity="year",
            ),
            GoldEdge(
                relationship_type="LIVES_IN", source_entity_name="Ana", target_entity_name="Oslo", fact="x"
            ),
        ]
        episodes.append(
            LabeledEpisode(
                id=f"ep-{index:05d}",
                source=SOURCES[index % len(SOURCES)],
                license="CC0-1.0",
                episode_content=f"Episode {index}: Ana has worked at Acme since 2021 and lives in Oslo.",
                entities=[{"name": "Ana"}, {"name": "Acme"}, {"name": "Oslo"}],
                reference_time=datetime(2025, 1, 1, tzinfo=UTC),
                edges=gold,
            )
        )
    return episodes


def _timed_hooks(kind: str) -> tuple[Callable[..., None], Callable[..., None]]:
    """A `BaseCallback` start and end hook pair that times the calls of `kind` (`_Timer._start`/`_end`)."""

    def on_start(self: _Timer, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._start(call_id, kind)

    def on_end(self: _Timer, call_id: str, outputs: Any, exception: BaseException | None = None) -> None:
        self._end(call_id, kind)

    return on_start, on_end


class _Timer(BaseCallback):
    """Seconds spent inside DSPy LM calls and adapter format/parse, summed over all threads.

    DSPy wraps `format` once per adapter class, so a subclass's inherited `format` reports twice,
    nested; only the outermost call of each kind is timed.
    """

    def __init__(self) -> None:
        self._starts: dict[str, tuple[str, float]] = {}
        self._depth = threading.local()
        self._lock = threading.Lock()
        self.totals: dict[str, float] = {"lm": 0.0, "format": 0.0, "parse": 0.0}

    def _start(self, call_id: str, kind: str) -> None:
        depth = getattr(self._depth, kind, 0)
        setattr(self._depth, kind, depth + 1)
        if depth == 0:
            self._starts[call_id] = (kind, time.perf_counter())

    def _end(self, call_id: str, kind: str) -> None:
        setattr(self._depth, kind, getattr(self._depth, kind) - 1)
        started = self._starts.pop(call_id, None)
        if started is not None:
            with self._lock:
                self.totals[kind] += time.perf_counter() - started[1]

    on_lm_start, on_lm_end = _timed_hooks("lm")
    on_adapter_format_start, on_adapter_format_end = _timed_hooks("format")
    on_adapter_parse_start, on_adapter_parse_end = _timed_hooks("parse")


class _TimedServer(MockOpenAIServer):
    """The mock server, adding up the seconds its handler threads spend serving completions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.serve_s = 0.0
        self._serve_lock = threading.Lock()

    def _serve_completion(self, handler: Any, body: dict[str, Any]) -> None:
        started = time.perf_counter()
        super()._serve_completion(handler, body)
        with self._serve_lock:
            self.serve_s += time.perf_counter() - started


def _timed(fn: Callable[..., Any], totals: dict[str, float], key: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[key] = totals.get(key, 0.0) + time.perf_counter() - started

    return wrapper


@contextmanager
def _scripted_lm(config: LMConfig) -> Iterator[ScriptedLM]:
    yield ScriptedLM(lambda messages, kwargs: REPLY, model=config.model)


def measure(
    server: _TimedServer,
    program: str,
    episodes: list[LabeledEpisode],
    workers: int,
    timer: _Timer,
    *,
    scripted: bool = False,
) -> dict[str, float]:
    """One bench run; every figure in milliseconds per episode."""
    n = len(episodes)
    config = LMConfig(model="mock", api_base=server.api_base, num_retries=0)
    factory = _scripted_lm if scripted else None
    reports: dict[str, float] = {}
    originals = bench_module.write_reports, bench_module.write_results_json, bench_module.write_html
    bench_module.write_reports = _timed(originals[0], reports, "reports")
    bench_module.write_results_json = _timed(originals[1], reports, "reports")
    bench_module.write_html = _timed(originals[2], reports, "reports")
    timer.totals = dict.fromkeys(timer.totals, 0.0)
    server.serve_s = 0.0
    try:
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            report = run_bench(
                [config],
                {program: resolve_program(program)},
                episodes,
                workers=workers,
                seed=0,
                out_dir=out,
                progress=False,
                lm_factory=factory,
            )
            wall = time.perf_counter() - started
    finally:
        bench_module.write_reports, bench_module.write_results_json, bench_module.write_html = originals
    (run,) = report.runs
    if run.failed_episodes or run.episodes_done != n:
        raise RuntimeError(f"{program}: {run.failed_episodes} failed episodes: {run.failure_reasons}")
    program_s = sum(episode.latency_s for episode in run.episodes)
    adapter_s = timer.totals["format"] + timer.totals["parse"]
    per_ms = 1000.0 / n
    return {
        "wall": wall * per_ms,
        "program": program_s * per_ms,
        "lm_call": timer.totals["lm"] * per_ms,
        "mock_serve": server.serve_s * per_ms,
        "adapter": adapter_s * per_ms,
        "program_rest": (program_s - timer.totals["lm"] - adapter_s) * per_ms,
        "bench_own": (wall - program_s) * per_ms,
        "bench_reports": reports.get("reports", 0.0) * per_ms,
        "bench_per_episode": (wall - program_s - reports.get("reports", 0.0)) * per_ms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300, help="episodes per bench run (default 300)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per program; the median is shown")
    parser.add_argument(
        "--programs", default="seed,default", help="comma-separated programs (default seed,default)"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="episodes in flight (default 1: the split adds up)"
    )
    parser.add_argument(
        "--lm",
        choices=["mock", "scripted"],
        default="mock",
        help="mock: real HTTP to the mock server (default); scripted: an in-process fake LM, no HTTP at all",
    )
    parser.add_argument(
        "--nagle",
        action="store_true",
        help="leave Nagle's algorithm on in the mock (its header and body writes then wait ~40 ms for a "
        "delayed ACK, which measures TCP, not the bench)",
    )
    args = parser.parse_args()
    # The mock writes headers and body separately; without TCP_NODELAY each reply waits for the
    # client's delayed ACK, as no production server does (uvicorn and llama.cpp set TCP_NODELAY).
    mock_openai._Handler.disable_nagle_algorithm = not args.nagle
    episodes = synthetic_episodes(args.episodes)
    timer = _Timer()
    dspy.configure(callbacks=[timer])
    over_goal = False
    scripted = args.lm == "scripted"
    with _TimedServer(REPLY) as server:
        for program in args.programs.split(","):
            measure(
                server, program, episodes[:20], args.workers, timer, scripted=scripted
            )  # warm-up: imports, first connection
            runs = [
                measure(server, program, episodes, args.workers, timer, scripted=scripted)
                for _ in range(args.runs)
            ]
            median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            over_goal |= median["bench_own"] >= GOAL_MS
            print(
                f"{program} ({args.lm} LM): {args.episodes} episodes, workers {args.workers}, median of {args.runs} runs, ms/episode\n"
                f"  wall                     {median['wall']:7.3f}\n"
                f"  program (extraction)     {median['program']:7.3f}\n"
                f"    LM call (DSPy LM + HTTP client + mock)  {median['lm_call']:7.3f}"
                f"  (mock serving {median['mock_serve']:.3f})\n"
                f"    adapter format + parse                  {median['adapter']:7.3f}\n"
                f"    rest (postprocess, module dispatch)     {median['program_rest']:7.3f}\n"
                f"  bench's own overhead     {median['bench_own']:7.3f}   (goal < {GOAL_MS} ms)\n"
                f"    scoring, records, errors.jsonl, threads, aggregate, bootstrap  "
                f"{median['bench_per_episode']:7.3f}\n"
                f"    report files (results.json, results.md, plot.png, results.html) "
                f"{median['bench_reports']:7.3f}\n"
                f"  bench's own overhead per run: {', '.join(format(run['bench_own'], '.3f') for run in runs)}"
            )
    return 1 if over_goal else 0


if __name__ == "__main__":
    raise SystemExit(main())
