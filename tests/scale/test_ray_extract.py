"""`edgewise extract --engine ray` and `edgewise.scale.ray_stage.extract` on a local Ray, against the mock server.

One small Ray for the whole module (2 CPUs, a 200 MB object store, no dashboard). Its workers
inherit EDGEWISE_API_KEY from this process when Ray starts, which is how a key reaches them: the
tests check that the key arrives at the model server and that it is in nothing handed to Ray.
Without the ray extra the module is skipped, unless EDGEWISE_REQUIRE_RAY is set (CI sets it).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

if os.environ.get("EDGEWISE_REQUIRE_RAY"):  # CI installs the ray extra: there a missing Ray fails
    import ray
    import ray.data
else:
    ray = pytest.importorskip("ray", reason="the Ray engine needs the ray extra: pip install 'edgewise[ray]'")
    pytest.importorskip("ray.data", reason="the Ray engine needs Ray Data: pip install 'edgewise[ray]'")

import dspy
import pyarrow as pa
import pyarrow.parquet as pq
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer, prompt_text
from ray import cloudpickle
from ray_processes import can_find_actors, stage_actor_on_port

import edgewise
from edgewise.cli import main
from edgewise.modules.extractor import EdgeExtractor
from edgewise.programs.artifact_errors import ArtifactError
from edgewise.programs.lora_adapter import ADAPTER_ATTRIBUTE, LoraAdapter, LoraAdapterRecord
from edgewise.scale import ray_driver, ray_stage
from edgewise.scale.ray_driver import extract_files
from edgewise.scale.ray_files import journal_path

SECRET: Final = "sk-test-not-for-any-task-7f3a9c"
ENTITIES: Final = ("Alice", "Acme")
REPLY: Final = edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."))


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EDGEWISE_API_KEY", SECRET)  # before Ray starts: its workers inherit it
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2, log_to_driver=False)
        try:
            yield
        finally:
            ray.shutdown()


def _episode(number: int, text: str = "Alice works at Acme.", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"ep-{number:04d}",
        "episodeContent": f"{text} (note {number})",
        "entities": [{"name": name} for name in ENTITIES],
        "referenceTime": "2025-04-30T00:00:00Z",
        **extra,
    }


def _write_jsonl(path: Path, lines: list[dict[str, Any] | str | bytes]) -> Path:
    encoded = [
        line if isinstance(line, bytes) else (line if isinstance(line, str) else json.dumps(line)).encode()
        for line in lines
    ]
    path.write_bytes(b"".join(line + b"\n" for line in encoded))
    return path


def _extract(source: Path, out: Path, api_base: str, *extra: str) -> int:
    return main(["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base", api_base,
                 "--no-progress", "--no-cache", "--max-retries", "0", *extra])  # fmt: skip


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _faulty(_index: int, body: dict[str, Any]) -> Any:
    return "500" if "[fail]" in prompt_text(body) else None


def test_same_records_and_exit_status_as_the_local_engine(tmp_path):
    lines: list[dict[str, Any] | str | bytes] = [_episode(n) for n in range(70)]
    lines[3] = "not json"
    lines[10] = {key: value for key, value in _episode(10).items() if key != "referenceTime"}
    lines[20] = _episode(20, colour="red")  # an unknown key: a result with an ignored_field warning
    lines[30] = {**_episode(30), "entities": []}
    lines[40] = b'{"id": "x\xff"}'
    lines[50] = _episode(50, text="[fail] Alice works at Acme.")  # the server answers 500, no retries
    lines[60] = {**_episode(60), "id": 61}  # a numeric id is kept as text
    source = _write_jsonl(tmp_path / "in.jsonl", lines)
    with MockOpenAIServer(REPLY, faults=_faulty) as server:
        local = _extract(source, tmp_path / "local.jsonl", server.api_base)
        on_ray = _extract(source, tmp_path / "ray.jsonl", server.api_base, "--engine", "ray", "--actors", "2")
    assert local == on_ray == 2  # the run ended, some lines are errors
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    records = _records(tmp_path / "ray.jsonl")
    assert [record["line"] for record in records] == list(range(1, 71))
    assert records[60]["id"] == "61" and records[0]["id"] == "ep-0000"
    errors = {record["line"]: record["error"] for record in records if "error" in record}
    assert {line: (error["kind"], error["reason"]) for line, error in errors.items()} == {
        4: ("input", "invalid_input"),
        11: ("input", "invalid_input"),
        31: ("input", "invalid_input"),
        41: ("input", "invalid_input"),
        51: ("lm", "server_error"),
    }
    assert errors[11]["field"] == "referenceTime" and errors[31]["field"] == "entities"
    assert records[20]["warnings"][0]["code"] == "ignored_field"
    assert not journal_path(tmp_path / "ray.jsonl").exists()


def test_the_stage_takes_episode_columns_and_keeps_ids(tmp_path):
    rows = [_episode(n) for n in range(40)]
    rows[5] = {**rows[5], "referenceTime": None}  # a null column is an absent field: an input error
    dataset = ray.data.from_items(rows, override_num_blocks=4)
    with MockOpenAIServer(REPLY) as server:
        config = edgewise.LMConfig(model="openai/mock", api_base=server.api_base, cache=False)
        out = ray_stage.extract(dataset, lm=config, concurrency=2, workers=2).take_all()
        assert len(server.requests) == 39
    assert sorted(row["id"] for row in out) == sorted(row["id"] for row in rows)
    by_id = {row["id"]: row for row in out}
    failed = by_id["ep-0005"]
    assert failed["error"] == "invalid_input" and failed["line"] is None
    assert json.loads(failed["record"])["error"]["field"] == "referenceTime"
    done = json.loads(by_id["ep-0006"]["record"])
    assert [found["relationshipType"] for found in done["edges"]] == ["WORKS_AT"]
    assert by_id["ep-0006"]["requests"] == 1 and json.loads(by_id["ep-0006"]["retries"]) == {}


class _ActorKillingServer(MockOpenAIServer):
    """The mock server, killing (SIGKILL) the actor that sends request number `kill_at`, before answering it."""

    def __init__(self, *args: Any, kill_at: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kill_at, self.killed = kill_at, []
        self._arrived = 0
        self._kill_lock = threading.Lock()

    def _serve_completion(self, handler: Any, body: dict[str, Any]) -> None:
        with self._kill_lock:
            self._arrived += 1
            if self._arrived >= self.kill_at and not self.killed:
                sender = stage_actor_on_port(handler.client_address[1], os.getpid())  # this module's Ray only
                if sender is not None:
                    os.kill(
                        sender, signal.SIGKILL
                    )  # mid-batch, mid-request: its other episodes are in flight
                    self.killed.append(sender)
        super()._serve_completion(handler, body)


@pytest.mark.skipif(not can_find_actors(), reason="finds the actor's process through /proc (Linux)")
def test_a_killed_actor_loses_no_line_and_repeats_none(tmp_path, capfd):
    total = 160
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(total)])
    out = tmp_path / "out.jsonl"
    with _ActorKillingServer(REPLY, kill_at=40) as server:
        code = _extract(source, out, server.api_base, "--engine", "ray", "--actors", "2", "--workers", "4")
        served = len(server.requests)
    assert code == 0
    assert server.killed and not Path("/proc", str(server.killed[0])).exists()
    assert [record["id"] for record in _records(out)] == [f"ep-{n:04d}" for n in range(total)]
    assert served > total, "the killed actor's batch ran again"
    assert "answered a line twice" not in capfd.readouterr().err  # Ray delivered every row once


def test_endpoint_faults_are_retried_and_every_line_answered(tmp_path):
    faults = ["500", "drop", None, "500"] * 6  # the first 24 requests: 18 faults, each retried once
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(50)])
    out = tmp_path / "out.jsonl"
    with MockOpenAIServer(REPLY, faults=faults) as server:
        code = _extract(source, out, server.api_base, "--engine", "ray", "--max-retries", "8",
                        "--retry-backoff", "0.01", "--summary-json", str(tmp_path / "summary.json"))  # fmt: skip
    assert code == 0
    records = _records(out)
    assert [record["id"] for record in records] == [f"ep-{n:04d}" for n in range(50)]
    assert all("edges" in record for record in records)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["retriesTotal"] == 18 and summary["done"] == 50


def test_resume_keeps_the_journal_and_extracts_only_the_rest(tmp_path):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(40)])
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")  # a stopped run left this file alone
    kept = [{"id": f"ep-{n:04d}", "line": n + 1, "edges": [], "kept": True} for n in (17, 2, 30)]
    journal_path(out).write_text(
        "".join(json.dumps(record) + "\n" for record in kept) + '{"id": "ep-0009", "li'
    )
    with MockOpenAIServer(REPLY) as server:
        assert _extract(source, out, server.api_base, "--engine", "ray", "--resume") == 0
        assert len(server.requests) == 37
        records = _records(out)
        assert [record["id"] for record in records] == [f"ep-{n:04d}" for n in range(40)]
        assert [record["line"] for record in records if record.get("kept")] == [3, 18, 31]
        assert not journal_path(out).exists()
        before = out.read_bytes()
        assert _extract(source, out, server.api_base, "--engine", "ray", "--resume") == 0  # all done already
        assert len(server.requests) == 37
    assert out.read_bytes() == before


def test_resume_refuses_results_from_another_input(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(5)])
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "ep-0099", "line": 99, "edges": []}) + "\n")
    before = out.read_bytes()
    assert _extract(source, out, "http://127.0.0.1:9/v1", "--engine", "ray", "--resume") == 1
    assert "which the input does not have" in capsys.readouterr().err
    assert out.read_bytes() == before and not journal_path(out).exists()


def test_a_folder_of_jsonl_and_parquet_to_parquet(tmp_path):
    folder = tmp_path / "episodes"
    folder.mkdir()
    _write_jsonl(folder / "a.jsonl", [_episode(0), "{broken", _episode(2)])
    table_rows = [_episode(10), {**_episode(11), "referenceTime": None}, _episode(12)]
    pq.write_table(pa.Table.from_pylist(table_rows), folder / "b.parquet", row_group_size=2)
    out = tmp_path / "edges.parquet"
    with MockOpenAIServer(REPLY) as server:
        assert _extract(folder, out, server.api_base, "--engine", "ray") == 2
        assert len(server.requests) == 4
    table = pq.read_table(out).to_pylist()
    assert [(row["source"], row["line"], row["id"]) for row in table] == [
        ("a.jsonl", 1, "ep-0000"),
        ("a.jsonl", 2, None),
        ("a.jsonl", 3, "ep-0002"),
        ("b.parquet", 1, "ep-0010"),
        ("b.parquet", 2, "ep-0011"),
        ("b.parquet", 3, "ep-0012"),
    ]
    assert [row["error"] for row in table] == [None, "invalid_input", None, None, "invalid_input", None]
    second = json.loads(table[4]["record"])
    assert (second["source"], second["line"], second["error"]["field"]) == ("b.parquet", 2, "referenceTime")
    assert [edge["relationshipType"] for edge in json.loads(table[5]["record"])["edges"]] == ["WORKS_AT"]


def test_several_servers_are_spread_over_the_actors(tmp_path, monkeypatch):
    context = ray.data.DataContext.get_current()
    monkeypatch.setattr(context, "wait_for_min_actors_s", 120)  # both actors up before the first batch
    built: list[str | None] = []
    build_lm = ray_driver.build_lm
    monkeypatch.setattr(
        ray_driver, "build_lm", lambda config: built.append(config.api_base) or build_lm(config)
    )
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(64)])  # two batches of 32
    with MockOpenAIServer(REPLY) as first, MockOpenAIServer(REPLY) as second:
        bases = f"{first.api_base},{second.api_base}"
        assert _extract(source, tmp_path / "out.jsonl", bases, "--engine", "ray", "--actors", "2") == 0
        counts = (len(first.requests), len(second.requests))
        checked = [first.api_base]
    assert counts == (32, 32)
    assert built == checked  # the model's settings checked once on the driver, not per server


def test_actor_i_takes_server_i_mod_n():
    counter = ray_stage.EndpointCounter.remote()
    settings = ray_stage.lm_settings(edgewise.LMConfig(model="openai/mock"), 3)
    stages = [
        ray_stage.EpisodeStage(
            program="default",
            reflexion_rounds=None,
            open_types=False,
            settings=settings,
            api_bases=["http://a/v1", "http://b/v1"],
            endpoint_counter=counter,
            episode_timeout_s=None,
            workers=1,
        )
        for _ in range(3)
    ]
    assert [stage.api_base for stage in stages] == ["http://a/v1", "http://b/v1", "http://a/v1"]


class _KeyRecordingServer(MockOpenAIServer):
    """The mock server, also noting each request's Authorization header."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.authorization: list[str | None] = []

    def _serve_completion(self, handler: Any, body: dict[str, Any]) -> None:
        self.authorization.append(handler.headers.get("Authorization"))
        super()._serve_completion(handler, body)


def test_no_key_in_what_ray_is_given_and_the_workers_key_reaches_the_server(tmp_path, monkeypatch):
    handed: list[dict[str, Any]] = []
    map_batches = ray.data.Dataset.map_batches

    def spy(self: Any, fn: Any, **kwargs: Any) -> Any:
        handed.append({"fn": fn, **kwargs})
        return map_batches(self, fn, **kwargs)

    monkeypatch.setattr(ray.data.Dataset, "map_batches", spy)
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(8)])
    with _KeyRecordingServer(REPLY) as server:
        assert _extract(source, tmp_path / "out.jsonl", server.api_base, "--engine", "ray") == 0
    assert server.authorization == [f"Bearer {SECRET}"] * 8  # read by each actor from its own environment
    stage = next(call for call in handed if call["fn"] is ray_stage.EpisodeStage)
    assert stage["fn_constructor_kwargs"]["settings"]["model"] == "openai/mock"
    assert isinstance(stage["fn_constructor_kwargs"]["program"], dspy.Module)  # the driver's program itself
    payload = cloudpickle.dumps(handed)
    assert SECRET.encode() not in payload and b"api_key" not in payload


def test_a_key_outside_the_workers_environment_is_refused(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(0)])
    out = tmp_path / "out.jsonl"
    code = _extract(source, out, "http://127.0.0.1:9/v1", "--engine", "ray", "--api-key", "sk-other-key")
    assert code == 1
    assert "--api-key cannot reach the workers" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(ValueError, match="never sent to Ray workers"):
        ray_stage.extract(
            ray.data.from_items([_episode(0)]), lm=edgewise.LMConfig(model="openai/x", api_key="k")
        )


def test_earlier_results_survive_a_run_that_cannot_start(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(0)])
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    for flags in (
        ["--model", "foo/bar"],
        [
            "--model",
            "openai/mock",
            "--api-base",
            "http://127.0.0.1:9/v1",
            "--program",
            str(tmp_path / "none"),
        ],
    ):
        code = main(
            ["extract", "--engine", "ray", "-i", str(source), "-o", str(out), "--no-progress", *flags]
        )
        assert code == 1
    assert "unknown model 'foo/bar'" in capsys.readouterr().err
    assert out.read_text() == "earlier results\n" and not journal_path(out).exists()


def test_the_command_and_the_python_driver_write_the_same_file(tmp_path, monkeypatch):
    lines: list[dict[str, Any] | str | bytes] = [_episode(n) for n in range(12)]
    lines[2] = "not json"
    lines[7] = _episode(7, text="[fail] Alice works at Acme.")  # the server answers 500, no retries
    source = _write_jsonl(tmp_path / "in.jsonl", lines)
    resolved: list[str] = []
    resolve = ray_stage.resolve_program
    monkeypatch.setattr(
        ray_stage, "resolve_program", lambda spec, **kw: resolved.append(spec) or resolve(spec, **kw)
    )
    with MockOpenAIServer(REPLY, faults=_faulty) as server:
        code = _extract(source, tmp_path / "command.jsonl", server.api_base, "--engine", "ray",
                        "--summary-json", str(tmp_path / "command.json"))  # fmt: skip
        assert resolved == ["default"]  # once, on the driver: the actors get that program
        config = edgewise.LMConfig(model="openai/mock", api_base=server.api_base, cache=False, num_retries=0)
        summary = extract_files(
            source, tmp_path / "python.jsonl", lm=config, summary_json=tmp_path / "python.json"
        )
    assert code == 2 and not summary.all_done
    assert (tmp_path / "python.jsonl").read_bytes() == (tmp_path / "command.jsonl").read_bytes()
    reports = [json.loads((tmp_path / name).read_text()) for name in ("command.json", "python.json")]
    expected = summary.to_json_dict()
    for report in (*reports, expected):
        report.pop("wallSeconds")
    assert reports[0] == reports[1] == expected
    assert reports[0]["failed"] == {"invalid_input": 1, "server_error": 1} and reports[0]["done"] == 10


def test_a_program_with_a_lora_adapter_is_refused_before_ray_runs(tmp_path):
    adapter = tmp_path / "adapter.gguf"
    adapter.write_bytes(b"GGUF adapter bytes")
    record = LoraAdapterRecord(file=adapter.name, sha256="0" * 64, size_bytes=18, base_model="local/qwen2.5-coder-0.5b",
                               base_sha256="1" * 64, rank=16, alpha=32.0, tensors=2)  # fmt: skip
    program = EdgeExtractor()
    setattr(program, ADAPTER_ATTRIBUTE, LoraAdapter(adapter, record))
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(0)])
    config = edgewise.LMConfig(model="openai/mock", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ArtifactError, match="carries a LoRA adapter"):
        extract_files(source, tmp_path / "out.jsonl", program=program, lm=config)
    assert not (tmp_path / "out.jsonl").exists()


def _error(number: int, reason: str, kind: str = "lm") -> dict[str, Any]:
    failure = {"kind": kind, "reason": reason, "line": number + 1, "message": "earlier run"}
    return {"id": f"ep-{number:04d}", "line": number + 1, "error": failure}


def test_resume_runs_the_retryable_error_lines_again_and_keeps_the_rest(tmp_path):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(8)])
    out = tmp_path / "out.jsonl"
    kept = [
        _error(1, "server_error"),  # may pass now: runs again
        {**_error(3, "invalid_input", kind="input"), "kept": True},  # would fail again: kept
        {"id": "ep-0004", "line": 5, "edges": [], "kept": True},
        _error(5, "timeout"),  # a resumed run ran it again: the later record is the one that counts
        {"id": "ep-0005", "line": 6, "edges": [], "kept": True},
    ]
    journal_path(out).write_text("".join(json.dumps(record) + "\n" for record in kept))
    with MockOpenAIServer(REPLY) as server:
        code = _extract(source, out, server.api_base, "--engine", "ray", "--resume",
                        "--summary-json", str(tmp_path / "summary.json"))  # fmt: skip
        assert len(server.requests) == 5  # lines 1, 3, 7, 8 and the error line 2
    assert code == 2  # the kept input error is still an error line
    records = _records(out)
    assert [record["id"] for record in records] == [f"ep-{n:04d}" for n in range(8)]
    assert "edges" in records[1] and not records[1].get("kept")
    assert records[3]["error"]["reason"] == "invalid_input"
    assert [record["line"] for record in records if record.get("kept")] == [4, 5, 6]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["resumedAfter"], summary["rerun"], summary["lines"], summary["done"]) == (4, 1, 5, 5)
    assert summary["resumedFailed"] == {"invalid_input": 1}


def test_resume_refuses_a_journal_whose_ids_are_not_the_input_s(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "in.jsonl", [_episode(n) for n in range(5)])
    out = tmp_path / "out.jsonl"
    journal_path(out).write_text(json.dumps({"id": "ep-0099", "line": 3, "edges": []}) + "\n" + '{"id": "ep')
    before = journal_path(out).read_bytes()
    assert _extract(source, out, "http://127.0.0.1:9/v1", "--engine", "ray", "--resume") == 1
    assert (
        "the record of line 3 answers the episode with id 'ep-0099', but that input line has id 'ep-0002'"
        in (capsys.readouterr().err)
    )
    assert journal_path(out).read_bytes() == before and not out.exists()
