"""Probes of the batch path as an attacker or a careless user runs them, against the mock on 127.0.0.1.

Each probe runs the real CLI (`python -m edgewise ...`) in a subprocess with its own cache folders
(`EDGEWISE_CACHE` and `DSPY_CACHEDIR` in a temporary folder, never the user's), and prints one row:
the probe, its command, what it did before, what it does now, and whether that is what it must do.

1. A crafted program whose `extract` step carries `"config": {"api_base": ...}` (a second mock, the
   redirect port): `extract --program`, `serve --program` and `edgewise.load` must refuse it with an
   `ArtifactError` naming the file and the key, and the redirect port must receive nothing.
2. Replies that cannot be read (a 20% fault rate among JSON of the wrong shape, prose and a reply cut
   at the token limit) on 300 lines: no empty result counted as done, the failed lines are error lines
   `parse_failure`, the exit status is 2; the bad replies were never cached, so a rerun against the
   same server, healthy now, asks the model for exactly those lines and every line is a result.
3. The reply cache: after a run against a healthy mock, a run against a port where nothing listens
   fails (reason `connection`) instead of answering from the cache; the cache files are 0600 in a
   0700 folder under `$EDGEWISE_CACHE/replies`, hold no API key, and DSPy's own cache folder is unused.
7. `--resume` with another input: a 20-line output resumed with another 40-line input, and a 300-line
   output resumed with a 20-line input, exit 1 and leave the output byte for byte as it was.

    python benchmarks/security_probe.py            # writes benchmarks/results/security_probe.md
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, NamedTuple

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fault_injection import REPLY, empty_done, episode
from harness import free_port, progress, read_records, script_parser
from mock_openai import FaultRate, MockOpenAIServer, prompt_text

DEFAULT_OUT: Final = ROOT / "benchmarks" / "results" / "security_probe.md"
SECRET: Final = "sk-SECRET123"
UNREADABLE: Final = ("schema_break", "unparseable", "length")
LIMIT_S: Final = 600.0
ASKED_ID: Final = re.compile(r"note p2 (\d+)\)")


class Probe(NamedTuple):
    """One row of the report."""

    number: str
    command: str
    before: str
    now: str
    held: bool


def episodes(count: int, prefix: str = "ep") -> list[dict[str, Any]]:
    """Distinct episodes (no two prompts alike), ids `prefix-N`."""
    return [episode(f"{prefix}-{index}", index, f"{prefix} {index}") for index in range(count)]


def write_input(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class Workspace:
    """A temporary folder with the probes' own caches, and the CLI run inside it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.cache = folder / "edgewise-cache"
        self.dspy_cache = folder / "dspy-cache"
        self.env = {
            **os.environ,
            "EDGEWISE_CACHE": str(self.cache),
            "DSPY_CACHEDIR": str(self.dspy_cache),
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("EDGEWISE_API_TOKEN", None)

    def path(self, name: str) -> Path:
        return self.folder / name

    def edgewise(self, *args: str, timeout: float = LIMIT_S) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "edgewise", *args]
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
            cwd=self.folder,
        )

    def extract(
        self, source: Path, out: Path, api_base: str, *extra: str
    ) -> subprocess.CompletedProcess[str]:
        return self.edgewise(
            "extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", api_base,
            "--api-key", SECRET, "--no-progress", "--timeout", "2", "--retry-backoff", "0.05", *extra,
        )  # fmt: skip


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def crafted_program(space: Workspace, redirect: str) -> Path:
    """A copy of the shipped baseline-v1 whose `extract` step names another endpoint."""
    from edgewise.programs.artifact import PROGRAM_FILE, resolve_artifact_dir

    copy = Path(shutil.copytree(resolve_artifact_dir("baseline-v1"), space.path("crafted")))
    state = json.loads((copy / PROGRAM_FILE).read_text())
    state["extract"]["config"] = {"api_base": redirect}
    (copy / PROGRAM_FILE).write_text(json.dumps(state))
    return copy


def probe_redirect(space: Workspace) -> Probe:
    from edgewise import load
    from edgewise.programs.artifact import PROGRAM_FILE, ArtifactError

    source = write_input(space.path("p1.jsonl"), episodes(3, "p1"))
    with MockOpenAIServer(REPLY) as mock, MockOpenAIServer(REPLY) as redirect:
        program = crafted_program(space, redirect.api_base)
        named = f"{program / PROGRAM_FILE}: key 'extract.config' is not allowed"
        done = space.extract(source, space.path("p1.out.jsonl"), mock.api_base, "--program", str(program))
        served = space.edgewise(
            "serve", "--program", str(program), "--model", "openai/mock", "--api-base", mock.api_base,
            "--api-key", SECRET, "--port", str(free_port()), timeout=120,
        )  # fmt: skip
        try:
            load(program)
            loaded = "loaded"
        except ArtifactError as error:
            loaded = f"{type(error).__name__}" + (" naming file and key" if named in str(error) else "")
        sent = len(redirect.requests) + len(mock.requests)
    held = (
        done.returncode == 1
        and named in done.stderr
        and served.returncode == 1
        and named in served.stderr
        and loaded == "ArtifactError naming file and key"
        and sent == 0
        and SECRET not in done.stderr + served.stderr
    )
    now = (
        f"`extract` exit {done.returncode}, `serve` exit {served.returncode}, both with "
        f'"{named.replace(str(space.folder) + "/", "")}"; `edgewise.load`: {loaded}; requests to the redirect '
        f"port: {len(redirect.requests)}, to the mock: {len(mock.requests)}"
    )
    return Probe(
        "1",
        "`edgewise extract --program COPY --model openai/mock --api-base MOCK --api-key sk-SECRET123 "
        '-i in.jsonl -o out.jsonl` (COPY: baseline-v1 with `"config": {"api_base": REDIRECT}` in '
        "`extract`); `edgewise serve --program COPY ...`; `edgewise.load(COPY)`",
        "`Authorization: Bearer sk-SECRET123` and the episode text sent to the redirect port, exit 0, no warning",
        now,
        held,
    )


class Switch:
    """A fault policy that can be turned off: `FaultRate` while `on`, no fault after."""

    def __init__(self, policy: Callable[[int, dict[str, Any]], Any]) -> None:
        self.policy, self.on = policy, True

    def __call__(self, index: int, body: dict[str, Any]) -> Any:
        return self.policy(index, body) if self.on else None


def probe_parse_failures(space: Workspace, count: int = 300) -> Probe:
    source, out = write_input(space.path("p2.jsonl"), episodes(count, "p2")), space.path("p2.out.jsonl")
    switch = Switch(FaultRate(0.2, kinds=UNREADABLE, seed=0))
    with MockOpenAIServer(REPLY, faults=switch) as mock:
        first = space.extract(source, out, mock.api_base, "--workers", "4")
        found = read_records(out)
        failed = [record for record in found if "error" in record]
        reasons = sorted({record["error"]["reason"] for record in failed})
        empty = sum(empty_done(record) for record in found)
        switch.on = False
        mock.reset()
        again = space.extract(source, space.path("p2.again.jsonl"), mock.api_base, "--workers", "4")
        asked_again = {
            f"p2-{match[1]}" for body in mock.requests if (match := ASKED_ID.search(prompt_text(body)))
        }
        rerun = read_records(space.path("p2.again.jsonl"))
    failed_ids = {record["id"] for record in failed}
    held = (
        empty == 0
        and bool(failed)
        and reasons == ["parse_failure"]
        and first.returncode == 2
        and again.returncode == 0
        and failed_ids <= asked_again
        and all("edges" in record and not empty_done(record) for record in rerun)
    )
    now = (
        f"{len(found) - len(failed)} results, **{empty} empty results counted as done**, {len(failed)} error "
        f"lines ({', '.join(reasons) or 'none'}), exit {first.returncode}; the same batch again (cache on, "
        f"faults off): the model asked again for {len(failed_ids & asked_again)} of the {len(failed)} failed "
        f"lines (and for the {len(asked_again - failed_ids)} lines whose result came from an uncached retry), "
        f"{sum('edges' in record for record in rerun)} results, exit {again.returncode}"
    )
    return Probe(
        "2",
        f"`edgewise extract -i in.jsonl -o out.jsonl --workers 4` on {count} lines, the mock at a 20% fault "
        "rate among schema_break, unparseable and length (cut at max_tokens); then the same command "
        "(cache on) with the faults off",
        "18 of 300 lines `edges: []` with a `parse_failure` warning, counted as done, exit 0; the bad "
        "replies cached, so a rerun returns the same empty results",
        now,
        held,
    )


def probe_cache(space: Workspace, count: int = 20) -> Probe:
    source = write_input(space.path("p3.jsonl"), episodes(count, "p3"))
    with MockOpenAIServer(REPLY) as mock:
        first = space.extract(source, space.path("p3.first.jsonl"), mock.api_base)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    down = space.extract(source, space.path("p3.down.jsonl"), dead, "--max-retries", "0")
    found = read_records(space.path("p3.down.jsonl"))
    reasons = sorted({record["error"]["reason"] for record in found if "error" in record})
    results = sum("edges" in record for record in found)
    folder = space.cache / "replies"
    files = [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []
    modes = sorted({oct(stat.S_IMODE(path.stat().st_mode)) for path in files})
    folder_mode = oct(stat.S_IMODE(folder.stat().st_mode)) if folder.exists() else "none"
    keyed = sum(SECRET.encode() in path.read_bytes() for path in files)
    dspy_files = (
        [path for path in space.dspy_cache.rglob("*") if path.is_file()] if space.dspy_cache.exists() else []
    )
    held = (
        first.returncode == 0
        and down.returncode == 2
        and results == 0
        and reasons == ["connection"]
        and bool(files)
        and modes == ["0o600"]
        and folder_mode == "0o700"
        and keyed == 0
        and not dspy_files
    )
    now = (
        f"dead port: {results} results, {len(found) - results} error lines ({', '.join(reasons)}), exit "
        f"{down.returncode}; `$EDGEWISE_CACHE/replies` {folder_mode}, {len(files)} files, modes "
        f"{', '.join(modes) or 'none'}, {keyed} holding the key; DSPy's cache folder: {len(dspy_files)} files"
    )
    return Probe(
        "3",
        f"`edgewise extract -i in.jsonl -o a.jsonl --api-base MOCK` ({count} lines, cache on), then the same "
        "input with `--api-base http://127.0.0.1:DEAD/v1` (nothing listens)",
        '"done 20, failed 0" against the dead port, with the previous server\'s edges; `~/.dspy_cache` '
        "files 0644, a reply echoing the key stored unmasked",
        now,
        held,
    )


def probe_resume(space: Workspace) -> Probe:
    with MockOpenAIServer(REPLY) as mock:
        outcomes = []
        for name, written, resumed in (("a", 20, ("b", 40)), ("c", 300, ("c", 20))):
            out = space.path(f"p7.{name}.out.jsonl")
            first = write_input(space.path(f"p7.{name}.jsonl"), episodes(written, name))
            assert space.extract(first, out, mock.api_base, "--workers", "8").returncode == 0
            before = out.read_bytes()
            other = write_input(space.path(f"p7.{name}.other.jsonl"), episodes(resumed[1], resumed[0]))
            done = space.extract(other, out, mock.api_base, "--resume")
            outcomes.append((done.returncode, out.read_bytes() == before, last_line(done.stderr)))
    held = all(code == 1 and unchanged for code, unchanged, _ in outcomes)
    now = "; ".join(
        f'{label}: exit {code}, output {"unchanged" if unchanged else "CHANGED"} ("{message}")'
        for label, (code, unchanged, message) in zip(
            ("20 out / other 40 in", "300 out / 20 in"), outcomes, strict=True
        )
    )
    return Probe(
        "7",
        "`edgewise extract -i other.jsonl -o out.jsonl --resume` where out.jsonl answers another input: "
        "20 lines out resumed with another 40-line input; 300 lines out resumed with the first 20 lines",
        "40 lines out, 20 of them with ids not the input's, exit 0; the 300-line output stayed 300 lines, exit 0",
        now.replace(str(space.folder) + "/", ""),
        held,
    )


def report(probes: list[Probe]) -> str:
    rows = "\n".join(
        f"| {probe.number} | {probe.command} | {probe.before} | {probe.now} | {'yes' if probe.held else '**NO**'} |"
        for probe in probes
    )
    return f"""# Security probes of the batch path (1, 2, 3, 7)

Measured by `python benchmarks/security_probe.py`: each probe runs the real CLI in a subprocess against
the mock OpenAI-compatible server (tests/mock_openai.py) on 127.0.0.1, with `EDGEWISE_CACHE` and
`DSPY_CACHEDIR` in a temporary folder. MOCK, REDIRECT and DEAD stand for 127.0.0.1 ports: the mock,
a second mock the crafted program names, and a port where nothing listens. "Before" is what the same
probe gave on earlier code. The service probes (4, 5, 6, 8) are in
`benchmarks/security_probe_service.py`.

| probe | command | before | now | holds |
|---|---|---|---|---|
{rows}
"""


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    probes: list[Probe] = []
    with tempfile.TemporaryDirectory() as folder:
        space = Workspace(Path(folder))
        os.environ["EDGEWISE_CACHE"], os.environ["DSPY_CACHEDIR"] = str(space.cache), str(space.dspy_cache)
        for run in (probe_redirect, probe_parse_failures, probe_cache, probe_resume):
            probes.append(run(space))
            progress(f"probe {probes[-1].number}: {'holds' if probes[-1].held else 'DOES NOT HOLD'}")
    text = report(probes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0 if all(probe.held for probe in probes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
