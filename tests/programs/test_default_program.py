"""The program a command runs when none is named: the shipped one compiled for the model, else `default`.

`optimize/compiled/defaults.json` writes the choice down (several shipped programs may name one task
model); these tests hold it to the shipped manifests, and run each path that chooses: the resolution
itself, `edgewise extract` (a hosted model string, and `local` with the model server replaced by the
mock), `edgewise serve`, `edgewise bench`'s default list and `EdgewiseLLMClient`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer

from edgewise.cli import extract as extract_cli
from edgewise.cli import main as cli_main
from edgewise.cli.bench import default_programs
from edgewise.local.local_models import MODELS
from edgewise.programs.artifact import read_manifest, shipped_programs
from edgewise.programs.names import UNCOMPILED, choose_program, model_key, shipped_defaults
from edgewise.runtime.lm import LMConfig, build_lm

COMPILED_1_5B = "qwen2.5-coder-1.5b-lora"
ANY_MODEL = "any"  # the task model of a frozen baseline that names no model


def _manifests() -> dict[str, Any]:
    return {name: read_manifest(folder) for name, folder in shipped_programs().items()}


def test_every_default_is_a_shipped_program_compiled_for_that_model_and_kept_by_its_selection() -> None:
    manifests = _manifests()
    assert shipped_defaults(), "optimize/compiled/defaults.json is empty"
    for model, program in shipped_defaults().items():
        assert model.startswith("local/") and model.removeprefix("local/") in MODELS, model
        if program == UNCOMPILED:
            # only where no shipped program for the model beat the uncompiled one
            kept = [
                name
                for name, manifest in manifests.items()
                if manifest.task_model == model and manifest.notes.get("selected") == "compiled"
            ]
            assert kept == [], f"{model}: {kept} beat the uncompiled program; make one the default"
            continue
        assert program in manifests, f"{model}: {program} is not shipped"
        assert manifests[program].task_model == model, (model, manifests[program].task_model)
        assert manifests[program].notes.get("selected") == "compiled", program


def test_every_model_a_shipped_program_is_compiled_for_has_an_explicit_default() -> None:
    named = {manifest.task_model for manifest in _manifests().values()} - {ANY_MODEL}
    assert named <= set(shipped_defaults()), named - set(shipped_defaults())


@pytest.mark.parametrize(
    ("model", "program"),
    [
        ("local", COMPILED_1_5B),
        ("local/qwen2.5-coder-1.5b", COMPILED_1_5B),
        ("local/qwen2.5-coder-0.5b", UNCOMPILED),
        ("local/smollm2-135m", UNCOMPILED),
        ("openai/gpt-4o-mini", UNCOMPILED),
        ("qwen2.5-coder-1.5b", UNCOMPILED),  # your own server: not the bundled model
        ("local/no-such-model", UNCOMPILED),
    ],
)
def test_the_choice_for_each_model(model: str, program: str) -> None:
    choice = choose_program(None, model)
    assert choice.name == program
    assert choice.notice().startswith(f"program {program} (")
    assert choose_program(UNCOMPILED, model).name == UNCOMPILED  # a named program always wins
    assert choose_program("runs/prog", model).notice() == "program runs/prog (named)"


def test_local_names_the_registry_model() -> None:
    assert model_key("local") == "local/qwen2.5-coder-1.5b"
    assert model_key("openai/gpt-4o-mini") == "openai/gpt-4o-mini"


# Typed so that the 1.5B program's learned signatures apply: Person -WORKS_AT-> Organization.
EPISODE = {
    "id": "e1",
    "episodeContent": "Ann works at Co.",
    "entities": [{"name": "Ann", "type": "Person"}, {"name": "Co", "type": "Organization"}],
    "referenceTime": "2025-04-30T00:00:00Z",
    "edgeTypes": [{"name": "WORKS_AT"}],
}
REVERSED = edges_reply(edge("Co", "WORKS_AT", "Ann", "Ann works at Co."))


def _extract(tmp_path: Path, model: str, *extra: str) -> tuple[dict[str, Any], str]:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(EPISODE) + "\n")
    out = tmp_path / "out.jsonl"
    argv = ["extract", "--input", str(source), "--output", str(out), "--model", model, "--no-progress"]
    assert cli_main([*argv, *extra]) == 0
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    return record, str(out)


def _notices(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("edgewise extract: program ")]


def test_extract_on_a_hosted_model_runs_default_and_says_so(tmp_path: Path, capsys) -> None:
    with MockOpenAIServer(REVERSED) as server:
        record, _ = _extract(tmp_path, "openai/mock", "--api-base", server.api_base, "--no-cache")
    [notice] = _notices(capsys.readouterr().err)
    assert notice.startswith("edgewise extract: program default (the uncompiled program")
    # default has no learned signatures: the reversed edge stays as the model wrote it
    assert [(e["sourceEntityName"], e["targetEntityName"]) for e in record["edges"]] == [("Co", "Ann")]


@contextmanager
def _mock_as_local(server: MockOpenAIServer, seen: list[LMConfig]) -> Iterator[Any]:
    """`open_lm` for a `local` config, answered by the mock server instead of a llama-server."""

    @contextmanager
    def open_lm(config: LMConfig) -> Iterator[Any]:
        seen.append(config)
        yield build_lm(
            config.model_copy(update={"model": "openai/mock", "cache": False}), api_base=server.api_base
        )

    yield open_lm


@pytest.mark.parametrize(
    ("extra", "program", "pair"),
    [((), COMPILED_1_5B, ("Ann", "Co")), (("--program", UNCOMPILED), UNCOMPILED, ("Co", "Ann"))],
    ids=["no --program", "--program default"],
)
def test_extract_on_local_runs_the_program_compiled_for_it_and_says_so(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...], program: str, pair: tuple
) -> None:
    seen: list[LMConfig] = []
    with MockOpenAIServer(REVERSED) as server, _mock_as_local(server, seen) as open_lm:
        monkeypatch.setattr(extract_cli, "open_lm", open_lm)
        record, _ = _extract(tmp_path, "local", *extra)
    assert [config.model for config in seen] == ["local"]
    [notice] = _notices(capsys.readouterr().err)
    assert notice.startswith(f"edgewise extract: program {program} (")
    # the compiled program's learned signature flips the reversed edge; default leaves it
    assert [(e["sourceEntityName"], e["targetEntityName"]) for e in record["edges"]] == [pair]
    flipped = [w for w in record["warnings"] if w["code"] == "direction_flipped"]
    assert bool(flipped) == (program == COMPILED_1_5B)


def test_serve_on_local_serves_the_program_compiled_for_it(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from fastapi.testclient import TestClient
    from test_service import _run_serve

    from edgewise.cli import serve as serve_cli

    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    with MockOpenAIServer(REVERSED) as server, _mock_as_local(server, []) as open_lm:
        monkeypatch.setattr(serve_cli, "open_lm", open_lm)
        app, _ = _run_serve(monkeypatch, "--model", "local")
        with TestClient(app) as client:
            health = client.get("/healthz").json()
            body = client.post("/v1/extract", json={k: v for k, v in EPISODE.items() if k != "id"}).json()
    assert health["program"] == COMPILED_1_5B
    assert f"edgewise serve: program {COMPILED_1_5B} (" in capsys.readouterr().err
    assert [(e["sourceEntityName"], e["targetEntityName"]) for e in body["edges"]] == [("Ann", "Co")]


def test_bench_without_programs_adds_each_models_own_program() -> None:
    assert default_programs([LMConfig(model="openai/gpt-4o-mini")]) == ["seed", UNCOMPILED]
    assert default_programs([LMConfig(model="local"), LMConfig(model="local/qwen2.5-coder-1.5b")]) == [
        "seed",
        UNCOMPILED,
        COMPILED_1_5B,
    ]


def test_graphiti_client_without_program_uses_the_models_own() -> None:
    pytest.importorskip("graphiti_core")
    from test_graphiti import FakeGraphitiClient

    from edgewise.integrations.graphiti import EdgewiseLLMClient

    assert EdgewiseLLMClient(FakeGraphitiClient([]), model="local").program_name == COMPILED_1_5B
    assert EdgewiseLLMClient(FakeGraphitiClient([]), model="openai/mock").program_name == UNCOMPILED
    named = EdgewiseLLMClient(FakeGraphitiClient([]), model="local", program=UNCOMPILED)
    assert named.program_name == UNCOMPILED
