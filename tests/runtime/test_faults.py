"""Provider faults: retries with jittered backoff, Retry-After, deadlines, a shared rate limit, the batch
summary, and `--resume` after `kill -9`. HTTP-level tests run the real LM stack against the mock server.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dspy.utils.exceptions import (
    AdapterParseError,
    ContextWindowExceededError,
    LMAuthError,
    LMInvalidRequestError,
    LMProviderError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
)
from fakes import edge, edges_reply
from mock_openai import FaultKind, FaultRate, MockOpenAIServer

from edgewise.cli import main
from edgewise.runtime.faults import (
    DeadlineExceeded,
    RetryPolicy,
    TokenBucket,
    acall_with_retries,
    call_with_retries,
    episode_scope,
    failure_reason,
    is_retryable,
)
from edgewise.runtime.jsonl import ResumeError, resume_point
from edgewise.runtime.lm import LMConfig, build_lm
from edgewise.signatures.extract_edges import ExtractEdges

REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021.", validAt="2021"))
GOOD = {
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
FAST = RetryPolicy(max_retries=3, base_s=0.01, cap_s=0.05)


def _lm(server: MockOpenAIServer, **overrides: Any) -> Any:
    settings: dict[str, Any] = {
        "model": "openai/mock", "api_base": server.api_base, "api_key": "sk-test-key", "cache": False,
        "timeout_s": 0.5, "retry_base_s": 0.01, "retry_cap_s": 0.05,
    }  # fmt: skip
    return build_lm(LMConfig(**(settings | overrides)))


class _Arrivals:
    """A fault policy that also records when each request arrived."""

    def __init__(self, kinds: list[FaultKind | None]) -> None:
        self.kinds, self.times = kinds, []

    def __call__(self, index: int, body: dict[str, Any]) -> FaultKind | None:
        self.times.append(time.monotonic())
        return self.kinds[index] if index < len(self.kinds) else None


# -- policy ------------------------------------------------------------------------------------------


def test_backoff_grows_exponentially_with_jitter_inside_half_to_full_step() -> None:
    policy = RetryPolicy(max_retries=10, base_s=1.0, cap_s=8.0)
    rng = random.Random(7)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 8.0)]:
        waits = [policy.backoff(retry, rng) for _ in range(200)]
        assert all(ceiling / 2 <= wait <= ceiling for wait in waits)
        assert len(set(waits)) == len(waits)  # jittered: no two workers wait the same
        assert abs(sum(waits) / len(waits) - 0.75 * ceiling) < 0.05 * ceiling


def test_retry_after_is_a_minimum_and_a_long_one_ends_the_retries() -> None:
    policy = RetryPolicy(max_retries=3, base_s=1.0, max_retry_after_s=10.0)
    limited = LMRateLimitError("slow down", retry_after=2.5)
    waits = [policy.delay(limited, 0, random.Random(i)) for i in range(50)]
    assert all(wait is not None and 2.5 <= wait <= 2.75 for wait in waits)
    assert policy.delay(LMRateLimitError("later", retry_after=600), 0) is None
    assert policy.delay(LMServerError("boom"), 3) is None  # --max-retries reached
    assert policy.delay(LMAuthError("bad key"), 0) is None


@pytest.mark.parametrize(
    ("error", "retryable", "reason"),
    [
        (LMRateLimitError("x", status=429), True, "rate_limited"),
        (LMServerError("x", status=500), True, "server_error"),
        (LMTimeoutError("x"), True, "timeout"),
        (LMTransportError("server closed connection"), True, "connection"),
        (LMProviderError("reply is not JSON", status=200), True, "invalid_response"),
        (LMProviderError("teapot", status=418), False, "provider_error"),
        (LMAuthError("x", status=200), False, "auth"),
        (ContextWindowExceededError(), False, "context_window"),
        (LMInvalidRequestError("x", status=400), False, "provider_rejected_request"),
        (AdapterParseError("JSONAdapter", ExtractEdges, "x"), False, "parse"),
        (DeadlineExceeded(1.0, 2, 1), False, "deadline"),
        (ValueError("bug"), False, "internal_error"),
    ],
)
def test_classification_of_failures(error: Exception, retryable: bool, reason: str) -> None:
    assert is_retryable(error) is retryable
    assert failure_reason(error) == reason


def test_read_timeout_inside_a_transport_error_is_a_timeout() -> None:
    class ReadTimeout(Exception):
        pass

    error = LMTransportError("read timed out")
    error.__cause__ = ReadTimeout()
    assert failure_reason(error) == "timeout"


def test_call_with_retries_stops_at_max_retries_and_counts_each_retry() -> None:
    calls: list[int] = []
    sleeps: list[float] = []

    def send() -> str:
        calls.append(1)
        raise LMServerError("down", status=503)

    with episode_scope() as stats, pytest.raises(LMServerError):
        call_with_retries(send, FAST, sleep=sleeps.append)
    assert len(calls) == 4 and len(sleeps) == 3
    assert stats.requests == 4 and stats.retry_reasons == Counter(server_error=3)


def test_a_non_retryable_failure_is_raised_at_once() -> None:
    calls: list[int] = []

    def send() -> str:
        calls.append(1)
        raise LMAuthError("bad key", status=401)

    with pytest.raises(LMAuthError):
        call_with_retries(send, FAST, sleep=lambda _s: None)
    assert len(calls) == 1


def _call_on(path: str, send: Callable[[], str], policy: RetryPolicy) -> str:
    """`send` through the threaded or the asyncio retry path, inside the caller's episode scope."""
    if path == "sync":
        return call_with_retries(send, policy, sleep=lambda _s: None)

    async def send_async() -> str:
        return send()

    return asyncio.run(acall_with_retries(send_async, policy))


def _failing(*errors: Exception) -> tuple[Callable[[], str], list[int]]:
    """A `send` that raises `errors` in turn, then answers "reply"; and the list of its calls."""
    calls: list[int] = []

    def send() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "reply"

    return send, calls


@pytest.mark.parametrize("path", ["sync", "async"])
def test_both_paths_retry_and_count_the_same(path: str) -> None:
    send, calls = _failing(LMServerError("down", status=503), LMTransportError("connection reset"))
    with episode_scope() as stats:
        assert _call_on(path, send, FAST) == "reply"
    assert len(calls) == 3
    assert stats.requests == 3 and stats.retry_reasons == Counter(server_error=1, connection=1)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_retry_that_would_end_past_the_deadline_is_not_attempted(path: str) -> None:
    clock = _Clock()
    send, calls = _failing(LMRateLimitError("slow down", retry_after=2.0))
    with episode_scope(1.0, clock=clock) as stats, pytest.raises(DeadlineExceeded) as caught:
        _call_on(path, send, FAST)
    assert len(calls) == 1 and stats.retries == 0
    assert isinstance(caught.value.__cause__, LMRateLimitError)


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_retry_after_over_the_limit_ends_the_retries_with_the_failure_itself(path: str) -> None:
    send, calls = _failing(LMRateLimitError("come back in an hour", retry_after=3600))
    with episode_scope(10.0) as stats, pytest.raises(LMRateLimitError):
        _call_on(path, send, FAST)
    assert len(calls) == 1 and stats.retries == 0


@pytest.mark.parametrize("path", ["sync", "async"])
def test_retries_run_out_before_the_deadline_is_consulted(path: str) -> None:
    """The last failure is raised as itself, not as a deadline, when no retry was left anyway."""
    clock = _Clock()
    send, calls = _failing(*[LMRateLimitError("slow down", retry_after=2.0)] * 4)
    with episode_scope(1.0, clock=clock), pytest.raises(LMRateLimitError):
        _call_on(path, send, RetryPolicy(max_retries=0))
    assert len(calls) == 1


def test_token_bucket_spaces_requests_at_the_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=4.0, burst=2, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 0.25, 0.5]
    now[0] = 10.0  # idle: the bucket refills to its burst, no more
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.25]
    with pytest.raises(ValueError):
        TokenBucket(rate=0)


def test_token_bucket_is_shared_by_threads() -> None:
    bucket = TokenBucket(rate=1000.0, burst=1)
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(50):
            wait = bucket.reserve()
            with lock:
                waits.append(wait)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 200 reservations at 1000/s: the last waits about 0.2 s; no two share a slot
    assert max(waits) == pytest.approx(0.199, abs=0.02)
    assert len({round(wait, 6) for wait in waits if wait > 0}) == len([w for w in waits if w > 0])


# -- over HTTP ---------------------------------------------------------------------------------------


def test_500_drop_and_invalid_json_are_retried_and_counted() -> None:
    with MockOpenAIServer(REPLY, faults=["500", "drop", "invalid_json", None]) as server:
        lm = _lm(server)
        with episode_scope() as stats:
            assert lm("hi") == [REPLY]
        assert len(server.served) == 4
    assert stats.requests == 4
    assert stats.retry_reasons == Counter(server_error=1, connection=1, invalid_response=1)


def test_async_calls_retry_the_same_way() -> None:
    async def call(lm: Any) -> tuple[Any, Counter[str]]:
        with episode_scope() as stats:
            return await lm.acall("hi"), stats.retry_reasons

    with MockOpenAIServer(REPLY, faults=["429", "500", None], retry_after=0.05) as server:
        reply, reasons = asyncio.run(call(_lm(server)))
        assert len(server.served) == 3
    assert reply == [REPLY] and reasons == Counter(rate_limited=1, server_error=1)


def test_retries_are_bounded_by_max_retries() -> None:
    with MockOpenAIServer(REPLY, faults=["500"] * 10) as server:
        lm = _lm(server, num_retries=2)
        with pytest.raises(LMServerError):
            lm("hi")
        assert len(server.served) == 3


def test_retry_after_from_the_provider_is_honoured() -> None:
    arrivals = _Arrivals(["429", "429", None])
    with MockOpenAIServer(REPLY, faults=arrivals, retry_after=0.3) as server:
        lm = _lm(server)
        assert lm("hi") == [REPLY]
    gaps = [later - earlier for earlier, later in zip(arrivals.times, arrivals.times[1:])]
    assert len(gaps) == 2 and all(0.3 <= gap < 0.6 for gap in gaps)


def test_a_slow_reply_past_the_timeout_is_retried() -> None:
    with MockOpenAIServer(REPLY, faults=["slow", None], slow_seconds=3) as server:
        lm = _lm(server, timeout_s=0.3)
        with episode_scope() as stats:
            assert lm("hi") == [REPLY]
    assert stats.retry_reasons == Counter(timeout=1)


def test_deadline_stops_before_a_wait_that_would_pass_it() -> None:
    with MockOpenAIServer(REPLY, faults=["429", None], retry_after=2) as server:
        lm = _lm(server)
        started = time.monotonic()
        with episode_scope(0.5), pytest.raises(DeadlineExceeded) as caught:
            lm("hi")
        assert time.monotonic() - started < 0.5  # failed at once, did not sleep 2 s first
        assert len(server.served) == 1
    assert isinstance(caught.value.__cause__, LMRateLimitError)
    assert failure_reason(caught.value) == "deadline"


def test_max_rps_limits_requests_retries_included() -> None:
    arrivals = _Arrivals(["500", None, None, None, None, None])
    with MockOpenAIServer(REPLY, faults=arrivals) as server:
        lm = _lm(server, max_rps=10.0)
        for _ in range(5):
            lm("hi")
    assert len(arrivals.times) == 6
    assert arrivals.times[-1] - arrivals.times[0] >= 0.45  # 6 requests at 10/s, the first free


# -- the batch: output, summary, deadline, parse failures --------------------------------------------


def _extract(
    tmp_path: Path, lines: list[dict[str, Any]], server: MockOpenAIServer, *extra: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    code = main([
        "extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", server.api_base,
        "--no-progress", "--no-cache", "--timeout", "0.5", "--retry-backoff", "0.01", "--summary-json",
        str(summary), *extra,
    ])  # fmt: skip
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == (2 if any("error" in record for record in records) else 0)  # 2: some lines failed
    return records, json.loads(summary.read_text())


def test_batch_under_faults_loses_nothing_and_counts_retries_as_the_server_saw_them(tmp_path, capsys) -> None:
    lines = [{**GOOD, "id": f"ep-{i}"} for i in range(40)]
    faults = FaultRate(0.3, kinds=("500", "429", "drop", "invalid_json"), seed=3)
    with MockOpenAIServer(REPLY, faults=faults, retry_after=0.01) as server:
        records, summary = _extract(tmp_path, lines, server, "--workers", "4", "--max-retries", "6")
        served = server.fault_counts()
    assert [r["id"] for r in records] == [f"ep-{i}" for i in range(40)]
    faulted = sum(count for kind, count in served.items() if kind != "none")
    assert faulted > 0
    assert summary["requests"] == sum(served.values())
    assert summary["retriesTotal"] == faulted - sum(
        1 for r in records if "error" in r
    )  # every fault was retried except each failed episode's last one
    assert summary["done"] + summary["failedTotal"] == 40 == summary["lines"]
    assert f"retried {summary['retriesTotal']} model requests" in capsys.readouterr().err


def test_failed_episode_line_says_why(tmp_path) -> None:
    with MockOpenAIServer(REPLY, faults=["500", "500", None]) as server:
        records, summary = _extract(tmp_path, [GOOD, GOOD], server, "--max-retries", "1")
    assert records[0]["error"]["kind"] == "lm" and records[0]["error"]["reason"] == "server_error"
    assert "edges" in records[1]
    assert summary["failed"] == {"server_error": 1} and summary["retries"] == {"server_error": 1}


def test_episode_over_its_deadline_fails_with_reason_deadline(tmp_path) -> None:
    with MockOpenAIServer(REPLY, latency=0.4) as server:
        records, summary = _extract(tmp_path, [GOOD], server, "--episode-timeout", "0.2")
    assert records[0]["error"]["reason"] == "deadline"
    assert "--episode-timeout" in records[0]["error"]["message"]
    assert summary["failed"] == {"deadline": 1}


def test_schema_breaking_reply_goes_through_repair_then_is_retried_then_is_a_parse_failure(tmp_path) -> None:
    fenced = "```json\n" + REPLY[:-1] + ",}\n```"  # fences and a trailing comma: the adapter repairs it
    replies = iter([fenced, REPLY, REPLY, REPLY, REPLY])
    faults = [None, "schema_break", None, "schema_break", "schema_break"]
    with MockOpenAIServer(lambda _body: next(replies), faults=faults) as server:
        records, summary = _extract(tmp_path, [GOOD, GOOD, GOOD], server, "--workers", "1")
    assert len(records[0]["edges"]) == 1 and records[0]["parseFailures"] == 0
    assert len(records[1]["edges"]) == 1 and records[1]["usage"]["extract"]["calls"] == 2  # retried once
    assert records[2]["error"]["reason"] == "parse_failure" and "edges" not in records[2]
    assert summary["done"] == 2 and summary["failed"] == {"parse_failure": 1}


def test_invalid_input_lines_are_failures_with_their_own_reason(tmp_path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"id": [1]}\n\xff\n' + json.dumps(GOOD).encode() + b"\n")
    out = tmp_path / "out.jsonl"
    with MockOpenAIServer(REPLY) as server:
        assert main(["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base",
                     server.api_base, "--no-progress"]) == 2  # fmt: skip
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["error"]["reason"] for r in records[:2]] == ["invalid_input", "invalid_input"]
    assert records[0]["error"]["field"] == "id"
    assert "edges" in records[2]


# -- resume ------------------------------------------------------------------------------------------


def test_resume_point_refuses_a_broken_line_before_the_last(tmp_path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"line": 1}\nnot json\n{"line": 3}\n')
    with pytest.raises(ResumeError, match="line 2"):
        resume_point(out)
    assert out.read_text().count("\n") == 3  # nothing truncated
    out.write_text('{"line": 1}\n{"line": 5}\n')
    with pytest.raises(ResumeError, match="input line 5"):
        resume_point(out)


def test_kill_9_mid_run_then_resume_gives_every_id_once_in_order(tmp_path) -> None:
    total = 60
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({**GOOD, "id": f"ep-{i}"}) + "\n" for i in range(total)))
    args = ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--no-progress", "--no-cache",
            "--workers", "3"]  # fmt: skip
    with MockOpenAIServer(REPLY, latency=0.03) as server:
        child = subprocess.Popen(
            [sys.executable, "-m", "edgewise", *args, "--api-base", server.api_base],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and (not out.exists() or out.read_bytes().count(b"\n") < 10):
                time.sleep(0.02)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=10)
        written = out.read_bytes().count(b"\n")
        assert 10 <= written < total, "the run was not killed mid-way"
        with open(out, "ab") as handle:  # what a kill inside a write leaves: a cut last line
            handle.write(b'{"id": "ep-' + str(written).encode() + b'", "line": ' + str(written + 1).encode())
        server.reset()
        assert main([*args, "--api-base", server.api_base, "--resume"]) == 0
        resumed_requests = len(server.served)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == [f"ep-{i}" for i in range(total)]
    assert [r["line"] for r in records] == list(range(1, total + 1))
    assert all("edges" in r for r in records)
    assert resumed_requests == total - written  # nothing done twice after the resume point


class _Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_deadline_starts_with_the_first_model_request_not_with_the_episode() -> None:
    """Warm-up before the first request (imports, client set-up) never counts against --episode-timeout."""
    clock = _Clock()
    with episode_scope(0.5, clock=clock) as stats:
        clock.now += 3.0  # the run's warm-up: longer than the whole deadline
        assert call_with_retries(lambda: "reply", RetryPolicy(max_retries=0)) == "reply"
        assert (stats.started, stats.requests) == (103.0, 1)
        clock.now += 0.4
        stats.check()  # 0.4 s since the first request: still inside the deadline
        clock.now += 0.2
        with pytest.raises(DeadlineExceeded, match="after 1 model requests"):
            call_with_retries(lambda: "late", RetryPolicy(max_retries=0))
