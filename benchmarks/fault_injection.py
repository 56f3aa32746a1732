"""1000 episodes through `edgewise extract` against a mock provider that fails 20% of requests.

The mock OpenAI-compatible server (tests/mock_openai.py, real HTTP on 127.0.0.1) draws a fault for
each request with probability `--fault-rate` among 500, 429 with Retry-After, a reply slower than the
client's timeout, a dropped connection, and a 200 whose body is not JSON; a retried request is a new
draw, as with a flaky provider. The real CLI runs as a subprocess with its default retry settings.
The script checks the output file itself: every input id must appear exactly once, in order.

    python benchmarks/fault_injection.py                       # writes benchmarks/results/fault_injection.md
    python benchmarks/fault_injection.py --episodes 200 --out /tmp/faults.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import id_checks, read_records, script_parser
from mock_openai import FaultRate, MockOpenAIServer

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "fault_injection.md"
REPLY: Final = json.dumps(
    {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Alice",
                "targetEntityName": "Acme Corp",
                "fact": "Alice joined Acme Corp.",
                "validAt": "2021",
                "invalidAt": None,
            }
        ]
    }
)


def episodes(count: int) -> list[dict[str, Any]]:
    """Distinct episodes (no two prompts alike), each with an id to check the output against."""
    return [
        {
            "id": f"ep-{index:05d}",
            "episodeContent": f"Alice joined Acme Corp in {1990 + index % 30} (note {index}).",
            "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
            "referenceTime": "2025-04-30T00:00:00Z",
        }
        for index in range(count)
    ]


def check_output(path: Path, ids: list[str]) -> dict[str, Any]:
    """Lost, duplicated and out-of-order ids, results and failures by reason, read from the output file."""
    records = read_records(path)
    failed = Counter(record["error"]["reason"] for record in records if "error" in record)
    return {
        "lines": len(records),
        "results": sum(1 for record in records if "edges" in record),
        **id_checks(records, ids),
        "failed": dict(sorted(failed.items())),
        "parse_failures": sum(1 for record in records if record.get("parseFailures")),
    }


def cli_args(args: argparse.Namespace, source: str, output: str, api_base: str, summary: str) -> list[str]:
    """The `edgewise extract` arguments of the measured run (placeholders in the report)."""
    return [
        "extract", "--input", source, "--output", output, "--model", "openai/mock", "--api-base", api_base,
        "--workers", str(args.workers), "--timeout", f"{args.timeout:g}", "--no-cache", "--no-progress",
        "--summary-json", summary,
    ]  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    faults = FaultRate(args.fault_rate, seed=args.seed)
    inputs = episodes(args.episodes)
    with (
        tempfile.TemporaryDirectory() as folder,
        MockOpenAIServer(
            REPLY, faults=faults, retry_after=args.retry_after, slow_seconds=args.slow_seconds
        ) as server,
    ):
        source, output, summary_path = (
            Path(folder, "in.jsonl"),
            Path(folder, "out.jsonl"),
            Path(folder, "s.json"),
        )
        source.write_text("".join(json.dumps(item) + "\n" for item in inputs))
        command = cli_args(args, "in.jsonl", "out.jsonl", "http://127.0.0.1:PORT/v1", "summary.json")
        actual = [sys.executable, "-m", "edgewise"] + cli_args(
            args, str(source), str(output), server.api_base, str(summary_path)
        )
        started = time.monotonic()
        completed = subprocess.run(actual, capture_output=True, text=True, check=False, timeout=args.limit_s)
        wall_s = time.monotonic() - started
        if completed.returncode not in (0, 2):  # 2: the batch ran, some lines failed (counted below)
            raise SystemExit(f"edgewise extract failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
        checked = check_output(output, [item["id"] for item in inputs])
        summary = json.loads(summary_path.read_text())
        served = server.fault_counts()
    return {
        "command": "edgewise " + " ".join(command),
        "settings": vars(args) | {"out": str(args.out)},
        "wall_s": wall_s,
        "summary": summary,
        "checked": checked,
        "served": served,
        "summary_line": completed.stderr.strip().splitlines()[-1],
    }


def report(figures: dict[str, Any]) -> str:
    settings, summary, checked, served = (
        figures["settings"],
        figures["summary"],
        figures["checked"],
        figures["served"],
    )
    faults = sum(count for kind, count in served.items() if kind != "none")
    failed = ", ".join(f"{reason} {count}" for reason, count in checked["failed"].items()) or "none"
    retries = ", ".join(f"{reason} {count}" for reason, count in summary["retries"].items()) or "none"
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(served.items()) if kind != "none")
    title = f"{settings['episodes']} episodes, {settings['fault_rate']:.0%} injected faults"
    return f"""# Fault injection: {title}

Measured by `python benchmarks/fault_injection.py --episodes {settings["episodes"]} --fault-rate \
{settings["fault_rate"]} --workers {settings["workers"]} --seed {settings["seed"]}`, which starts the mock
OpenAI-compatible server (tests/mock_openai.py) on 127.0.0.1 and runs the real CLI in a subprocess:

    {figures["command"]}

(`PORT` is the mock's free port.) Faults are drawn per request, retries included, uniformly among
500, 429 (Retry-After {settings["retry_after"]:g} s), slow ({settings["slow_seconds"]:g} s, past the
{settings["timeout"]:g} s timeout), dropped connection and a 200 whose body is not JSON. Retry
settings are the defaults: `--max-retries 3`, backoff scale 1 s with jitter, Retry-After honoured.

| figure | value |
|---|---|
| input episodes | {settings["episodes"]} |
| results out (edges written) | {checked["results"]} |
| lost (input id missing from the output) | **{checked["lost"]}** (goal 0) |
| duplicated ids | {checked["duplicated"]} |
| output in input order | {"yes" if checked["in_order"] else "NO"} |
| failed after retries, by reason | {failed} |
| model requests sent | {summary["requests"]} |
| faults the mock injected | {faults} ({kinds}) |
| requests retried, by reason | {summary["retriesTotal"]} ({retries}) |
| episodes that needed a retry | {summary["retriedEpisodes"]} |
| wall time | {figures["wall_s"]:.1f} s (CLI's own: {summary["wallSeconds"]:.1f} s) |

The CLI's last stderr line:

    {figures["summary_line"]}

Reading: every fault kind reaches edgewise's retry loop (the invalid-JSON 200 included, which DSPy
alone would not retry); an episode fails only when all {1 + 3} attempts draw a fault, which at
p = {settings["fault_rate"]} is about {settings["fault_rate"] ** 4:.2%} of episodes; a failed episode
is an error line with its reason, never a missing line. Wall time is dominated by the slow faults:
each holds its episode for the {settings["timeout"]:g} s timeout plus a backoff, and because output
keeps input order with at most 2 x `--workers` episodes in flight, an episode stuck at the head of the line
holds up the ones behind it; more workers shorten that.
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=2.0, help="--timeout passed to the CLI (seconds)")
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-s", type=float, default=900.0, help="give up after this many seconds")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    figures = run(args)
    text = report(figures)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    checked = figures["checked"]
    return 0 if checked["lost"] == 0 and checked["duplicated"] == 0 and checked["in_order"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
