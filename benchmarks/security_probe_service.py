"""Probes of `edgewise serve` as a hostile or careless client runs them, against the mock on 127.0.0.1.

Each probe starts the real CLI (`python -m edgewise serve ...`) in a process of its own, backed by the
mock OpenAI-compatible server (tests/mock_openai.py) in this process, and prints one row: the probe,
its command, what it does, what happened, and whether that is what the service must do.

4. Slow clients: 300 connections that send half a request head and wait, then `GET /healthz` and a
   `POST /v1/extract` on a new connection; the same under `ulimit -n 256`; the half-sent connections
   closed once `--read-timeout` passes; a body that stops halfway answered 408.
5. A model that never answers, `--workers 1`: one request answered 503 within `--request-timeout`
   plus 1 s (`request_timeout`, or `timeout` when the model request's own timeout, lowered to the
   same, ends first); three clients that hang up, then a fourth request answered within its
   deadline (and at once, 200, when the model answers it); a full queue answered 503 `overloaded`
   with `Retry-After` at once.
6. SIGTERM with one request running and two queued: every client gets a JSON 503 `shutting_down`
   (the queued ones at once, the running one after `--shutdown-timeout`), the process exits within
   the timeout plus a few seconds, and its log holds no traceback.
8. An empty or short `EDGEWISE_API_TOKEN` refused at start; JSON nested 990 deep and an integer of
   4,301 digits answered 422; `referenceTime` `0001-01-01T00:00:00+22:29` answered 422 naming the
   field, and refused by the pattern `/openapi.json` gives the field.

    python benchmarks/security_probe_service.py                 # prints the table
    python benchmarks/security_probe_service.py --out results.md
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, NamedTuple

import httpx
from harness import HOST, ROOT, free_port, progress, script_parser, stop_process, wait_healthy

sys.path.insert(0, str(ROOT / "tests"))
from mock_openai import MockOpenAIServer

TOKEN: Final = "probe-token-0123456789abcdef"
HALF_OPEN: Final = 300
HALF_HEAD: Final = b"GET /healthz HTTP/1.1\r\nHost: probe\r\nX-Slow: "
READ_TIMEOUT_S: Final = 3.0
REQUEST_TIMEOUT_S: Final = 5.0
SHUTDOWN_TIMEOUT_S: Final = 3.0
HANG_S: Final = 3600.0
EPISODE: Final = {
    "episodeContent": "Alice joined Acme in 2021.",
    "nodes": ["Alice", "Acme"],
    "referenceTime": "2025-01-01T00:00:00Z",
}
REPLY: Final = json.dumps({"edges": []})
AUTH: Final = {"Authorization": f"Bearer {TOKEN}"}
# A request the model never answers: past --request-timeout, or by the model request's own timeout
# (--timeout, lowered to --request-timeout), whichever the service sees first.
TIMED_OUT: Final = ("503 request_timeout", "503 timeout")


class Probe(NamedTuple):
    """One row of the report."""

    number: str
    command: str
    does: str
    result: str
    held: bool


class Model:
    """The mock model, answering at once or never (`hang`), switched between probes."""

    def __init__(self) -> None:
        self.hang = False
        self.hang_next = 0  # hang this many more requests, then answer
        self._lock = threading.Lock()
        self.server = MockOpenAIServer(REPLY, faults=self._fault, slow_seconds=HANG_S)

    def _fault(self, _index: int, _body: dict[str, Any]) -> str | None:
        with self._lock:
            if self.hang_next > 0:
                self.hang_next -= 1
                return "slow"
        return "slow" if self.hang else None


class Service:
    """`edgewise serve` in a process of its own, its stderr in a file."""

    def __init__(
        self, folder: Path, api_base: str, *flags: str, ulimit: int | None = None, token: str = TOKEN
    ):
        self.port = free_port()
        self.base = f"http://{HOST}:{self.port}"
        self.flags = flags
        self.log_path = folder / f"serve-{self.port}.log"
        command = [
            sys.executable, "-m", "edgewise", "serve", "--port", str(self.port), "--model", "openai/mock",
            "--api-base", api_base, "--api-key", "sk-probe", "--no-cache", "--max-retries", "0",
            "--log-level", "warning", *flags,
        ]  # fmt: skip
        if ulimit is not None:
            command = ["bash", "-c", f'ulimit -n {ulimit} && exec "$0" "$@"', *command]
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "EDGEWISE_API_TOKEN": token, "DSPY_CACHEDIR": str(folder / "dspy-cache")}
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=self.log, env=env, cwd=folder
        )

    def start(self) -> Service:
        import asyncio

        asyncio.run(wait_healthy(self.base, 120.0))
        return self

    def stop(self) -> str:
        stop_process(self.process)
        self.log.close()
        return self.log_path.read_text(errors="replace")

    def command(self) -> str:
        return "edgewise serve --model openai/mock --api-base MOCK " + " ".join(self.flags)


@contextmanager
def service(folder: Path, api_base: str, *flags: str, ulimit: int | None = None) -> Iterator[Service]:
    running = Service(folder, api_base, *flags, ulimit=ulimit)
    try:
        yield running.start()
    finally:
        running.stop()


def half_open(port: int, count: int) -> list[socket.socket]:
    """`count` connections, each with half a request head sent and nothing more."""
    held = []
    for _ in range(count):
        connection = socket.create_connection((HOST, port), timeout=5)
        connection.sendall(HALF_HEAD)
        held.append(connection)
    return held


def closed_by_server(connections: list[socket.socket]) -> int:
    closed = 0
    for connection in connections:
        connection.setblocking(False)
        try:
            closed += connection.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def timed(call: Callable[[], httpx.Response]) -> tuple[str, float]:
    """`status reason` (or the error) and the seconds `call` took."""
    started = time.monotonic()
    try:
        response = call()
        outcome = f"{response.status_code}"
        if response.headers.get("content-type", "").startswith("application/json"):
            error = response.json().get("error") if isinstance(response.json(), dict) else None
            if error:
                outcome += f" {error['reason']}"
        if "retry-after" in response.headers:
            outcome += f" (Retry-After {response.headers['retry-after']})"
    except httpx.HTTPError as error:
        outcome = type(error).__name__
    return outcome, time.monotonic() - started


def extract(base: str, timeout: float = 30.0, body: bytes | None = None) -> httpx.Response:
    content = body if body is not None else json.dumps(EPISODE).encode()
    headers = {**AUTH, "content-type": "application/json"}
    return httpx.post(f"{base}/v1/extract", content=content, headers=headers, timeout=timeout)


def healthz(base: str) -> httpx.Response:
    return httpx.get(f"{base}/healthz", timeout=10.0)


def hang_up(port: int, after_s: float) -> None:
    """Send a whole request, then close the connection before any answer."""
    body = json.dumps(EPISODE).encode()
    with socket.create_connection((HOST, port), timeout=5) as connection:
        connection.sendall(
            b"POST /v1/extract HTTP/1.1\r\nHost: probe\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        time.sleep(after_s)


def slow_body(port: int) -> tuple[str, float]:
    """A POST whose body stops halfway: the answer's status line and the seconds it took."""
    started = time.monotonic()
    with socket.create_connection((HOST, port), timeout=READ_TIMEOUT_S + 10) as connection:
        connection.sendall(
            b"POST /v1/extract HTTP/1.1\r\nHost: probe\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n".encode()
            + b'{"episodeContent": '
        )
        reply = b""
        while chunk := connection.recv(65536):  # the 408 closes the connection
            reply += chunk
    line = reply.split(b"\r\n", 1)[0].decode(errors="replace")
    reason = re.search(rb'"reason":\s*"(\w+)"', reply)
    return f"{line} {reason.group(1).decode() if reason else ''}".strip(), time.monotonic() - started


def probe_slow_clients(folder: Path, model: Model, ulimit: int | None) -> Probe:
    flags = ("--read-timeout", f"{READ_TIMEOUT_S:g}")
    with service(folder, model.server.api_base, *flags, ulimit=ulimit) as served:
        held = half_open(served.port, HALF_OPEN)
        try:
            health, health_s = timed(lambda: healthz(served.base))
            extracted, extract_s = timed(lambda: extract(served.base))
            time.sleep(READ_TIMEOUT_S + 1.5)
            closed = closed_by_server(held)
        finally:
            for connection in held:
                connection.close()
        body, body_s = slow_body(served.port)
        log = served.stop()
    emfile = log.count("Too many open files")
    fine = (
        health == "200"
        and health_s < 1.0
        and extracted == "200"
        and extract_s < 2.0
        and closed == HALF_OPEN
        and body.startswith("HTTP/1.1 408")
        and body.endswith("read_timeout")
        and emfile == 0
    )
    limit = f"`ulimit -n {ulimit}`; " if ulimit else ""
    return Probe(
        "4" + (" (ulimit)" if ulimit else ""),
        f"{limit}`{served.command()}`; {HALF_OPEN} connections send `GET /healthz HTTP/1.1` and half a header, "
        "then wait",
        "time `GET /healthz` and `POST /v1/extract` on a new connection while the half-sent ones wait; "
        "count the half-sent ones the server has closed after --read-timeout; a body that stops halfway",
        f"/healthz {health} in {health_s:.3f} s; /v1/extract {extracted} in {extract_s:.3f} s; "
        f"{closed} of {HALF_OPEN} half-sent connections closed by the server {READ_TIMEOUT_S + 1.5:g} s later; "
        f"half a body: {body} after {body_s:.1f} s; 'Too many open files' in the log: {emfile}",
        fine,
    )


def probe_deadline(folder: Path, model: Model) -> list[Probe]:
    flags = ("--workers", "1", "--max-queue", "2", "--request-timeout", f"{REQUEST_TIMEOUT_S:g}")
    rows = []
    with service(folder, model.server.api_base, *flags) as served:
        model.hang = True
        alone, alone_s = timed(lambda: extract(served.base))
        time.sleep(REQUEST_TIMEOUT_S)  # the abandoned model request ends by its own timeout
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda _: hang_up(served.port, 0.5), range(3)))
        fourth, fourth_s = timed(lambda: extract(served.base))
        time.sleep(REQUEST_TIMEOUT_S)
        model.hang = False
        model.hang_next = 1
        asked = len(model.server.served)
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda _: hang_up(served.port, 0.5), range(3)))
        time.sleep(0.5)
        abandoned_requests = len(model.server.served) - asked
        answered, answered_s = timed(lambda: extract(served.base))
        time.sleep(REQUEST_TIMEOUT_S)
        model.hang = True
        with ThreadPoolExecutor(4) as pool:
            waiting = [pool.submit(timed, lambda: extract(served.base)) for _ in range(3)]
            time.sleep(0.5)
            full, full_s = timed(lambda: extract(served.base))
            admitted = [future.result() for future in waiting]
        model.hang = False
        log = served.stop()
    bound = REQUEST_TIMEOUT_S + 1
    command = f"`{served.command()}`, a model that never answers"
    rows.append(
        Probe(
            "5",
            command,
            "one request; then 3 clients that send a request and hang up after 0.5 s, then a 4th request",
            f"one request: {alone} in {alone_s:.2f} s; the 4th after 3 hung up: {fourth} in {fourth_s:.2f} s",
            alone in TIMED_OUT and alone_s < bound and fourth in TIMED_OUT and fourth_s < bound,
        )
    )
    rows.append(
        Probe(
            "5",
            f"`{served.command()}`, a model that never answers its first request and answers the others",
            "3 clients that send a request and hang up after 0.5 s, then a 4th request",
            f"the 4th: {answered} in {answered_s:.2f} s; model requests made for the 3 that hung up: "
            f"{abandoned_requests} (a queued one runs if a worker frees before its hang-up is seen)",
            answered == "200" and answered_s < 2.0,
        )
    )
    statuses = ", ".join(f"{outcome} in {seconds:.2f} s" for outcome, seconds in admitted)
    rows.append(
        Probe(
            "5",
            command,
            "4 requests at once: 1 runs, 2 wait (--max-queue 2), the 4th finds the queue full",
            f"the 4th: {full} in {full_s:.2f} s; the others: {statuses}; tracebacks in the log: "
            f"{log.count('Traceback')}",
            full.startswith("503 overloaded (Retry-After")
            and full_s < 1.0
            and all(outcome in TIMED_OUT and seconds < bound for outcome, seconds in admitted)
            and "Traceback" not in log,
        )
    )
    return rows


def probe_sigterm(folder: Path, model: Model) -> Probe:
    flags = ("--workers", "1", "--shutdown-timeout", f"{SHUTDOWN_TIMEOUT_S:g}")
    served = Service(folder, model.server.api_base, *flags).start()
    model.hang = True

    def one() -> tuple[str, float, str]:
        started = time.monotonic()
        try:
            response = extract(served.base, timeout=60)
            kind = response.headers.get("content-type", "")
            reason = response.json()["error"]["reason"] if kind.startswith("application/json") else "not JSON"
            return f"{response.status_code} {reason}", time.monotonic() - started, kind
        except httpx.HTTPError as error:
            return type(error).__name__, time.monotonic() - started, ""

    with ThreadPoolExecutor(3) as pool:
        clients = [pool.submit(one) for _ in range(3)]
        time.sleep(1.0)
        stopped = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        answers = [future.result() for future in clients]
        try:
            served.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        exit_s = time.monotonic() - stopped
    log = served.stop()
    model.hang = False
    code = served.process.returncode
    summary = ", ".join(f"{outcome} after {seconds - 1.0:.2f} s" for outcome, seconds, _ in answers)
    fine = (
        all(outcome == "503 shutting_down" for outcome, _, _ in answers)
        and exit_s < SHUTDOWN_TIMEOUT_S + 5
        and "Traceback" not in log
        and "CancelledError" not in log
    )
    return Probe(
        "6",
        f"`{served.command()}`, a model that never answers; 3 requests, then `kill -TERM` 1 s later",
        "the answers the 3 clients get (1 running, 2 queued), the time to exit, the log",
        f"answers (from the signal): {summary}; exit {code} {exit_s:.2f} s after the signal; tracebacks in "
        f"the log: {log.count('Traceback')}",
        fine,
    )


def probe_tokens(folder: Path, model: Model) -> Probe:
    results = []
    for token in ("", "short-token"):
        started = Service(folder, model.server.api_base, token=token)
        code = started.process.wait(timeout=120)
        text = started.stop().strip().splitlines()
        results.append((token, code, text[-1] if text else ""))
    fine = all(code == 1 and "EDGEWISE_API_TOKEN" in line for _, code, line in results)
    return Probe(
        "8",
        "`EDGEWISE_API_TOKEN= edgewise serve ...`; `EDGEWISE_API_TOKEN=short-token edgewise serve ...`",
        "start the service with an empty token, and with one of 11 characters",
        "; ".join(f"{json.dumps(token)}: exit {code}, `{line}`" for token, code, line in results),
        fine,
    )


def probe_bodies(folder: Path, model: Model) -> Probe:
    deep = b'{"episodeContent": "x", "nodes": ["A", "B"], "referenceTime": "2025-01-01T00:00:00Z", "x": ' + (
        b"[" * 990 + b"]" * 990 + b"}"
    )
    digits = (
        b'{"episodeContent": "x", "nodes": ["A", "B"], "referenceTime": "2025-01-01T00:00:00Z", "x": '
        + (b"9" * 4301 + b"}")
    )
    late = json.dumps({**EPISODE, "referenceTime": "0001-01-01T00:00:00+22:29"}).encode()
    with service(folder, model.server.api_base) as served:
        answers = {
            name: extract(served.base, body=body) for name, body in (("deep", deep), ("digits", digits))
        }
        time_answer = extract(served.base, body=late)
        pattern = (
            httpx.get(f"{served.base}/openapi.json", timeout=10)
            .json()["components"]["schemas"]["Episode"]["properties"]["referenceTime"]
            .get("pattern")
        )
    fields = [problem["field"] for problem in time_answer.json()["error"]["fields"]]
    schema_refuses = pattern is not None and re.match(pattern, "0001-01-01T00:00:00+22:29") is None
    fine = (
        all(answer.status_code == 422 for answer in answers.values())
        and time_answer.status_code == 422
        and fields == ["referenceTime"]
        and schema_refuses
    )
    parts = [
        f"{name}: {answer.status_code} {answer.json()['error']['reason']}" for name, answer in answers.items()
    ]
    return Probe(
        "8",
        f"`{served.command()}`; POST /v1/extract with JSON nested 990 deep, with an integer of 4,301 "
        "digits, with `referenceTime` `0001-01-01T00:00:00+22:29`",
        "the answers, and whether /openapi.json's `referenceTime` pattern refuses that time too",
        "; ".join(parts)
        + f"; the time: {time_answer.status_code} on {fields}; the document's pattern `{pattern}` refuses it: "
        f"{'yes' if schema_refuses else 'no'}",
        fine,
    )


def table(rows: list[Probe]) -> str:
    lines = ["| probe | command | what it does | result | holds |", "|---|---|---|---|---|"]
    for row in rows:
        cells = [row.number, row.command, row.does, row.result, "yes" if row.held else "**no**"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__ or "")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    rows: list[Probe] = []
    model = Model()
    with tempfile.TemporaryDirectory(prefix="edgewise-probe-") as folder, model.server:
        where = Path(folder)
        for name, run in (
            ("4: slow clients", lambda: [probe_slow_clients(where, model, None)]),
            ("4: slow clients, ulimit -n 256", lambda: [probe_slow_clients(where, model, 256)]),
            ("5: deadline, cancellation, queue", lambda: probe_deadline(where, model)),
            ("6: SIGTERM", lambda: [probe_sigterm(where, model)]),
            ("8: tokens", lambda: [probe_tokens(where, model)]),
            ("8: bodies", lambda: [probe_bodies(where, model)]),
        ):
            progress(f"probe {name}")
            rows.extend(run())
    report = table(rows)
    print(report, end="")
    if args.out is not None:
        args.out.write_text(report)
    return 0 if all(row.held for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
