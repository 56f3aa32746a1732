"""A fine-tuned program's adapter reaches the server it runs on, and nowhere it would be wrong.

The adapter file here is a few bytes with a manifest record naming it: what is checked is where the
path goes (the local server's `--lora`, the reply cache's key, the bench's servers), not training,
which tests/optimize/test_finetune.py covers.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Self

import dspy
import pytest

from edgewise.eval.bench import run_bench
from edgewise.local.local_models import file_sha256, resolve_local_model
from edgewise.modules.extractor import EdgeExtractor
from edgewise.optimize.splits import load_split
from edgewise.programs.artifact_errors import ArtifactError
from edgewise.programs.lora_adapter import ADAPTER_ATTRIBUTE, LoraAdapter, LoraAdapterRecord, program_adapter
from edgewise.runtime.lm import LMConfig, LMConfigError, open_lm
from edgewise.runtime.reply_cache import endpoint_name

MODEL = "local/qwen2.5-coder-0.5b"


def adapter_for(path: Path, base_model: str = MODEL) -> LoraAdapter:
    path.write_bytes(b"GGUF adapter bytes")
    spec = resolve_local_model(base_model)
    record = LoraAdapterRecord(
        file=path.name,
        sha256=file_sha256(path),
        size_bytes=path.stat().st_size,
        base_model=f"local/{spec.name}",
        base_sha256=spec.sha256,
        rank=16,
        alpha=32.0,
        tensors=2,
    )
    return LoraAdapter(path, record)


def tuned_program(path: Path, base_model: str = MODEL) -> EdgeExtractor:
    program = EdgeExtractor()
    setattr(program, ADAPTER_ATTRIBUTE, adapter_for(path, base_model))
    return program


def test_a_program_without_an_adapter_needs_none():
    assert program_adapter(EdgeExtractor(), MODEL) is None


def test_the_adapter_is_given_for_its_base_model_and_refused_on_any_other(tmp_path):
    program = tuned_program(tmp_path / "adapter.gguf")
    assert program_adapter(program, MODEL) == tmp_path / "adapter.gguf"
    with pytest.raises(
        ArtifactError,
        match=r"trained on local/qwen2\.5-coder-0\.5b; it cannot run on local/qwen2\.5-coder-1\.5b",
    ):
        program_adapter(program, "local/qwen2.5-coder-1.5b")
    with pytest.raises(ArtifactError, match="cannot run on openai/gpt-4o-mini"):
        program_adapter(program, "openai/gpt-4o-mini")


def test_a_hosted_model_with_an_adapter_is_refused_before_any_call(tmp_path):
    config = LMConfig(model="openai/qwen", api_base="http://127.0.0.1:9/v1", lora_adapter=tmp_path / "a.gguf")
    with pytest.raises(LMConfigError, match=r"runs only on the local model edgewise starts"), open_lm(config):
        pass


class _FakeServer:
    """Stands in for LocalServer: records the adapter it was started with."""

    started: ClassVar[list[_FakeServer]] = []

    def __init__(self, spec: Any, *, slots: int = 1, lora: Path | None = None) -> None:
        self.spec, self.slots, self.lora = spec, slots, lora
        self.api_base = f"http://127.0.0.1:{40000 + len(self.started)}/v1"
        self.model_name = spec.name
        self.started.append(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.fixture
def fake_server(monkeypatch):
    from edgewise.local import local_server

    _FakeServer.started = []
    monkeypatch.setattr(local_server, "LocalServer", _FakeServer)
    return _FakeServer


def test_the_local_server_starts_with_the_adapter_and_its_replies_are_keyed_by_it(tmp_path, fake_server):
    adapter = adapter_for(tmp_path / "adapter.gguf").path
    spec = resolve_local_model(MODEL)
    with open_lm(LMConfig(model=MODEL)) as plain:
        plain_base = plain.kwargs["api_base"]
    with open_lm(LMConfig(model=MODEL, lora_adapter=adapter)) as tuned:
        tuned_base = tuned.kwargs["api_base"]
    assert [server.lora for server in fake_server.started] == [None, adapter]
    assert endpoint_name(plain_base) == f"local/{spec.name}@sha256:{spec.sha256}"
    assert (
        endpoint_name(tuned_base)
        == f"local/{spec.name}@sha256:{spec.sha256}+lora@sha256:{file_sha256(adapter)}"
    )


def test_the_bench_runs_a_tuned_program_on_its_own_server_and_reports_one_for_another_model(tmp_path):
    opened: list[LMConfig] = []

    @contextmanager
    def factory(config: LMConfig):
        opened.append(config)
        yield dspy.utils.DummyLM([{"edges": []}] * 20)

    episode = load_split("smoke", "smoke").episodes[0]
    programs = {
        "plain": EdgeExtractor(),
        "tuned": tuned_program(tmp_path / "adapter.gguf"),
        "other": tuned_program(tmp_path / "other.gguf", "local/qwen2.5-coder-1.5b"),
    }
    report = run_bench(
        [LMConfig(model=MODEL)], programs, [episode], workers=1, progress=False, lm_factory=factory
    )
    assert [config.lora_adapter for config in opened] == [None, tmp_path / "adapter.gguf"]
    runs = {run.program: run for run in report.runs}
    assert runs["plain"].episodes_done == 1 and runs["tuned"].episodes_done == 1
    assert runs["other"].episodes_done == 0 and "trained on local/qwen2.5-coder-1.5b" in runs["other"].error


def test_extract_of_a_tuned_program_folder_starts_its_model_with_the_adapter(tmp_path, monkeypatch, capsys):
    from edgewise.cli import extract as extract_cli
    from edgewise.cli import main
    from edgewise.programs.artifact import new_manifest, save

    adapter = adapter_for(tmp_path / "adapter.gguf")
    program = EdgeExtractor()
    folder = save(
        program,
        tmp_path / "tuned",
        new_manifest(program, task_model=MODEL, optimizer="finetune", adapter=adapter.record),
        {"adapter.gguf": adapter.path},
    )
    opened: list[LMConfig] = []

    @contextmanager
    def fake_open_lm(config: LMConfig):
        opened.append(config)
        yield dspy.utils.DummyLM([{"edges": []}] * 5, adapter=dspy.JSONAdapter())

    monkeypatch.setattr(extract_cli, "open_lm", fake_open_lm)
    source = tmp_path / "in.jsonl"
    source.write_text(
        load_split("smoke", "smoke").episodes[0].episode().model_dump_json(by_alias=True) + "\n"
    )
    out = tmp_path / "out.jsonl"
    arguments = ["extract", "-i", str(source), "-o", str(out), "--no-progress", "--no-cache", "--program"]
    assert main([*arguments, str(folder), "--model", MODEL]) == 0
    assert opened[0].lora_adapter == folder / "adapter.gguf" and opened[0].model == MODEL
    assert main([*arguments, str(folder), "--model", "local/qwen2.5-coder-1.5b"]) == 1
    assert "trained on local/qwen2.5-coder-0.5b" in capsys.readouterr().err and len(opened) == 1


def test_a_tuned_program_refuses_the_local_model_served_without_its_adapter(tmp_path, fake_server):
    from fakes import ScriptedLM, edges_reply

    from edgewise.runtime.lm import lm_context

    program = tuned_program(tmp_path / "adapter.gguf")
    episode = load_split("smoke", "smoke").episodes[0].episode()
    other = tmp_path / "other.gguf"
    other.write_bytes(b"another adapter's bytes")
    runs = {
        "base weights": LMConfig(model=MODEL),
        "its adapter": LMConfig(model=MODEL, lora_adapter=program.lora_adapter.path),
        "another adapter": LMConfig(model=MODEL, lora_adapter=other),
    }
    outcome = {}
    for name, config in runs.items():
        with open_lm(config) as served:
            # a scripted LM in the started server's place, serving what it serves
            lm = ScriptedLM([edges_reply()] * 4)
            lm.served_weights = served.served_weights
            with lm_context(lm):
                try:
                    program(episode)
                    outcome[name] = "ran"
                except ArtifactError as error:
                    outcome[name] = str(error)
            assert (outcome[name] == "ran") == bool(lm.calls), name  # refused before any request
    assert outcome["its adapter"] == "ran"
    assert (
        "without it" in outcome["base weights"] and "lora_adapter=program_adapter" in outcome["base weights"]
    )
    assert "with another adapter" in outcome["another adapter"]
    with lm_context(ScriptedLM([edges_reply()] * 4)):  # an LM edgewise did not start: the caller's to match
        program(episode)
