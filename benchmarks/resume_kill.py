"""`kill -9` an `edgewise extract` run at a random point, `--resume` it, and count lost and repeated ids.

Each trial starts the real CLI in a subprocess against the mock OpenAI-compatible server (with
latency and 20% injected faults, so retries are in flight when the kill lands), waits until a random
number of output lines is written plus a random fraction of a second, sends SIGKILL, then runs the
same command with `--resume` to the end. The output file is then read back: every input id must be
there exactly once, in input order, and the resumed run must send no request for a line already done.

    python benchmarks/resume_kill.py        # 5 trials of 1000 episodes -> benchmarks/results/resume_kill.md
    python benchmarks/resume_kill.py --trials 2 --episodes 300 --out /tmp/resume.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fault_injection import REPLY, episodes
from harness import id_checks, read_records, script_parser
from mock_openai import FaultRate, MockOpenAIServer

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "resume_kill.md"
_POLL_S: Final = 0.005


def cli_args(args: argparse.Namespace, source: str, output: str, api_base: str) -> list[str]:
    return [
        "extract", "--input", source, "--output", output, "--model", "openai/mock", "--api-base", api_base,
        "--workers", str(args.workers), "--retry-backoff", f"{args.retry_backoff:g}", "--no-cache",
        "--no-progress",
    ]  # fmt: skip


def complete_lines(path: Path) -> tuple[int, bool]:
    """Newline-terminated lines in `path`, and whether a cut (unterminated) last line follows them."""
    data = path.read_bytes() if path.exists() else b""
    return data.count(b"\n"), bool(data) and not data.endswith(b"\n")


def trial(args: argparse.Namespace, number: int, rng: random.Random) -> dict[str, Any]:
    inputs = episodes(args.episodes)
    ids = [item["id"] for item in inputs]
    kill_after = rng.randrange(1, args.episodes)
    extra_s = rng.uniform(0, 0.05)
    faults = FaultRate(args.fault_rate, kinds=("500", "429", "drop", "invalid_json"), seed=number)
    with (
        tempfile.TemporaryDirectory() as folder,
        MockOpenAIServer(REPLY, faults=faults, latency=args.latency, retry_after=0.1) as server,
    ):
        source, output = Path(folder, "in.jsonl"), Path(folder, "out.jsonl")
        source.write_text("".join(json.dumps(item) + "\n" for item in inputs))
        command = [
            sys.executable,
            "-m",
            "edgewise",
            *cli_args(args, str(source), str(output), server.api_base),
        ]
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            give_up = time.monotonic() + args.limit_s
            while (
                complete_lines(output)[0] < kill_after and child.poll() is None and time.monotonic() < give_up
            ):
                time.sleep(_POLL_S)
            time.sleep(extra_s)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
        killed_at, cut = complete_lines(output)
        requests_before = len(server.served)
        server.reset()
        resumed = subprocess.run(
            [*command, "--resume"], check=False, capture_output=True, text=True, timeout=args.limit_s
        )
        if resumed.returncode not in (0, 2):  # 2: the batch ran, some lines failed (counted below)
            raise SystemExit(f"resume failed ({resumed.returncode}):\n{resumed.stderr[-4000:]}")
        resumed_episodes = len({_episode_of(body) for body in server.requests})
        records = read_records(output)
    return {
        "trial": number,
        "kill_target": kill_after,
        "complete_at_kill": killed_at,
        "cut_line": cut,
        "requests_before_kill": requests_before,
        "resumed_episodes": resumed_episodes,
        "lines": len(records),
        **id_checks(records, ids),
        "failed": sum(1 for record in records if "error" in record),
        "summary_line": resumed.stderr.strip().splitlines()[-1],
    }


def _episode_of(body: dict[str, Any]) -> str:
    """Which episode a request is for: its `(note N)` marker in the prompt."""
    text = json.dumps(body.get("messages"))
    start = text.rfind("(note ")
    return text[start : text.find(")", start)]


def report(args: argparse.Namespace, trials: list[dict[str, Any]]) -> str:
    command = "edgewise " + " ".join(cli_args(args, "in.jsonl", "out.jsonl", "http://127.0.0.1:PORT/v1"))
    rows = "\n".join(
        f"| {t['trial']} | {t['complete_at_kill']} | {'yes' if t['cut_line'] else 'no'} | "
        f"{t['resumed_episodes']} ({args.episodes - t['complete_at_kill']} expected) | {t['lines']} | "
        f"**{t['lost']}** | **{t['duplicated']}** | {'yes' if t['in_order'] else 'NO'} | {t['failed']} |"
        for t in trials
    )
    lost, duplicated = sum(t["lost"] for t in trials), sum(t["duplicated"] for t in trials)
    return f"""# `kill -9` mid-run, then `--resume`: {len(trials)} trials of {args.episodes} episodes

Measured by `python benchmarks/resume_kill.py --trials {len(trials)} --episodes {args.episodes} \
--seed {args.seed}`. Each trial runs

    {command}

in a subprocess against the mock server (latency {args.latency:g} s per request, {args.fault_rate:.0%}
injected faults among 500 / 429 / dropped connection / invalid-JSON 200, so retries are in flight),
sends SIGKILL once a random number of lines is written (plus 0-50 ms), then reruns the command with
`--resume` to the end and reads the output file back.

| trial | complete lines at kill | cut last line at kill | episodes sent by the resumed run | lines after resume | lost | duplicated | in order | error lines |
|---|---|---|---|---|---|---|---|---|
{rows}

Total lost: **{lost}** (goal 0); total duplicated: **{duplicated}** (goal 0). "Episodes sent by the
resumed run" counts distinct episodes the mock saw after the kill; it equals the lines not yet
written, so no finished episode was extracted twice. A cut last line (a kill inside a write) is
removed by `--resume` before it appends; the test suite also covers that case on purpose
(tests/runtime/test_faults.py::test_kill_9_mid_run_then_resume_gives_every_id_once_in_order).
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--retry-backoff", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-s", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    trials = []
    for number in range(1, args.trials + 1):
        trials.append(trial(args, number, rng))
        print(json.dumps({k: v for k, v in trials[-1].items() if k != "summary_line"}), flush=True)
    text = report(args, trials)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    ok = all(t["lost"] == 0 and t["duplicated"] == 0 and t["in_order"] for t in trials)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
