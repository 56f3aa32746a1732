"""The batch contract of `edgewise extract`, checked end to end (docs/batch-contract.md).

Generated batches mix good lines, bad JSON, bad fields, unknown keys, missing entities and invalid
UTF-8; the mock OpenAI-compatible server answers each episode as a marker in its text asks (a normal
reply, an off-list entity or type, a fault). Every run goes through the real CLI, and the checks are
the contract's: one output line per input line with its id, in order; stdout holds only JSONL; the
exit status says whether every line is a result; no result names an entity or a type off its lists.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from fakes import edge, edges_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mock_openai import MockOpenAIServer, prompt_text

from edgewise.cli import main

ENTITIES: Final = ("Alice", "Acme")
TYPES: Final = ("WORKS_AT",)
# Replies chosen by a marker in the episode text: "[reply:<kind>]".
REPLIES: Final = {
    "ok": edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme.")),
    "off_list_type": edges_reply(
        edge("Alice", "ADMIN_OF", "Acme", "Alice runs the Acme wiki."),
        edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."),
    ),
    "off_list_entity": edges_reply(edge("Mallory", "WORKS_AT", "Acme", "Mallory works at Acme.")),
    "noisy": edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme.")),
}
# Faults the mock injects for "[reply:<fault>]", and the reason each failed line must carry (no retries;
# a reply that breaks the schema is asked for once more, and breaks it again: a parse failure).
FAULT_REASONS: Final = {
    "500": "server_error",
    "429": "rate_limited",
    "drop": "connection",
    "invalid_json": "invalid_response",
    "schema_break": "parse_failure",
}
# Faults whose episode still ends in a result: an unknown entity (its edge is dropped, with a warning).
SOFT_FAULTS: Final = ("unknown_entity",)
_MARKER: Final = re.compile(r"\[reply:(\w+)\]")


def _kind(body: dict[str, Any]) -> str:
    found = _MARKER.search(prompt_text(body))
    return found[1] if found else "ok"


def _respond(body: dict[str, Any]) -> str:
    kind = _kind(body)
    if kind == "noisy":
        print("Provider List: https://docs.litellm.ai/docs/providers")  # a library printing mid-run
    return REPLIES.get(kind, REPLIES["ok"])


def _fault(_index: int, body: dict[str, Any]) -> Any:
    kind = _kind(body)
    return kind if kind in FAULT_REASONS or kind in SOFT_FAULTS else None


@pytest.fixture(scope="module")
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(_respond, faults=_fault) as mock:
        yield mock


def _episode(reply: str, **extra: Any) -> dict[str, Any]:
    return {
        "episodeContent": f"Alice works at Acme. [reply:{reply}]",
        "entities": [{"name": name} for name in ENTITIES],
        "referenceTime": "2025-04-30T00:00:00Z",
        "edgeTypes": [{"name": name} for name in TYPES],
        **extra,
    }


# Each generated line: its bytes, and what its output line must say.
Expected = dict[str, Any]
ids = st.one_of(st.none(), st.text(max_size=8), st.integers(-5, 10**6))
replies = st.sampled_from([*REPLIES, *FAULT_REASONS, *SOFT_FAULTS])


def _with_id(fields: dict[str, Any], line_id: Any) -> tuple[dict[str, Any], str | None]:
    if line_id is None:
        return fields, None
    return {"id": line_id, **fields}, str(line_id)


@st.composite
def good_lines(draw: st.DrawFn) -> tuple[bytes, Expected]:
    reply = draw(replies)
    fields, line_id = _with_id(_episode(reply), draw(ids))
    return json.dumps(fields).encode(), {"id": line_id, "reply": reply}


@st.composite
def unknown_key_lines(draw: st.DrawFn) -> tuple[bytes, Expected]:
    key = draw(st.sampled_from(["userId", "colour", "source"]))
    fields, line_id = _with_id({**_episode("ok"), key: draw(st.text(max_size=5))}, draw(ids))
    return json.dumps(fields).encode(), {"id": line_id, "reply": "ok", "ignored": key}


@st.composite
def bad_field_lines(draw: st.DrawFn) -> tuple[bytes, Expected]:
    field, value = draw(
        st.sampled_from(
            [
                ("referenceTime", "soon"),
                ("episodeContent", 5),
                ("entities", [{"name": ""}, {"name": "Acme"}]),
                ("edgeTypes", "WORKS_AT"),
            ]
        )
    )
    fields, line_id = _with_id({**_episode("ok"), field: value}, draw(ids))
    return json.dumps(fields).encode(), {"id": line_id, "input_error": field}


@st.composite
def no_entity_lines(draw: st.DrawFn) -> tuple[bytes, Expected]:
    fields = {key: value for key, value in _episode("ok").items() if key != "entities"}
    misnamed = draw(st.sampled_from([None, "entites", "node"]))
    if misnamed:
        fields[misnamed] = [{"name": name} for name in ENTITIES]
    fields, line_id = _with_id(fields, draw(ids))
    return json.dumps(fields).encode(), {"id": line_id, "input_error": "entities"}


bad_json_lines = st.sampled_from([b"not json", b'{"episodeContent": ', b"[1, 2]", b"   "]).map(
    lambda raw: (raw, {"id": None, "input_error": None})
)
invalid_utf8_lines = st.binary(min_size=1, max_size=20).map(
    lambda raw: (b'{"id": "x\xff' + raw.replace(b"\n", b" ") + b'"}', {"id": None, "input_error": None})
)
lines = st.one_of(good_lines(), unknown_key_lines(), bad_field_lines(), no_entity_lines(), bad_json_lines,
                  invalid_utf8_lines)  # fmt: skip


def _run(data: bytes, api_base: str, workers: int) -> tuple[int, str]:
    """`edgewise extract` reading `data` on stdin; returns the exit status and everything on stdout."""
    stdout = io.StringIO()
    stdin, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(data))
    try:
        with contextlib.redirect_stdout(stdout):
            code = main(["extract", "--model", "openai/mock", "--api-base", api_base, "--no-progress",
                         "--no-cache", "--max-retries", "0", "--workers", str(workers)])  # fmt: skip
    finally:
        sys.stdin = stdin
    return code, stdout.getvalue()


def _check_result(record: dict[str, Any], expected: Expected) -> None:
    reply = expected["reply"]
    assert "error" not in record, record
    for found in record["edges"]:
        assert {found["sourceEntityName"], found["targetEntityName"]} <= set(ENTITIES)
        assert found["relationshipType"] in TYPES
    codes = [warning["code"] for warning in record["warnings"]]
    if "ignored" in expected:
        assert record["warnings"][0]["code"] == "ignored_field"
        assert expected["ignored"] in record["warnings"][0]["message"]
    if reply in ("ok", "noisy", "off_list_type"):
        assert [e["relationshipType"] for e in record["edges"]] == ["WORKS_AT"]
    if reply == "off_list_type":
        assert "unknown_type" in codes
    if reply in ("off_list_entity", "unknown_entity"):
        assert record["edges"] == [] and "unknown_entity" in codes
    assert record["parseFailures"] == 0  # a result means every reply was read


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(lines, min_size=1, max_size=8), workers=st.integers(1, 3))
def test_every_generated_batch_keeps_the_contract(
    server: MockOpenAIServer, batch: list[tuple[bytes, Expected]], workers: int
) -> None:
    code, stdout = _run(b"".join(raw + b"\n" for raw, _ in batch), server.api_base, workers)
    records = [json.loads(text) for text in stdout.splitlines()]  # stdout is JSONL and nothing else
    assert stdout.endswith("\n")
    assert [record["line"] for record in records] == list(range(1, len(batch) + 1))
    assert [record["id"] for record in records] == [expected["id"] for _, expected in batch]
    failed = False
    for record, (_, expected) in zip(records, batch, strict=True):
        if "input_error" in expected:
            error = record["error"]
            assert (error["kind"], error["reason"], error["line"]) == (
                "input",
                "invalid_input",
                record["line"],
            )
            if expected["input_error"] is not None:
                assert error["field"].split("[")[0].split(".")[0] == expected["input_error"]
            failed = True
        elif expected["reply"] in FAULT_REASONS:
            assert record["error"]["kind"] == "lm"
            assert record["error"]["reason"] == FAULT_REASONS[expected["reply"]]
            failed = True
        else:
            _check_result(record, expected)
    assert code == (2 if failed else 0)


# -- the same contract in a separate process, and the lock ----------------------------------------------


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "edgewise", "extract", "--model", "openai/mock", "--no-progress", "--no-cache",
            "--max-retries", "0", *args]  # fmt: skip


# A child process whose every model call first prints a line, as a chatty library would.
CHATTY_CHILD: Final = """
import sys
from edgewise.runtime import lm
send = lm.EdgewiseLM.__call__
def chatty(self, *args, **kwargs):
    print("Provider List: https://docs.litellm.ai/docs/providers")
    return send(self, *args, **kwargs)
lm.EdgewiseLM.__call__ = chatty
from edgewise.cli import main
sys.exit(main())
"""


def test_a_separate_process_writes_only_jsonl_on_stdout(server: MockOpenAIServer) -> None:
    batch = [_episode("ok", id="a"), _episode("500", id="b"), _episode("off_list_type", id="c")]
    data = b"".join(json.dumps(fields).encode() + b"\n" for fields in batch) + b"\xff\xfe\n"
    command = [sys.executable, "-c", CHATTY_CHILD, *_cli("--api-base", server.api_base)[3:]]
    done = subprocess.run(command, input=data, capture_output=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr.decode()
    records = [json.loads(text) for text in done.stdout.decode().splitlines()]
    assert [(record["id"], record["line"]) for record in records] == [("a", 1), ("b", 2), ("c", 3), (None, 4)]
    assert [e["relationshipType"] for e in records[2]["edges"]] == ["WORKS_AT"]
    assert done.stderr.decode().count("Provider List") == 3  # one per model call, all on stderr


def test_a_second_run_on_the_same_output_is_refused_while_the_first_writes(tmp_path: Path) -> None:
    total = 8
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(_episode("ok", id=f"ep-{i}")) + "\n" for i in range(total)))
    with MockOpenAIServer(_respond, latency=0.3) as slow:
        first = subprocess.Popen(_cli("--api-base", slow.api_base, "-i", str(source), "-o", str(out)),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        try:
            give_up = time.monotonic() + 60
            while (not out.exists() or b"\n" not in out.read_bytes()) and time.monotonic() < give_up:
                time.sleep(0.05)
            assert first.poll() is None, "the first run ended before the second could start"
            second = main(["extract", "--model", "openai/mock", "--api-base", slow.api_base, "-i", str(source),
                           "-o", str(out), "--resume", "--no-progress"])  # fmt: skip
            assert second == 1
        finally:
            _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr.decode()
    records = [json.loads(text) for text in out.read_text().splitlines()]
    assert [record["id"] for record in records] == [f"ep-{i}" for i in range(total)]  # none twice, none lost


def test_a_held_lock_refuses_the_run_before_anything_changes(tmp_path: Path, capsys: Any) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(_episode("ok")) + "\n")
    out.write_text('{"id": null, "line": 1, "edges": []}\n{"id": null, "li')  # a cut last line
    before = out.read_bytes()
    with open(out, "ab") as holder:  # another run's claim on the file
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        for resume in ([], ["--resume"]):
            code = main(["extract", "--model", "openai/mock", "--api-base", "http://127.0.0.1:9/v1", "-i",
                         str(source), "-o", str(out), "--no-progress", *resume])  # fmt: skip
            assert code == 1
            assert "is being written by another edgewise extract run" in capsys.readouterr().err
    assert out.read_bytes() == before  # neither emptied nor repaired
    assert os.path.getsize(out) == len(before)
