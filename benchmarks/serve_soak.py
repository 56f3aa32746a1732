# Over 400 lines: one script driving three workloads through the same rounds and table.
"""Memory under sustained load: `edgewise serve`, `edgewise extract` and one Ray actor, round after round.

Each checkout given with `--repo` (this one by default; several set trees side by side, each run with
the python of its own `.venv`) runs three times against the mock OpenAI-compatible server
(tests/mock_openai.py) in a process of its own on 127.0.0.1. The mock injects a fault into a share
`--fault-rate` of the requests it gets, uniformly among 500, 429 with Retry-After, a reply slower than
the client's timeout, a dropped connection and a 200 whose body is not JSON; a retry is a new draw.

- serve: `edgewise serve --workers W` in its own process (EDGEWISE_API_TOKEN set); `--warmup-rounds`
  rounds that are not measured, then `--rounds` rounds of `--requests` POST /v1/extract from
  `--concurrency` clients (httpx, one kept-alive connection each), a share `--malformed` of them with
  a malformed body (not JSON, no entities, a bad time, wrong types: each must get its 422). After each
  round: the server's resident memory (RSS), requests answered per second, p50/p99 latency, statuses,
  the faults the mock injected.
- extract: `edgewise extract` over `--episodes` JSONL lines (a share `--malformed` of them not a valid
  episode), the process's RSS sampled every `--sample-every` output lines.
- ray: the same input through `edgewise extract --engine ray --actors 1`, the actor's RSS sampled the
  same way.

Every episode names a guest of its own among its entities, so that no two requests share a
vocabulary or a cache entry; the mock's reply links Alice and Acme, whom every episode lists. DSPy's
cache is on, as `edgewise serve` runs by default (`--no-cache` turns it off), in a fresh folder per
run. A batch's output is read back: one record per input line, ids in input order.

    nice -n 19 python benchmarks/serve_soak.py                      # this checkout, the issue's setup
    nice -n 19 python benchmarks/serve_soak.py --repo ../before --repo .     # before and after
    python benchmarks/serve_soak.py --rounds 2 --requests 300 --episodes 2000 --out /tmp/soak.md
    python benchmarks/serve_soak.py --repo . --out /tmp/after/soak.md      # one tree at a time, then
    python benchmarks/serve_soak.py --from-json /tmp/before/soak.json --from-json /tmp/after/soak.json

The exit status is 1 when a batch lost or reordered a line, or the last checkout misses a goal:
serve's RSS grows by 20 MB or more over the measured rounds, or its requests/s vary by more than
15% across them; a batch's RSS at its last line is more than 30 MB from its RSS a tenth of the way in
(line 2,000 of 20,000).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
from harness import (
    HOST,
    ROOT,
    SEED_REPLY,
    free_port,
    id_checks,
    mock_process,
    percentile,
    progress,
    read_records,
    rss_mb,
    script_parser,
    stop_process,
    wait_healthy,
)

sys.path.insert(0, str(ROOT / "tests"))
from ray_processes import stage_actor_pids

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "serve_soak.md"
TOKEN: Final = "soak-token-0123456789"  # edgewise serve refuses a token under 16 characters
SERVE_GROWTH_MB: Final = 20.0
SERVE_RATE_SPREAD: Final = 0.15
BATCH_GROWTH_MB: Final = 30.0
# A batch's memory is compared with its memory a tenth of the way in: line 2,000 of 20,000.
BATCH_BASE_SHARE: Final = 0.1
POLL_S: Final = 0.02
ENGINES: Final = ("extract", "ray")


def episode(number: int) -> dict[str, Any]:
    """Episode `number`: the seed's context object with a guest of its own, so its vocabulary is new."""
    guest = f"Guest {number}"
    return {
        "id": f"ep-{number:06d}",
        "episodeContent": f"Alice joined Acme as CTO in March 2024. {guest} congratulated her.",
        "previousEpisodes": ["Alice was looking for a job."],
        "nodes": [
            {"name": "Alice", "type": "Person"},
            {"name": "Acme", "type": "Organization"},
            {"name": guest, "type": "Person"},
        ],
        "referenceTime": "2025-04-30T10:00:00Z",
        "edgeTypes": {"WORKS_AT": "a person is employed by an organization"},
        "customPrompt": "",
    }


def malformed(number: int) -> bytes:
    """A body (or JSONL line) that is not a valid episode, one of five kinds in turn."""
    good = episode(number)
    kinds = [
        b'{"episodeContent": "Alice joined Acme.", "nodes": [',
        json.dumps({key: value for key, value in good.items() if key != "nodes"}).encode(),
        json.dumps({**good, "referenceTime": "sometime last week"}).encode(),
        json.dumps({**good, "episodeContent": 42}).encode(),
        json.dumps({**good, "nodes": 7}).encode(),
    ]
    return kinds[number % len(kinds)]


def is_malformed(number: int, share: float, seed: int) -> bool:
    return random.Random(f"{seed}:{number}").random() < share


# ---------------------------------------------------------------------------------------------------
# serve


@dataclass
class Round:
    """One round of requests and what the server looked like after it."""

    name: str
    requests: int
    wall_s: float
    latencies_ms: list[float]
    statuses: Counter[str]
    faults: dict[str, int]
    rss_mb: float | None

    @property
    def rate(self) -> float:
        return self.requests / self.wall_s

    def figures(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "requests": self.requests,
            "wall_s": self.wall_s,
            "requests_per_s": self.rate,
            "p50_ms": percentile(self.latencies_ms, 0.50),
            "p99_ms": percentile(self.latencies_ms, 0.99),
            "statuses": dict(sorted(self.statuses.items())),
            "faults": self.faults,
            "rss_mb": self.rss_mb,
        }


async def post_all(
    base: str, bodies: list[tuple[bytes, bool]], concurrency: int
) -> tuple[list[float], Counter[str]]:
    """Post every body from `concurrency` clients; the latency of each answer and the count of each outcome."""
    queue: asyncio.Queue[tuple[bytes, bool]] = asyncio.Queue()
    for item in bodies:
        queue.put_nowait(item)
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=120.0, headers=headers) as client:
            while not queue.empty():
                body, bad = queue.get_nowait()
                started = time.perf_counter()
                try:
                    response = await client.post("/v1/extract", content=body)
                except httpx.HTTPError as error:
                    statuses[f"transport {type(error).__name__}"] += 1
                    continue
                latencies.append((time.perf_counter() - started) * 1000)
                statuses[outcome(response, bad)] += 1

    await asyncio.gather(*(client_loop() for _ in range(concurrency)))
    return latencies, statuses


def outcome(response: httpx.Response, bad: bool) -> str:
    """The status, or what was wrong with an answer: a 422 for a good body, a 200 without the edge."""
    if bad:
        return "422" if response.status_code == 422 else f"{response.status_code} for a malformed body"
    if response.status_code == 200:
        edges = [(edge["sourceEntityName"], edge["targetEntityName"]) for edge in response.json()["edges"]]
        return "200" if edges == [("Alice", "Acme")] else "200 without the edge"
    return str(response.status_code) if response.status_code != 422 else "422 for a good body"


def serve_args(args: argparse.Namespace, port: int | str, api_base: str) -> list[str]:
    return [
        "serve", "--host", HOST, "--port", str(port), "--workers", str(args.workers),
        "--model", "openai/mock", "--api-base", api_base, "--timeout", f"{args.timeout:g}",
        "--log-level", "warning", *(["--no-cache"] if args.no_cache else []),
    ]  # fmt: skip


def soak_serve(args: argparse.Namespace, python: Path, folder: Path) -> dict[str, Any]:
    log_path = folder / "serve.log"
    env = os.environ | {"EDGEWISE_API_TOKEN": TOKEN, "EDGEWISE_CACHE": str(folder / "cache-serve")}
    with (
        mock_process(SEED_REPLY, **mock_settings(args)) as mock,
        open(log_path, "wb") as log,
    ):
        port = free_port()
        serve = subprocess.Popen(
            [str(python), "-m", "edgewise", *serve_args(args, port, mock.api_base)],
            stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=folder,
        )  # fmt: skip
        try:
            base = f"http://{HOST}:{port}"
            asyncio.run(wait_healthy(base, 120.0))
            mock.take_fault_counts()
            started_rss = rss_mb(serve.pid)
            rounds: list[Round] = []
            number = 0
            for index in range(args.warmup_rounds + args.rounds):
                bodies = []
                for _ in range(args.requests):
                    bad = is_malformed(number, args.malformed, args.seed)
                    bodies.append((malformed(number) if bad else json.dumps(episode(number)).encode(), bad))
                    number += 1
                started = time.monotonic()
                latencies, statuses = asyncio.run(post_all(base, bodies, args.concurrency))
                wall_s = time.monotonic() - started
                warm = index < args.warmup_rounds
                name = f"warm-up {index + 1}" if warm else str(index - args.warmup_rounds + 1)
                done = Round(
                    name,
                    len(bodies),
                    wall_s,
                    latencies,
                    statuses,
                    mock.take_fault_counts(),
                    rss_mb(serve.pid),
                )
                rounds.append(done)
                progress(
                    f"  serve round {name}: {done.rate:.1f} requests/s, RSS {done.rss_mb:.1f} MB, {dict(statuses)}"
                )
        finally:
            stop_process(serve)
    text = log_path.read_text(errors="replace")
    return {
        "command": "edgewise " + " ".join(serve_args(args, "PORT", "http://127.0.0.1:MOCK_PORT/v1")),
        "started_rss_mb": started_rss,
        "rounds": [done.figures() for done in rounds],
        "warmup_rounds": args.warmup_rounds,
        "log_tracebacks": text.count("Traceback"),
        "log_lines": len(text.splitlines()),
    }


def mock_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "fault_rate": args.fault_rate,
        "seed": args.seed,
        "retry_after": args.retry_after,
        "slow_seconds": args.slow_seconds,
    }


# ---------------------------------------------------------------------------------------------------
# extract and the Ray actor


def write_input(path: Path, args: argparse.Namespace) -> list[str | None]:
    """The batch's JSONL input; returns the id each output record must carry, in order (None: no id)."""
    ids: list[str | None] = []
    with open(path, "wb") as handle:
        for number in range(args.episodes):
            bad = is_malformed(number, args.malformed, args.seed)
            line = malformed(number) if bad else json.dumps(episode(number)).encode()
            handle.write(line + b"\n")
            try:
                ids.append(json.loads(line).get("id"))
            except ValueError:  # a line that is not JSON has no id to keep
                ids.append(None)
    return ids


def extract_args(args: argparse.Namespace, engine: str, source: str, output: str, api_base: str) -> list[str]:
    return [
        "extract", "--input", source, "--output", output, "--model", "openai/mock", "--api-base", api_base,
        "--workers", str(args.workers), "--timeout", f"{args.timeout:g}", "--no-progress",
        *(["--no-cache"] if args.no_cache else []),
        *(["--engine", "ray", "--actors", "1"] if engine == "ray" else []),
    ]  # fmt: skip


@dataclass
class Sampler:
    """Lines the batch has written and the measured process's memory, read every POLL_S seconds."""

    journal: Path
    lines: int = 0
    read_bytes: int = 0
    samples: list[dict[str, float]] = field(default_factory=list)

    def count_lines(self) -> int:
        try:
            with open(self.journal, "rb") as handle:
                handle.seek(self.read_bytes)
                chunk = handle.read()
        except OSError:
            return self.lines
        self.read_bytes += len(chunk)
        self.lines += chunk.count(b"\n")
        return self.lines

    def sample(self, pid: int, started: float) -> None:
        rss = rss_mb(pid)
        if rss is not None:
            self.samples.append({"lines": self.count_lines(), "rss_mb": rss, "s": time.monotonic() - started})


def soak_batch(
    args: argparse.Namespace, python: Path, folder: Path, engine: str, source: Path, ids: list[str | None]
) -> dict[str, Any]:
    output = folder / f"out-{engine}.jsonl"
    env = os.environ | {"EDGEWISE_CACHE": str(folder / f"cache-{engine}")}
    # The local engine appends to --output itself; the Ray engine journals to OUTPUT.partial, renamed at the end.
    sampler = Sampler(output if engine == "extract" else output.with_name(output.name + ".partial"))
    with mock_process(SEED_REPLY, **mock_settings(args)) as mock, open(folder / f"{engine}.log", "wb") as log:
        command = [
            str(python),
            "-m",
            "edgewise",
            *extract_args(args, engine, str(source), str(output), mock.api_base),
        ]
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=folder)
        try:
            measured: int | None = None if engine == "ray" else process.pid
            while process.poll() is None:
                if time.monotonic() - started > args.limit_s:
                    raise SystemExit(f"{engine} ran past --limit-s {args.limit_s:g} s")
                if measured is None:
                    actors = stage_actor_pids(process.pid)
                    measured = actors[0] if actors else None
                if measured is not None:
                    sampler.sample(measured, started)
                time.sleep(POLL_S)
        finally:
            stop_process(process)
        wall_s = time.monotonic() - started
        faults = mock.take_fault_counts()
    if process.returncode not in (0, 2):  # 2: the run ended, some lines failed (the malformed ones at least)
        tail = (folder / f"{engine}.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{tail}")
    return {
        "command": "edgewise "
        + " ".join(extract_args(args, engine, "in.jsonl", "out.jsonl", "http://127.0.0.1:MOCK_PORT/v1")),
        "measured": "the actor's process" if engine == "ray" else "the extract process",
        "wall_s": wall_s,
        "exit_status": process.returncode,
        "marks": marks(sampler.samples, args.sample_every, args.episodes),
        "base_line": base_line(args.episodes, args.sample_every),
        "faults": faults,
        "output": read_output(output, ids),
    }


def base_line(episodes: int, every: int) -> int:
    """The line a batch's memory is compared from: the first sampled line past a tenth of the batch."""
    return max(every, -(-int(episodes * BATCH_BASE_SHARE) // every) * every)


def marks(samples: list[dict[str, float]], every: int, total: int) -> list[dict[str, float]]:
    """For each multiple of `every` up to `total`: the first sample taken at or after that many lines (the
    last sample, if the process ended before one was taken at the last mark)."""
    found = []
    for mark in range(every, total + 1, every):
        at = next((sample for sample in samples if sample["lines"] >= mark), None)
        if at is None and mark == total and samples:
            at = samples[-1]
        if at is not None:
            found.append({"mark": mark, **at})
    return found


def read_output(path: Path, ids: list[str | None]) -> dict[str, Any]:
    """What the batch wrote: records, results, failures by reason, and the batch contract read back
    (a line that is not JSON has no id; every other record keeps its line's id)."""
    records = read_records(path)
    named = id_checks([record for record in records if record.get("id") is not None], [i for i in ids if i])
    return {
        "lines": len(records),
        "results": sum(1 for record in records if "edges" in record),
        "failed": dict(
            sorted(Counter(record["error"]["reason"] for record in records if "error" in record).items())
        ),
        "lost": named["lost"],
        "duplicated": named["duplicated"],
        "in_order": [record.get("id") for record in records] == ids,
    }


# ---------------------------------------------------------------------------------------------------
# one checkout, the checks, the report


def checkout_python(repo: Path) -> Path:
    """The python that runs `repo`'s edgewise: its `.venv`'s (this script's own for this checkout), as
    an absolute path (the runs start in a folder of their own); the venv's link is kept, not resolved."""
    venv = (repo / ".venv" / "bin" / "python").absolute()
    if venv.exists():
        return venv
    if repo.resolve() == ROOT:
        return Path(sys.executable)
    raise SystemExit(f"{repo} has no .venv/bin/python: make one there (pip install -e '.[serve,ray]')")


def commit_of(repo: Path) -> str:
    """The checkout's commit (hash and subject), and whether its tracked files differ from it."""

    def git(*argv: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *argv], check=False, capture_output=True, text=True
        ).stdout

    changed = git("status", "--porcelain", "--untracked-files=no").strip()
    return (git("log", "-1", "--format=%h %s").strip() or "unknown") + (
        " (with uncommitted changes)" if changed else ""
    )


def soak_checkout(args: argparse.Namespace, repo: Path) -> dict[str, Any]:
    python = checkout_python(repo)
    result: dict[str, Any] = {"repo": str(repo), "commit": commit_of(repo), "python": str(python)}
    with tempfile.TemporaryDirectory(prefix="edgewise-soak-") as name:
        folder = Path(name)
        if "serve" in args.only:
            progress(f"{repo}: serve")
            result["serve"] = soak_serve(args, python, folder)
        source = folder / "in.jsonl"
        ids = write_input(source, args) if set(args.only) & set(ENGINES) else []
        for engine in ENGINES:
            if engine in args.only:
                progress(f"{repo}: {engine} over {args.episodes} lines")
                run = soak_batch(args, python, folder, engine, source, ids)
                result[engine] = run
                progress(
                    f"  {engine}: {run['wall_s']:.0f} s, {run['marks'][-1] if run['marks'] else 'no samples'}"
                )
    result["checks"] = checks(result)
    return result


def checks(result: dict[str, Any]) -> dict[str, Any]:
    """The goals, read from one checkout's figures (None where that run was not made)."""
    found: dict[str, Any] = {}
    serve = result.get("serve")
    if serve:
        warm = (
            serve["rounds"][serve["warmup_rounds"] - 1]["rss_mb"]
            if serve["warmup_rounds"]
            else serve["started_rss_mb"]
        )
        measured = serve["rounds"][serve["warmup_rounds"] :]
        rates = [done["requests_per_s"] for done in measured]
        found["serve_growth_mb"] = measured[-1]["rss_mb"] - warm
        found["serve_rate_spread"] = (max(rates) - min(rates)) / max(rates)
        found["serve_ok"] = (
            found["serve_growth_mb"] < SERVE_GROWTH_MB and found["serve_rate_spread"] <= SERVE_RATE_SPREAD
        )
    for engine in ENGINES:
        run = result.get(engine)
        if not run:
            continue
        base = next((mark for mark in run["marks"] if mark["mark"] == run["base_line"]), None)
        last = run["marks"][-1] if run["marks"] else None
        growth = last["rss_mb"] - base["rss_mb"] if base and last else None
        output = run["output"]
        found[f"{engine}_growth_mb"] = growth
        found[f"{engine}_ok"] = growth is not None and abs(growth) <= BATCH_GROWTH_MB
        found[f"{engine}_kept_every_line"] = (
            output["lost"] == 0 and output["duplicated"] == 0 and output["in_order"]
        )
    return found


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _label(result: dict[str, Any]) -> str:
    return f"`{result['repo']}` ({result['commit'].split()[0]})"


def serve_table(serve: dict[str, Any]) -> str:
    kinds = ("200", "422", "502", "503")
    rows = [
        "| after round | requests | requests/s | p50 ms | p99 ms | "
        + " | ".join(kinds)
        + " | other | faults injected | RSS MB |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(kinds) + "---|---:|---:|",
        f"| start | | | | | {' | ' * len(kinds)} | | {_mb(serve['started_rss_mb'])} |",
    ]
    for done in serve["rounds"]:
        statuses = done["statuses"]
        other = ", ".join(f"{name} {count}" for name, count in statuses.items() if name not in kinds) or "0"
        faults = sum(count for kind, count in done["faults"].items() if kind != "none")
        sent = sum(done["faults"].values())
        rows.append(
            f"| {done['name']} | {done['requests']} | {done['requests_per_s']:.1f} | {done['p50_ms']:.0f} | "
            f"{done['p99_ms']:.0f} | "
            + " | ".join(str(statuses.get(kind, 0)) for kind in kinds)
            + f" | {other} | {faults} of {sent} | {_mb(done['rss_mb'])} |"
        )
    return "\n".join(rows)


def batch_table(results: list[dict[str, Any]]) -> str:
    columns = [(result, engine) for result in results for engine in ENGINES if result.get(engine)]
    if not columns:
        return ""
    head = "| after line | " + " | ".join(f"{engine}, {_label(result)}" for result, engine in columns) + " |"
    rows = [head, "|---:|" + "---:|" * len(columns)]
    marks_of = [{mark["mark"]: mark for mark in result[engine]["marks"]} for result, engine in columns]
    for mark in sorted({mark for found in marks_of for mark in found}):
        cells = []
        for found in marks_of:
            at = found.get(mark)
            shown = "-" if at is None else f"{at['rss_mb']:.1f}"
            if at is not None and at["lines"] != mark:
                shown += f" (at line {int(at['lines'])})"
            cells.append(shown)
        rows.append(f"| {mark} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def summary_table(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    def cell(result: dict[str, Any], key: str, kind: str) -> str:
        value = result["checks"].get(key)
        if value is None:
            return "-"
        if kind == "share":
            return f"{value:.0%}"
        if kind == "flag":
            return "yes" if value else "**NO**"
        return f"{value:+.1f} MB"

    since = f"RSS at line {args.episodes:,} minus at line {base_line(args.episodes, args.sample_every):,}"
    batch_goal = f"(goal within {BATCH_GROWTH_MB:g} MB)"
    figures = [
        (
            f"serve: RSS growth over the {args.rounds} rounds after warm-up (goal < {SERVE_GROWTH_MB:g} MB)",
            "serve_growth_mb",
            "mb",
        ),
        (
            f"serve: requests/s spread across them (goal within {SERVE_RATE_SPREAD:.0%})",
            "serve_rate_spread",
            "share",
        ),
        (f"extract: {since} {batch_goal}", "extract_growth_mb", "mb"),
        ("extract: one record per line, ids in input order", "extract_kept_every_line", "flag"),
        (f"Ray actor: {since} {batch_goal}", "ray_growth_mb", "mb"),
        ("Ray: one record per line, ids in input order", "ray_kept_every_line", "flag"),
    ]
    rows = [
        "| figure | " + " | ".join(_label(result) for result in results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    for text, key, kind in figures:
        rows.append(f"| {text} | " + " | ".join(cell(result, key, kind) for result in results) + " |")
    return "\n".join(rows)


def command_line(argv: list[str]) -> str:
    return "python benchmarks/serve_soak.py" + ("" if not argv else " " + shlex.join(argv))


def report(
    results: list[dict[str, Any]],
    args: argparse.Namespace,
    commands: list[str],
    loads: list[tuple[float, float]],
) -> str:
    """The Markdown report of `results`, measured by `commands` (one run each, in order, or one run for
    all) under the 1-minute `loads` (start, end) of each."""
    shown = "\n".join(f"    {command}" for command in commands)
    load = "; then ".join(f"{start:.2f} at the start, {end:.2f} at the end" for start, end in loads)
    parts = [
        f"""# Soak: `edgewise serve`, `edgewise extract` and a Ray actor under sustained load

Measured by

{shown}

(see the script's docstring; several commands: one run each, in this order, set side by side). Mock server: {args.fault_rate:.0%} of requests get an injected fault
(500, 429 with Retry-After {args.retry_after:g} s, a reply {args.slow_seconds:g} s slow against
`--timeout {args.timeout:g}`, a dropped connection, a 200 that is not JSON), the schedule drawn with
seed {args.seed}; {args.malformed:.0%} of the request bodies and input lines are malformed. Every
episode names a guest of its own, so no two share a vocabulary or a cache entry. The reply cache:
{"off (`--no-cache`)" if args.no_cache else "as by default (off in serve, on in extract and Ray), in a fresh folder per run"}. Machine: {os.cpu_count()} CPUs, shared;
load average (1 min) {load}. RSS is the measured process's
resident memory in MB (1024 x 1024 bytes).

{summary_table(results, args)}
"""
    ]
    for result in results:
        parts.append(f"## {_label(result)}\n\nCommit {result['commit']}; python `{result['python']}`.\n")
        serve = result.get("serve")
        if serve:
            parts.append(
                f"""### `edgewise serve`: {args.warmup_rounds} warm-up + {args.rounds} rounds of {args.requests} requests at concurrency {args.concurrency}

    EDGEWISE_API_TOKEN=... {serve["command"]}

{serve_table(serve)}

Requests/s counts every answer, the 422s included; latency is each answer's on the client. "faults
injected" is of the requests the mock got in the round, retries included. The server's log: {serve["log_lines"]}
lines, {serve["log_tracebacks"]} tracebacks.
"""
            )
        for engine in ENGINES:
            run = result.get(engine)
            if run:
                output = run["output"]
                faults = sum(count for kind, count in run["faults"].items() if kind != "none")
                failed = (
                    ", ".join(f"{reason} {count}" for reason, count in output["failed"].items()) or "none"
                )
                parts.append(
                    f"""### {engine}: {args.episodes} lines, {run["measured"]} measured

    {run["command"]}

{output["lines"]} records for {args.episodes} lines (lost {output["lost"]}, duplicated {output["duplicated"]}, ids in
input order: {"yes" if output["in_order"] else "**NO**"}); {output["results"]} results, failed: {failed}; exit status
{run["exit_status"]}; {run["wall_s"]:.0f} s; {faults} faults injected in {sum(run["faults"].values())} model requests.
"""
                )
    table = batch_table(results)
    if table:
        parts.append(
            f"## Batches: RSS (MB) every {args.sample_every} lines\n\nSampled every {POLL_S * 1000:.0f} ms; "
            "a figure taken past its line says where.\n\n" + table + "\n"
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--repo",
        type=Path,
        action="append",
        help="a checkout to measure, with its .venv (default: this one); repeat to set trees side by side",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["serve", *ENGINES],
        default=["serve", *ENGINES],
        help="which runs (default all three)",
    )
    parser.add_argument("--rounds", type=int, default=4, help="measured serve rounds (default 4)")
    parser.add_argument(
        "--warmup-rounds", type=int, default=1, help="serve rounds before them, not measured (default 1)"
    )
    parser.add_argument("--requests", type=int, default=2000, help="requests per serve round (default 2000)")
    parser.add_argument("--concurrency", type=int, default=64, help="concurrent clients (default 64)")
    parser.add_argument("--workers", type=int, default=8, help="edgewise serve/extract --workers (default 8)")
    parser.add_argument(
        "--fault-rate", type=float, default=0.1, help="share of model requests with a fault (default 0.1)"
    )
    parser.add_argument(
        "--malformed", type=float, default=0.1, help="share of malformed bodies and lines (default 0.1)"
    )
    parser.add_argument(
        "--episodes", type=int, default=20_000, help="lines of the batch input (default 20000)"
    )
    parser.add_argument(
        "--sample-every", type=int, default=1000, help="lines between RSS figures (default 1000)"
    )
    parser.add_argument(
        "--timeout", type=float, default=2.0, help="--timeout given to edgewise (default 2 s)"
    )
    parser.add_argument(
        "--slow-seconds", type=float, default=5.0, help="how long a slow fault waits (default 5 s)"
    )
    parser.add_argument("--retry-after", type=float, default=1.0, help="a 429's Retry-After (default 1 s)")
    parser.add_argument("--no-cache", action="store_true", help="run edgewise with --no-cache")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the faults and the malformed share (default 0)"
    )
    parser.add_argument(
        "--limit-s", type=float, default=3600.0, help="time limit of one batch run (default 3600 s)"
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="the report (Markdown); a .json beside it"
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        action="append",
        help="instead of running, set earlier runs side by side: their .json reports, in order (their "
        "settings must agree, and are the report's); repeat for each",
    )
    given = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(given)
    if args.from_json:
        runs = [json.loads(path.read_text()) for path in args.from_json]
        args = joined_settings(args, [run["settings"] for run in runs])
        results = [result for run in runs for result in run["results"]]
        commands = [run["command"] for run in runs] + [command_line(given)]
        loads = [tuple(run["loads"]) for run in runs]
        repos = [repo for run in runs for repo in run["settings"]["repo"]]
    else:
        repos = args.repo or [ROOT]
        load_start = os.getloadavg()[0]
        results = [soak_checkout(args, repo) for repo in repos]
        commands = [command_line(given)]
        loads = [(load_start, os.getloadavg()[0])]
    text = report(results, args, commands, loads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(
        json.dumps(
            {
                "command": " && ".join(commands),
                "loads": [loads[0][0], loads[-1][1]],
                "settings": vars(args) | {"repo": [str(r) for r in repos], "out": str(args.out)},
                "results": results,
            },
            indent=1,
            default=str,
        )
        + "\n"
    )
    print(text)
    last = results[-1]["checks"]
    kept = all(value for key, value in result_checks(results) if key.endswith("kept_every_line"))
    goals = all(value for key, value in last.items() if key.endswith("_ok"))
    return 0 if kept and goals else 1


_RUN_ONLY: Final = ("repo", "out", "from_json")


def joined_settings(args: argparse.Namespace, settings: list[dict[str, Any]]) -> argparse.Namespace:
    """`args` with the measurement settings of earlier runs, which must agree (all but where each ran
    and wrote); a `SystemExit` names the first that does not."""
    first = {key: value for key, value in settings[0].items() if key not in _RUN_ONLY}
    for other in settings[1:]:
        differ = sorted(key for key, value in first.items() if other.get(key) != value)
        if differ:
            raise SystemExit(f"the runs were measured with different settings: {', '.join(differ)}")
    measured = argparse.Namespace(**{**vars(args), **first})
    measured.only = list(first["only"])
    return measured


def result_checks(results: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(key, value) for result in results for key, value in result["checks"].items()]


if __name__ == "__main__":
    raise SystemExit(main())
