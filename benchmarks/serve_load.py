"""`edgewise serve` under 50 concurrent clients for 30 s, against an instant mock provider.

Three processes on 127.0.0.1: the mock OpenAI-compatible server (tests/mock_openai.py, no latency, no
faults), the real `edgewise serve` CLI with the default program, and this script's clients: 50
asyncio tasks, each posting the seed's context object to `POST /v1/extract` in a loop over one kept-
alive httpx connection until the time is up. Every reply is checked (status 200 and one edge in the
seed's shape); latency is measured per request on the client. What is measured is edgewise's own
overhead (HTTP, validation, DSPy prompt building and parsing, post-processing), not a model.

    python benchmarks/serve_load.py                  # 50 clients, 30 s -> benchmarks/results/serve_load.md
    python benchmarks/serve_load.py --clients 10 --seconds 5 --out /tmp/serve.md
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

import httpx
from harness import (
    HOST,
    ROOT,
    SEED_REPLY,
    free_port,
    mock_process,
    percentile,
    script_parser,
    stop_process,
    wait_healthy,
)

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "serve_load.md"
REQUEST: Final = {
    "episodeContent": "Alice joined Acme as CTO in March 2024.",
    "previousEpisodes": ["Alice was looking for a job."],
    "nodes": [{"name": "Alice", "type": "Person"}, {"name": "Acme", "type": "Organization"}],
    "referenceTime": "2025-04-30T10:00:00Z",
    "edgeTypes": {"WORKS_AT": "a person is employed by an organization"},
    "customPrompt": "",
}


def serve_args(args: argparse.Namespace, port: int | str, api_base: str) -> list[str]:
    return [
        "serve", "--host", HOST, "--port", str(port), "--workers", str(args.workers),
        "--model", "openai/mock", "--api-base", api_base, "--no-cache", "--log-level", "warning",
    ]  # fmt: skip


async def client_loop(
    base: str, stop_at: float, latencies: list[float], outcomes: Counter[str], max_requests: int
) -> None:
    """One client: one kept-alive connection, one request at a time, until `stop_at`."""
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        for _ in range(max_requests):
            if time.monotonic() >= stop_at:
                return
            started = time.perf_counter()
            try:
                response = await client.post("/v1/extract", json=REQUEST)
            except httpx.HTTPError as error:
                outcomes[f"transport: {type(error).__name__}"] += 1
                continue
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                outcomes[f"status {response.status_code}"] += 1
            elif [edge["sourceEntityName"] for edge in response.json().get("edges", [])] != ["Alice"]:
                outcomes["wrong body"] += 1
            else:
                outcomes["ok"] += 1


async def load(base: str, clients: int, seconds: float, max_requests: int) -> dict[str, Any]:
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    started = time.monotonic()
    stop_at = started + seconds
    await asyncio.gather(
        *(client_loop(base, stop_at, latencies, outcomes, max_requests) for _ in range(clients))
    )
    return {"latencies": latencies, "outcomes": outcomes, "wall_s": time.monotonic() - started}


def run(args: argparse.Namespace) -> dict[str, Any]:
    # The server's stderr goes to a file: a pipe nobody reads could fill up and stall the server.
    with tempfile.TemporaryFile() as log, mock_process(SEED_REPLY) as mock:
        port = free_port()
        env = {key: value for key, value in os.environ.items() if key != "EDGEWISE_API_TOKEN"}
        serve = subprocess.Popen(
            [sys.executable, "-m", "edgewise", *serve_args(args, port, mock.api_base)],
            stdout=subprocess.DEVNULL, stderr=log, env=env,
        )  # fmt: skip
        try:
            base = f"http://{HOST}:{port}"
            asyncio.run(wait_healthy(base, 60.0))
            asyncio.run(load(base, args.clients, 2.0, args.max_requests))  # warm-up, not counted
            return asyncio.run(load(base, args.clients, args.seconds, args.max_requests))
        finally:
            stop_process(serve)
            log.seek(0)
            tail = log.read()[-2000:].decode(errors="replace")
            if tail.strip():
                print(f"edgewise serve stderr (last lines):\n{tail}", file=sys.stderr)


def report(args: argparse.Namespace, figures: dict[str, Any]) -> str:
    latencies, outcomes = figures["latencies"], figures["outcomes"]
    served = outcomes.get("ok", 0)
    errors = sum(count for name, count in outcomes.items() if name != "ok")
    kinds = ", ".join(f"{name} {count}" for name, count in sorted(outcomes.items()) if name != "ok") or "none"
    command = "edgewise " + " ".join(serve_args(args, "PORT", "http://127.0.0.1:MOCK_PORT/v1"))
    ms = [value * 1000 for value in latencies]
    mean = statistics.fmean(ms) if ms else float("nan")
    return f"""# `edgewise serve`: {args.clients} concurrent clients for {args.seconds:g} s

Measured by `python benchmarks/serve_load.py --clients {args.clients} --seconds {args.seconds:g} \
--workers {args.workers}`: the mock OpenAI-compatible server (instant replies, no faults) and

    {command}

run as separate processes on 127.0.0.1 with the default program; {args.clients} asyncio clients (httpx,
one kept-alive connection each) post the seed's context object to `POST /v1/extract` back to back
for {args.seconds:g} s after a 2 s warm-up. A request counts as served when it returns 200 with the
expected edge. Machine: {os.cpu_count()} CPUs, shared; load average at the end {os.getloadavg()[0]:.2f}.

| figure | value |
|---|---|
| requests served (200, right edge) | {served} |
| errors | {errors} ({kinds}) |
| throughput | {served / figures["wall_s"]:.1f} requests/s |
| latency p50 | {percentile(ms, 0.50):.0f} ms |
| latency p99 | {percentile(ms, 0.99):.0f} ms |
| latency mean / max | {mean:.0f} ms / {max(ms, default=float("nan")):.0f} ms |

With an instant provider every request is CPU work in one process (DSPy prompt building and reply
parsing hold the GIL), so requests queue behind `--workers {args.workers}` extraction threads and
latency is mostly waiting: p50 is about clients / throughput. Against a real model the time is the
provider's, and `--workers` should match what the provider allows.
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=4, help="edgewise serve --workers")
    parser.add_argument("--max-requests", type=int, default=100_000, help="per client, a bound besides time")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    figures = run(args)
    text = report(args, figures)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0 if sum(count for name, count in figures["outcomes"].items() if name != "ok") == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
