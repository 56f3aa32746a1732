"""`edgewise extract --resume` runs the kept error lines again, when their failure may pass.

A line that failed for a reason with a 5xx status (a reply that could not be parsed, a timeout, a
rate limit, a server error, a dropped connection) is run again before the rest of the input, and its
new line takes its place in one rename; an input error would fail the same way and is kept as it is.
Every other kept line stays byte for byte, and a run killed while rerunning leaves the output as it was.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer, prompt_text

from edgewise.cli import EXIT_OK, EXIT_SOME_FAILED, main
from edgewise.domain.errors import REASONS
from edgewise.runtime.jsonl import OutputClaimError, claim_output, retryable

FACT: Final = "Alice joined Acme Corp in 2021."
REPLY: Final = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", FACT, validAt="2021"))
BROKEN: Final = "Sure! Here are the edges: none"
MARK: Final = "[unreadable]"  # the first mock answers an episode with this in its text unparseably


def _episode(episode_id: str, *, broken: bool = False) -> dict[str, Any]:
    return {
        "id": episode_id,
        "episodeContent": FACT + (f" {MARK}" if broken else f" ({episode_id})"),
        "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
        "referenceTime": "2025-04-30T00:00:00Z",
    }


NOT_AN_EPISODE: Final = {"id": "no-entities", "episodeContent": FACT, "referenceTime": "2025-04-30T00:00:00Z"}


def _unreadable_when_marked(body: dict[str, Any]) -> str:
    """Every reply to a marked episode is unparseable (its retry too): the line ends as parse_failure."""
    return BROKEN if MARK in prompt_text(body) else REPLY


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _extract(source: Path, out: Path, api_base: str, *extra: str) -> int:
    return main(
        ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", api_base,
         "--max-retries", "0", "--no-progress", "--no-cache", *extra]
    )  # fmt: skip


def _lines(out: Path) -> list[bytes]:
    return out.read_bytes().splitlines(keepends=True)


def _reasons(out: Path) -> list[str | None]:
    return [(json.loads(raw).get("error") or {}).get("reason") for raw in _lines(out)]


@pytest.fixture
def failed_run(tmp_path: Path) -> tuple[Path, Path, list[bytes]]:
    """A finished run of 6 episodes, 2 of them parse failures (lines 2 and 5); its input and output."""
    episodes = [_episode(f"ep-{i}", broken=i in (1, 4)) for i in range(6)]
    source, out = _write(tmp_path / "in.jsonl", episodes), tmp_path / "out.jsonl"
    with MockOpenAIServer(_unreadable_when_marked) as server:
        assert _extract(source, out, server.api_base) == EXIT_SOME_FAILED
        asked = [prompt_text(body) for body in server.requests]
    assert _reasons(out) == [None, "parse_failure", None, None, "parse_failure", None]
    assert sum(MARK in text for text in asked) == 4  # each unreadable reply was asked for again
    return source, out, _lines(out)


def test_resume_replaces_exactly_the_error_lines_then_goes_on(
    failed_run: tuple[Path, Path, list[bytes]], tmp_path: Path
) -> None:
    source, out, before = failed_run
    more = [_episode("ep-6"), _episode("ep-7")]
    with open(source, "a") as handle:  # the input goes on past the kept output
        handle.write("".join(json.dumps(line) + "\n" for line in more))
    summary = tmp_path / "summary.json"
    with MockOpenAIServer(REPLY) as healthy:
        assert _extract(source, out, healthy.api_base, "--resume", "--summary-json", str(summary)) == EXIT_OK
        asked = len(healthy.requests)
    after = _lines(out)
    assert asked == 2 + 2  # the two error lines, then the two new lines; no kept result asked again
    assert [json.loads(raw)["id"] for raw in after] == [f"ep-{i}" for i in range(8)]
    assert [json.loads(raw)["line"] for raw in after] == list(range(1, 9))
    assert _reasons(out) == [None] * 8
    assert [after[i] for i in (0, 2, 3, 5)] == [before[i] for i in (0, 2, 3, 5)]  # byte for byte
    for number in (1, 4):
        assert [found["fact"] for found in json.loads(after[number])["edges"]] == [FACT]
    counted = json.loads(summary.read_text())
    assert (counted["lines"], counted["done"], counted["rerun"], counted["resumedAfter"]) == (4, 4, 2, 6)
    assert counted["failedTotal"] == 0 and counted["resumedFailed"] == {}
    assert not [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")]


def test_an_error_line_that_fails_again_is_an_error_line_again(
    failed_run: tuple[Path, Path, list[bytes]],
) -> None:
    source, out, before = failed_run
    with MockOpenAIServer(_unreadable_when_marked) as still_broken:
        assert _extract(source, out, still_broken.api_base, "--resume") == EXIT_SOME_FAILED
        assert len(still_broken.requests) == 2 * 2  # each error line asked for twice again, nothing else
    assert _reasons(out) == [None, "parse_failure", None, None, "parse_failure", None]
    assert [_lines(out)[i] for i in (0, 2, 3, 5)] == [before[i] for i in (0, 2, 3, 5)]


def test_an_input_error_line_is_not_run_again(tmp_path: Path) -> None:
    lines = [_episode("ep-0"), NOT_AN_EPISODE, _episode("ep-2", broken=True)]
    source, out = _write(tmp_path / "in.jsonl", lines), tmp_path / "out.jsonl"
    with MockOpenAIServer(_unreadable_when_marked) as server:
        assert _extract(source, out, server.api_base) == EXIT_SOME_FAILED
    assert _reasons(out) == [None, "invalid_input", "parse_failure"]
    before = _lines(out)
    summary = tmp_path / "summary.json"
    with MockOpenAIServer(REPLY) as healthy:
        code = _extract(source, out, healthy.api_base, "--resume", "--summary-json", str(summary))
        asked = len(healthy.requests)
    assert code == EXIT_SOME_FAILED  # the input error is still an error line
    assert asked == 1
    after = _lines(out)
    assert after[:2] == before[:2] and "edges" in json.loads(after[2])
    counted = json.loads(summary.read_text())
    assert (counted["rerun"], counted["resumedFailed"]) == (1, {"invalid_input": 1})


def test_a_run_killed_while_rerunning_leaves_the_output_as_it_was(
    failed_run: tuple[Path, Path, list[bytes]],
) -> None:
    source, out, before = failed_run
    args = ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--no-progress",
            "--no-cache", "--max-retries", "0", "--resume"]  # fmt: skip
    with MockOpenAIServer(REPLY, latency=30.0) as hanging:  # answers long after the kill
        child = subprocess.Popen(
            [sys.executable, "-m", "edgewise", *args, "--api-base", hanging.api_base],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            give_up = time.monotonic() + 60
            while not hanging.requests and time.monotonic() < give_up and child.poll() is None:
                time.sleep(0.05)
            assert hanging.requests, "the resumed run never asked the model"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
    assert _lines(out) == before
    assert not [path.name for path in out.parent.iterdir() if path.name.endswith(".tmp")]
    with MockOpenAIServer(REPLY) as healthy:  # the next --resume runs the same lines again
        assert _extract(source, out, healthy.api_base, "--resume") == EXIT_OK
        assert len(healthy.requests) == 2
    assert _reasons(out) == [None] * 6


def test_the_replaced_file_is_locked_and_appended_to(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"line": 1}\n{"line": 2, "error": {"reason": "timeout"}}\n')
    out.chmod(0o640)
    with claim_output(out) as claimed:
        claimed.begin(resume=True)
        claimed.replace_lines({2: {"line": 2, "edges": []}})
        with pytest.raises(OutputClaimError), claim_output(out):
            pass  # another run cannot claim the new file
        claimed.stream.write(b'{"line": 3}\n')
    assert out.read_bytes() == b'{"line": 1}\n{"line": 2, "edges": []}\n{"line": 3}\n'
    assert out.stat().st_mode & 0o777 == 0o640


def test_a_reason_is_run_again_when_its_status_is_5xx() -> None:
    for word, reason in REASONS.items():
        assert retryable(word) is (reason.status >= 500), word
    assert {word for word in REASONS if not retryable(word)} >= {"invalid_input", "context_window"}
    assert all(
        retryable(word)
        for word in ("parse_failure", "timeout", "deadline", "rate_limited", "connection", "server_error")
    )
