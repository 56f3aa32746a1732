"""`edgewise extract --resume` continues only the run of this input: the kept output must answer it.

Output line k carries the id of input line k; a results file written for another input (other ids,
or more lines than the input has) is refused with exit status 1 and left byte for byte as it was.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer

from edgewise.cli import main
from edgewise.runtime.jsonl import ResumeError, read_episode_lines, resume_point

REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021.", validAt="2021"))


def _episode(episode_id: str | None) -> dict:
    fields = {
        "episodeContent": "Alice joined Acme Corp in 2021.",
        "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
        "referenceTime": "2025-04-30T00:00:00Z",
    }
    return fields if episode_id is None else {"id": episode_id, **fields}


def _write_input(path: Path, ids: Sequence[str | None]) -> Path:
    path.write_text("".join(json.dumps(_episode(episode_id)) + "\n" for episode_id in ids))
    return path


def _extract(source: Path, out: Path, server: MockOpenAIServer, *extra: str) -> int:
    return main(
        ["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", server.api_base,
         "--max-retries", "0", "--no-progress", "--no-cache", *extra]
    )  # fmt: skip


def _ids(out: Path) -> list[str | None]:
    return [json.loads(line)["id"] for line in out.read_text().splitlines()]


def test_a_20_line_output_resumed_with_another_40_line_input_is_refused(tmp_path: Path, capsys) -> None:
    first = _write_input(tmp_path / "first.jsonl", [f"a-{i}" for i in range(20)])
    other = _write_input(tmp_path / "other.jsonl", [f"b-{i}" for i in range(40)])
    out = tmp_path / "out.jsonl"
    with MockOpenAIServer(REPLY) as server:
        assert _extract(first, out, server) == 0
        before = out.read_bytes()
        capsys.readouterr()
        assert _extract(other, out, server, "--resume") == 1
        assert len(server.requests) == 20  # the refused run asked the model nothing
    assert out.read_bytes() == before
    err = capsys.readouterr().err
    assert f"{out} line 1 " in err and "'a-0'" in err and f"line 1 of {other} has id 'b-0'" in err


def test_the_message_names_the_first_line_that_differs(tmp_path: Path, capsys) -> None:
    ids = [f"ep-{i}" for i in range(20)]
    first = _write_input(tmp_path / "first.jsonl", ids)
    edited = _write_input(tmp_path / "edited.jsonl", [*ids[:12], "inserted", *ids[12:]])
    out = tmp_path / "out.jsonl"
    with MockOpenAIServer(REPLY) as server:
        assert _extract(first, out, server) == 0
        before = out.read_bytes()
        capsys.readouterr()
        assert _extract(edited, out, server, "--resume") == 1
    assert out.read_bytes() == before
    assert "line 13 answers the episode with id 'ep-12'" in capsys.readouterr().err


def test_a_300_line_output_resumed_with_a_20_line_input_is_refused(tmp_path: Path, capsys) -> None:
    ids = [f"ep-{i}" for i in range(300)]
    source = _write_input(tmp_path / "in.jsonl", ids[:20])
    out = tmp_path / "out.jsonl"
    lines = [json.dumps({"id": episode_id, "line": k, "edges": []}) for k, episode_id in enumerate(ids, 1)]
    out.write_text("\n".join(lines) + '\n{"id": "ep-300", "li')  # a cut last line too: not repaired
    before = out.read_bytes()
    with MockOpenAIServer(REPLY) as server:
        assert _extract(source, out, server, "--resume") == 1
        assert not server.requests
    assert out.read_bytes() == before
    err = capsys.readouterr().err
    assert f"{out} has more lines than {source}" in err and "its line 21" in err


def test_an_output_longer_than_an_input_without_ids_is_refused(tmp_path: Path, capsys) -> None:
    source = _write_input(tmp_path / "in.jsonl", [None] * 3)
    out = tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"id": None, "line": k, "edges": []}) + "\n" for k in range(1, 6)))
    before = out.read_bytes()
    with MockOpenAIServer(REPLY) as server:
        assert _extract(source, out, server, "--resume") == 1
    assert out.read_bytes() == before
    assert "has more lines than" in capsys.readouterr().err


def test_a_proper_prefix_resumes_as_before(tmp_path: Path) -> None:
    ids = [f"ep-{i}" for i in range(40)]
    head = _write_input(tmp_path / "head.jsonl", ids[:20])
    source = _write_input(tmp_path / "in.jsonl", ids)
    out = tmp_path / "out.jsonl"
    with MockOpenAIServer(REPLY) as server:
        assert _extract(head, out, server) == 0
        with open(out, "a") as handle:
            handle.write('{"id": "ep-20", "li')  # killed mid-line
        assert _extract(source, out, server, "--resume") == 0
        assert len(server.requests) == 40  # 20, then the 20 the first run had not done
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["line"]) for r in records] == [(episode_id, k) for k, episode_id in enumerate(ids, 1)]
    assert all("edges" in record for record in records)


def test_a_proper_prefix_resumes_from_stdin(tmp_path: Path, monkeypatch) -> None:
    ids = [f"ep-{i}" for i in range(6)]
    out = tmp_path / "out.jsonl"
    out.write_text(
        "".join(json.dumps({"id": i, "line": k, "edges": []}) + "\n" for k, i in enumerate(ids[:4], 1))
    )
    data = "".join(json.dumps(_episode(episode_id)) + "\n" for episode_id in ids).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with MockOpenAIServer(REPLY) as server:
        code = main(["extract", "-o", str(out), "--model", "openai/mock", "--api-base", server.api_base,
                     "--no-progress", "--no-cache", "--resume"])  # fmt: skip
        assert code == 0 and len(server.requests) == 2
    assert [(r["id"], r["line"]) for r in map(json.loads, out.read_text().splitlines())] == [
        (episode_id, k) for k, episode_id in enumerate(ids, 1)
    ]


def test_resume_point_reads_exactly_the_answered_input_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "x", "line": 1}\n{"id": null, "line": 2}\n{"id": "3", "line": 3}\n{"id": "z", "li')
    answered = io.BytesIO(b'{"id": "x"}\nnot json\n{"id": 3}\n{"id": "z"}\n{"id": "w"}\n')
    assert resume_point(out, answered, "in.jsonl").lines == 3  # a line with no id answers one with none
    assert out.read_text().endswith('"line": 3}\n')  # the cut line dropped once the checks passed
    assert [item.id for item in read_episode_lines(answered, "in.jsonl", first_line=4)] == ["z", "w"]
    assert [item.line for item in read_episode_lines(io.BytesIO(b"{}\n"), "in.jsonl", first_line=4)] == [4]
    with pytest.raises(ResumeError, match="line 1 answers the episode with id 'x'.*has no id"):
        resume_point(out, io.BytesIO(b'{"episodeContent": "no id"}\n'), "in.jsonl")
