"""What the benchmark scripts share: their argument parser, progress lines, the checks of a results file,
and the processes they measure: the mock server in a process of its own, `edgewise serve`'s health,
a free port, a process's resident memory.

The scripts run as `python benchmarks/<name>.py`, so this folder is on `sys.path` and they import
this module by its bare name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
HOST: Final = "127.0.0.1"
SEED_REPLY: Final = json.dumps(
    {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Alice",
                "targetEntityName": "Acme",
                "fact": "Alice joined Acme as CTO in March 2024.",
                "validAt": "2024-03",
                "invalidAt": None,
            }
        ]
    }
)
"""The mock's reply to the seed's context object (Alice joined Acme as CTO in March 2024): one edge,
Alice WORKS_AT Acme, which the serve scripts check each answer for."""


def script_parser(doc: str) -> argparse.ArgumentParser:
    """The parser of a script whose module docstring is its `--help`, printed as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def progress(line: str) -> None:
    """One progress line on stderr, shown at once (stdout carries the report)."""
    print(line, file=sys.stderr, flush=True)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an `edgewise extract` results file, in file order."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def id_checks(records: list[dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    """The batch contract read back: input ids missing from the records, ids repeated, and whether the
    records hold exactly the input ids in input order."""
    seen = Counter(record.get("id") for record in records)
    return {
        "lost": sum(1 for id_ in ids if seen[id_] == 0),
        "duplicated": sum(count - 1 for count in seen.values() if count > 1),
        "in_order": [record.get("id") for record in records] == ids,
    }


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


async def wait_healthy(base: str, limit_s: float) -> None:
    """Wait until `edgewise serve` at `base` answers GET /healthz with 200; give up after `limit_s`."""
    import httpx

    give_up = time.monotonic() + limit_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < give_up:
            try:
                if (await client.get(f"{base}/healthz", timeout=1.0)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit(f"edgewise serve did not answer /healthz within {limit_s:g} s")


def percentile(values: list[float], share: float) -> float:
    """The value below which `share` of `values` lie (nearest rank); NaN for no values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def rss_mb(pid: int) -> float | None:
    """The resident memory of process `pid` in MB (1024 x 1024 bytes), from /proc; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


_MOCK_SCRIPT: Final = """
import json, sys
sys.path.insert(0, sys.argv[1])
from mock_openai import FaultRate, MockOpenAIServer
reply, fault_rate, seed, retry_after, slow_seconds = json.loads(sys.argv[2])
faults = FaultRate(fault_rate, seed=seed) if fault_rate else None
server = MockOpenAIServer(reply, faults=faults, retry_after=retry_after, slow_seconds=slow_seconds).start()
print(server.port, flush=True)
for line in sys.stdin:  # each line asks for the fault counts since the last one, and forgets the requests
    print(json.dumps(server.fault_counts()), flush=True)
    server.reset()
server.stop()
"""


class MockProcess:
    """The mock OpenAI-compatible server (tests/mock_openai.py) in a process of its own, so that its
    threads share no interpreter with the process being measured and its record of requests (kept
    until `take_fault_counts`) is not in anyone's memory figure."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.api_base = f"http://{HOST}:{port}/v1"

    def take_fault_counts(self) -> dict[str, int]:
        """Requests by fault kind ("none": a normal reply) since the last call; the mock then forgets them
        and starts its fault schedule again."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("counts\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())


@contextmanager
def mock_process(
    reply: str, *, fault_rate: float = 0.0, seed: int = 0, retry_after: float = 1.0, slow_seconds: float = 5.0
) -> Iterator[MockProcess]:
    """Start the mock server answering `reply`, a share `fault_rate` of requests with an injected fault."""
    settings = json.dumps([reply, fault_rate, seed, retry_after, slow_seconds])
    process = subprocess.Popen(
        [sys.executable, "-c", _MOCK_SCRIPT, str(ROOT / "tests"), settings],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield MockProcess(process, int(process.stdout.readline()))
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_process(process: subprocess.Popen[Any], timeout_s: float = 15.0) -> None:
    """SIGTERM `process` (one this script started), then SIGKILL it if it has not ended within `timeout_s`."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
