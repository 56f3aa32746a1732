"""Episodes through `edgewise extract` against a mock provider that fails 20% of requests, then `--resume`.

The mock OpenAI-compatible server (tests/mock_openai.py, real HTTP on 127.0.0.1) draws a fault for
each request with probability `--fault-rate`, uniformly among `--kinds`: by default 500, 429 with
Retry-After, a reply slower than the client's timeout, a dropped connection, a 200 whose body is not
JSON, a 200 whose content breaks the schema, a 200 whose content is prose (unparseable), and a 200
cut at the token limit (finish reason `length`); a retried request is a new draw, as with a flaky
provider. The real CLI runs as a subprocess with its default retry settings.

The script reads the output file itself: every input id exactly once, in order; results; error lines
by reason; and empty results counted as done (a result with a `parse_failure` warning, which must be
0: a reply that could not be read is an error line). Then it runs `--resume` on that output against a
new mock (`--resume-fault-rate`, default the same rate) and counts again: the error lines it ran
again, those still failing, and whether every other line stayed byte for byte.

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

from harness import id_checks, progress, script_parser
from mock_openai import FAULT_KINDS, FaultKind, FaultRate, MockOpenAIServer

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "fault_injection.md"
DEFAULT_KINDS: Final[tuple[FaultKind, ...]] = (
    "500", "429", "slow", "drop", "invalid_json", "schema_break", "unparseable", "length"
)  # fmt: skip
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
PROGRESS_EVERY_S: Final = 30.0


def episode(id_: str, index: int, note: str) -> dict[str, Any]:
    """An episode `REPLY` answers (Alice, Acme Corp): its year turns with `index`, and `note` makes its
    prompt its own, so that no two episodes share a prompt or a cache entry."""
    return {
        "id": id_,
        "episodeContent": f"Alice joined Acme Corp in {1990 + index % 30} (note {note}).",
        "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
        "referenceTime": "2025-04-30T00:00:00Z",
    }


def episodes(count: int) -> list[dict[str, Any]]:
    """Distinct episodes (no two prompts alike), each with an id to check the output against."""
    return [episode(f"ep-{index:05d}", index, str(index)) for index in range(count)]


def empty_done(record: dict[str, Any]) -> bool:
    """A result that counts as done although a reply was not read: what must never be written."""
    codes = [warning.get("code") for warning in record.get("warnings") or []]
    return "edges" in record and (bool(record.get("parseFailures")) or "parse_failure" in codes)


def check_output(lines: list[bytes], ids: list[str]) -> dict[str, Any]:
    """Lost, duplicated and out-of-order ids, results, error lines by reason, and empty results counted as
    done, read from the output file's lines."""
    records = [json.loads(line) for line in lines]
    failed = Counter(record["error"]["reason"] for record in records if "error" in record)
    return {
        "lines": len(records),
        "results": sum(1 for record in records if "edges" in record),
        **id_checks(records, ids),
        "failed": dict(sorted(failed.items())),
        "failed_total": sum(failed.values()),
        "empty_done": sum(1 for record in records if empty_done(record)),
    }


def cli_args(args: argparse.Namespace, source: str, output: str, api_base: str, summary: str) -> list[str]:
    """The `edgewise extract` arguments of the measured run (placeholders in the report)."""
    return [
        "extract", "--input", source, "--output", output, "--model", "openai/mock", "--api-base", api_base,
        "--workers", str(args.workers), "--timeout", f"{args.timeout:g}", "--no-cache", "--no-progress",
        "--summary-json", summary,
    ]  # fmt: skip


def run_cli(command: list[str], output: Path, limit_s: float, label: str) -> tuple[int, str, float]:
    """Run the CLI, a progress line every `PROGRESS_EVERY_S` (lines in the output); exit status, last
    stderr line and wall time."""
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        try:
            while True:
                try:
                    child.wait(timeout=PROGRESS_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    written = output.read_bytes().count(b"\n") if output.exists() else 0
                    progress(f"{label}: {elapsed:.0f} s, {written} lines in the output")
                    if elapsed > limit_s:
                        raise SystemExit(f"{label}: over --limit-s {limit_s:g} s") from None
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        stderr.seek(0)
        text = stderr.read()
    wall_s = time.monotonic() - started
    if child.returncode not in (0, 2):  # 2: the batch ran, some lines failed (counted from the output)
        raise SystemExit(f"{label}: edgewise extract failed ({child.returncode}):\n{text[-4000:]}")
    progress(f"{label}: exit {child.returncode} after {wall_s:.0f} s")
    return child.returncode, text.strip().splitlines()[-1], wall_s


def one_pass(
    args: argparse.Namespace, rate: float, seed: int, paths: dict[str, Path], resume: bool
) -> dict[str, Any]:
    """One run of the CLI against a fresh mock; what it did, read from the output and the summary."""
    faults = FaultRate(rate, kinds=tuple(args.kinds), seed=seed) if rate else None
    label = "resume" if resume else "first run"
    with MockOpenAIServer(
        REPLY, faults=faults, retry_after=args.retry_after, slow_seconds=args.slow_seconds
    ) as server:
        command = [sys.executable, "-m", "edgewise"] + cli_args(
            args, str(paths["in"]), str(paths["out"]), server.api_base, str(paths["summary"])
        )
        code, last_line, wall_s = run_cli(
            command + (["--resume"] if resume else []), paths["out"], args.limit_s, label
        )
        served = server.fault_counts()
    return {
        "exit": code,
        "wall_s": wall_s,
        "summary": json.loads(paths["summary"].read_text()),
        "served": served,
        "summary_line": last_line,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    inputs = episodes(args.episodes)
    ids = [item["id"] for item in inputs]
    resume_rate = args.fault_rate if args.resume_fault_rate is None else args.resume_fault_rate
    with tempfile.TemporaryDirectory() as folder:
        paths = {name: Path(folder, f"{name}.jsonl") for name in ("in", "out", "summary")}
        paths["in"].write_text("".join(json.dumps(item) + "\n" for item in inputs))
        first = one_pass(args, args.fault_rate, args.seed, paths, resume=False)
        before = paths["out"].read_bytes().splitlines(keepends=True)
        first["checked"] = check_output(before, ids)
        second = one_pass(args, resume_rate, args.seed + 1, paths, resume=True)
        after = paths["out"].read_bytes().splitlines(keepends=True)
        second["checked"] = check_output(after, ids)
    kept = [number for number, line in enumerate(before) if "error" not in json.loads(line)]
    second["kept_unchanged"] = len(after) == len(before) and all(after[n] == before[n] for n in kept)
    second["kept"] = len(kept)
    command = cli_args(args, "in.jsonl", "out.jsonl", "http://127.0.0.1:PORT/v1", "summary.json")
    return {
        "command": "edgewise " + " ".join(command),
        "settings": vars(args) | {"out": str(args.out), "resume_fault_rate": resume_rate},
        "first": first,
        "resume": second,
    }


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def _faults(served: dict[str, int]) -> str:
    injected = {kind: count for kind, count in served.items() if kind != "none"}
    return f"{sum(injected.values())} ({_counts(injected)})"


def report(figures: dict[str, Any]) -> str:
    settings, first, second = figures["settings"], figures["first"], figures["resume"]
    one, two = first["checked"], second["checked"]
    title = f"{settings['episodes']} episodes, {settings['fault_rate']:.0%} injected faults, then --resume"
    kinds = ", ".join(settings["kinds"])
    rows = [
        ("lines out", one["lines"], two["lines"]),
        ("results (parsed, edges written)", one["results"], two["results"]),
        ("error lines, by reason", f"{one['failed_total']} ({_counts(one['failed'])})",
         f"{two['failed_total']} ({_counts(two['failed'])})"),
        ("**empty results counted as done** (goal 0)", f"**{one['empty_done']}**", f"**{two['empty_done']}**"),
        ("lost input ids (goal 0)", one["lost"], two["lost"]),
        ("duplicated ids", one["duplicated"], two["duplicated"]),
        ("output in input order", "yes" if one["in_order"] else "NO", "yes" if two["in_order"] else "NO"),
        ("exit status", first["exit"], second["exit"]),
        ("lines this run extracted", first["summary"]["lines"],
         f"{second['summary']['lines']} (the error lines run again: {second['summary']['rerun']})"),
        ("model requests sent", first["summary"]["requests"], second["summary"]["requests"]),
        ("faults the mock injected", _faults(first["served"]), _faults(second["served"])),
        ("requests retried, by reason", f"{first['summary']['retriesTotal']} ({_counts(first['summary']['retries'])})",
         f"{second['summary']['retriesTotal']} ({_counts(second['summary']['retries'])})"),
        ("wall time", f"{first['wall_s']:.1f} s", f"{second['wall_s']:.1f} s"),
    ]  # fmt: skip
    table = "\n".join(f"| {name} | {a} | {b} |" for name, a, b in rows)
    unchanged = "yes" if second["kept_unchanged"] else "NO"
    return f"""# Fault injection: {title}

Measured by `python benchmarks/fault_injection.py --episodes {settings["episodes"]} --fault-rate \
{settings["fault_rate"]} --resume-fault-rate {settings["resume_fault_rate"]} --workers {settings["workers"]} \
--seed {settings["seed"]}`, which starts the mock OpenAI-compatible server (tests/mock_openai.py) on
127.0.0.1 and runs the real CLI in a subprocess:

    {figures["command"]}

then the same command with `--resume` against a new mock at a {settings["resume_fault_rate"]:.0%} fault
rate. (`PORT` is the mock's free port.) Faults are drawn per request, retries included, uniformly among
{kinds} (429 with Retry-After {settings["retry_after"]:g} s; slow: {settings["slow_seconds"]:g} s, past the
{settings["timeout"]:g} s timeout; schema_break: JSON of the wrong shape; unparseable: prose; length: half
the reply, finish reason `length`). Retry settings are the defaults: `--max-retries 3`, backoff scale
1 s with jitter, Retry-After honoured; a reply that cannot be parsed or was cut is asked for once more.

| figure | first run | `--resume` |
|---|---|---|
{table}

The `--resume` pass kept the {second["kept"]} result lines of the first run byte for byte: **{unchanged}**.

The CLI's last stderr lines:

    {first["summary_line"]}
    {second["summary_line"]}

Reading: a reply that could not be parsed, or that stopped at the token limit, is asked for once
more; when the second reply fails too the line is an error line with reason `parse_failure`, never
a result with its edges missing, and the exit status is 2. `--resume` runs every error line whose
reason has a 5xx status again (all of them here: none is an input error) before it goes on, and puts
the new lines in place in one rename.
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument(
        "--resume-fault-rate", type=float, help="fault rate of the --resume pass (default: --fault-rate)"
    )
    parser.add_argument("--kinds", nargs="+", choices=FAULT_KINDS, default=list(DEFAULT_KINDS))
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=2.0, help="--timeout passed to the CLI (seconds)")
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--limit-s", type=float, default=3600.0, help="give up a pass after this many seconds"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    figures = run(args)
    text = report(figures)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    checks = [figures["first"]["checked"], figures["resume"]["checked"]]
    held = all(
        c["lost"] == 0 and c["duplicated"] == 0 and c["in_order"] and c["empty_done"] == 0 for c in checks
    )
    exits = all(
        run["exit"] == (2 if run["checked"]["failed_total"] else 0)
        for run in (figures["first"], figures["resume"])
    )
    return 0 if held and exits and figures["resume"]["kept_unchanged"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
