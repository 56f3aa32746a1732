"""`edgewise extract` on the local engine and on Ray (1, 2, 4 actors) against an instant mock server.

2,000 episodes (the ten shipped examples of data/examples/episodes.jsonl, repeated with new ids)
go through the real CLI in a subprocess, once per engine setting, against the mock
OpenAI-compatible server (tests/mock_openai.py) on 127.0.0.1, which answers at once: what is left
is edgewise's own cost per row (prompt, HTTP, parsing, post-processing) and the engine's. Each
setting also runs on a 50-episode input, so that the fixed cost of a run (Python and Ray start-up,
actors loading the program) and the cost of a further row are told apart:

    per row = (wall(2000) - wall(50)) / 1950,   start-up = wall(50) - 50 x per row

Then the Ray run is repeated with one actor killed (SIGKILL) once a third of the rows are back, and
the output is checked: every input id once, in input order. The machine's load average is read
before and after every run; another job on the same cores slows every figure.

    python benchmarks/ray_extract.py                   # writes benchmarks/results/ray_extract.md
    python benchmarks/ray_extract.py --episodes 500 --repeats 1 --out /tmp/ray.md
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness import id_checks, progress, read_records, script_parser
from mock_openai import MockOpenAIServer
from ray_processes import stage_actor_pids

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "ray_extract.md"
EXAMPLES: Final = ROOT / "data" / "examples" / "episodes.jsonl"
SMALL: Final = 50
KILL_AFTER_SHARE: Final = 1 / 3


def write_episodes(path: Path, count: int) -> list[str]:
    """`count` episodes from the shipped examples, each with a new id; returns the ids in order."""
    examples = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    ids = []
    with open(path, "w", encoding="utf-8") as handle:
        for number in range(count):
            episode = {**examples[number % len(examples)], "id": f"ep-{number:05d}"}
            ids.append(episode["id"])
            handle.write(json.dumps(episode) + "\n")
    return ids


def check_output(path: Path, ids: list[str]) -> dict[str, Any]:
    """Rows, results, lost and duplicated ids, and whether the ids are the input's in its order."""
    records = read_records(path)
    checks = id_checks(records, ids)
    checks["ids_equal"] = checks.pop("in_order")
    return {"rows": len(records), "results": sum(1 for record in records if "edges" in record), **checks}


def cli_args(
    engine: str, actors: int | None, workers: int, source: str, output: str, api_base: str
) -> list[str]:
    args = ["extract", "--input", source, "--output", output, "--model", "openai/mock", "--api-base", api_base,
            "--workers", str(workers), "--no-cache", "--no-progress"]  # fmt: skip
    if engine == "ray":
        args += ["--engine", "ray", "--actors", str(actors)]
    return args


def _killer(command: int, journal: Path, after_rows: int, stop: threading.Event, killed: list[int]) -> None:
    """Kill one actor of the run `command` started (SIGKILL) once `after_rows` records are in its journal."""
    while not stop.is_set():
        try:
            with open(journal, "rb") as handle:
                rows = sum(1 for _ in handle)
        except OSError:
            rows = 0
        pids = stage_actor_pids(command)
        if rows >= after_rows and pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            return
        stop.wait(0.05)


def run_once(
    args: argparse.Namespace,
    folder: Path,
    engine: str,
    actors: int | None,
    source: Path,
    ids: list[str],
    api_base: str,
    kill: bool = False,
) -> dict[str, Any]:
    output = folder / f"out-{engine}-{actors}-{len(ids)}{'-kill' if kill else ''}.jsonl"
    output.unlink(missing_ok=True)
    command = [sys.executable, "-m", "edgewise", *cli_args(engine, actors, args.workers, str(source), str(output),
                                                          api_base)]  # fmt: skip
    stop, killed = threading.Event(), []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as process:
        killer = None
        if kill:
            journal = output.with_name(output.name + ".partial")
            after_rows = int(len(ids) * KILL_AFTER_SHARE)
            killer = threading.Thread(target=_killer, args=(process.pid, journal, after_rows, stop, killed))
            killer.start()
        _, stderr = process.communicate(timeout=args.limit_s)
    wall_s = time.monotonic() - started
    load_after = os.getloadavg()[0]
    stop.set()
    if killer is not None:
        killer.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-4000:]}")
    return {
        "engine": engine,
        "actors": actors,
        "episodes": len(ids),
        "wall_s": wall_s,
        "load": (load_before, load_after),
        "killed": killed,
        "checked": check_output(output, ids),
        "summary_line": stderr.strip().splitlines()[-1],
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    settings = [("local", None)] + [("ray", actors) for actors in args.actors]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as name, MockOpenAIServer() as server:
        folder = Path(name)
        big, small = folder / "big.jsonl", folder / "small.jsonl"
        big_ids, small_ids = write_episodes(big, args.episodes), write_episodes(small, SMALL)
        for _ in range(args.repeats):
            for engine, actors in settings:
                for source, ids in ((small, small_ids), (big, big_ids)):
                    runs.append(run_once(args, folder, engine, actors, source, ids, server.api_base))
                    progress(_run_line(runs[-1]))
        killed = run_once(args, folder, "ray", args.kill_actors, big, big_ids, server.api_base, kill=True)
        progress(_run_line(killed))
    out = args.out.resolve()
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    return {"settings": settings, "runs": runs, "killed": killed, "args": vars(args) | {"out": str(shown)}}


def _run_line(run: dict[str, Any]) -> str:
    engine = "local" if run["engine"] == "local" else f"ray x{run['actors']}"
    return (
        f"{engine:8} {run['episodes']:5} episodes: {run['wall_s']:6.1f} s, load {run['load'][0]:.2f}->"
        f"{run['load'][1]:.2f}, {run['checked']}"
    )


def figures(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per engine setting: medians of the large and small runs, rows per second, per-row and start-up cost."""
    rows = []
    big_n, small_n = result["args"]["episodes"], SMALL
    for engine, actors in result["settings"]:
        mine = [run for run in result["runs"] if run["engine"] == engine and run["actors"] == actors]
        big = statistics.median(run["wall_s"] for run in mine if run["episodes"] == big_n)
        small = statistics.median(run["wall_s"] for run in mine if run["episodes"] == small_n)
        per_row = (big - small) / (big_n - small_n)
        rows.append(
            {
                "setting": "local"
                if engine == "local"
                else f"ray, {actors} actor{'s' if actors > 1 else ''}",
                "wall_s": big,
                "rows_per_s": big_n / big,
                "per_row_ms": per_row * 1000,
                "marginal_rows_per_s": 1 / per_row if per_row > 0 else float("inf"),
                "startup_s": small - small_n * per_row,
                "all_ok": all(run["checked"]["ids_equal"] for run in mine),
            }
        )
    return rows


def report(result: dict[str, Any]) -> str:
    args = result["args"]
    loads = [load for run in [*result["runs"], result["killed"]] for load in run["load"]]
    busy = max(loads) > args["busy_load"]
    table = "\n".join(
        f"| {row['setting']} | {row['wall_s']:.1f} | {row['rows_per_s']:.0f} | {row['per_row_ms']:.2f} | "
        f"{row['marginal_rows_per_s']:.0f} | {row['startup_s']:.1f} | {'yes' if row['all_ok'] else 'NO'} |"
        for row in figures(result)
    )
    killed = result["killed"]
    checked = killed["checked"]
    load_note = (
        f"**The machine was busy**: load average (1 min) {min(loads):.2f} to {max(loads):.2f} on "
        f"{os.cpu_count()} cores during the runs, so other work shared the cores and every figure here is "
        "slower than on an idle machine."
        if busy
        else f"Load average (1 min) {min(loads):.2f} to {max(loads):.2f} on {os.cpu_count()} cores."
    )
    command = (
        f"python benchmarks/ray_extract.py --episodes {args['episodes']} --repeats {args['repeats']} "
        + (f"--workers {args['workers']}")
    )
    return f"""# edgewise extract on Ray vs the local engine, {args["episodes"]} episodes, instant mock server

Measured by `{command}`: the real CLI in a subprocess against the mock OpenAI-compatible server
(tests/mock_openai.py) on 127.0.0.1, which answers every request at once (`{{"edges": []}}`), so the
time is edgewise's and the engine's, not a model's. `--workers {args["workers"]}` everywhere (threads
in the local engine, threads inside each Ray actor); Ray is the local Ray the command starts itself.
Medians of {args["repeats"]} runs per setting; per row and start-up from a {SMALL}-episode run of the
same setting (see the script's docstring).

{load_note}

| engine | wall s ({args["episodes"]} episodes) | rows/s | ms per further row | further rows/s | start-up s | ids = input ids, in order |
|---|---|---|---|---|---|---|
{table}

{"One actor (pid " + str(killed["killed"][0]) + ") killed" if killed["killed"] else "No actor was killed (the run ended first);"} \
(SIGKILL) after a third of the rows, Ray with {args["kill_actors"]} actors,
{args["episodes"]} episodes: {checked["rows"]} rows, ids equal to the input's in order:
**{"yes" if checked["ids_equal"] else "NO"}**, lost {checked["lost"]}, duplicated {checked["duplicated"]},
{checked["results"]} results; {killed["wall_s"]:.1f} s. The summary line: `{killed["summary_line"]}`
"""


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--episodes", type=int, default=2000, help="episodes in the large run (default 2000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting and size (default 3)")
    parser.add_argument("--workers", type=int, default=4, help="--workers of every run (default 4)")
    parser.add_argument(
        "--actors", type=int, nargs="+", default=[1, 2, 4], help="Ray actor counts (default 1 2 4)"
    )
    parser.add_argument(
        "--kill-actors", type=int, default=2, help="actors in the run with a kill (default 2)"
    )
    parser.add_argument(
        "--busy-load", type=float, default=1.5, help="load average that marks the machine busy"
    )
    parser.add_argument("--limit-s", type=float, default=900.0, help="time limit of one run (default 900 s)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="the report (Markdown); a .json beside it"
    )
    args = parser.parse_args()
    result = measure(args)
    text = report(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(
        json.dumps(result | {"figures": figures(result)}, indent=2) + "\n"
    )
    print(text)


if __name__ == "__main__":
    main()
