"""A compiled program is data: no key in its files can choose where model calls go, or what the model is.

Each crafted artifact is a copy of the shipped `baseline-v1` with one key added; each is refused with
an `ArtifactError` that names the file and the key, before DSPy sees the state. A refusal never
quotes a file that is not a manifest. End to end, a program that names another endpoint sends that
endpoint nothing, through `edgewise.load` and through `edgewise extract --program`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dspy
import pytest
from fakes import edge, edges_reply
from mock_openai import MockOpenAIServer

import edgewise
from edgewise.cli import main
from edgewise.domain.episode import Episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.programs.artifact import (
    MANIFEST_FILE,
    PROGRAM_FILE,
    ArtifactError,
    load,
    new_manifest,
    resolve_artifact_dir,
    save,
    shipped_programs,
)
from edgewise.runtime.lm import LMConfig, build_lm, lm_context

SECRET_KEY = "sk-SECRET123"
EPISODE = {
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
REPLY = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp in 2021.", validAt="2021"))


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    """A copy of the shipped baseline program, to be tampered with."""
    return Path(shutil.copytree(resolve_artifact_dir("baseline-v1"), tmp_path / "program"))


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _refusal(directory: Path) -> str:
    with pytest.raises(ArtifactError) as raised:
        load(directory)
    return str(raised.value)


# -- program.json --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, value",
    [
        ("config", {"api_base": "http://127.0.0.1:9/v1"}),
        ("api_base", "http://127.0.0.1:9/v1"),
        ("callbacks", [{"py/object": "os.system"}]),
        ("stage", "x"),
        ("fields", {}),
    ],
)
def test_a_step_key_that_a_compile_never_writes_is_refused(artifact: Path, key: str, value: Any) -> None:
    _edit(artifact / PROGRAM_FILE, lambda state: state["extract"].update({key: value}))
    message = _refusal(artifact)
    assert f"{artifact / PROGRAM_FILE}: key 'extract.{key}' is not allowed" in message


def test_an_lm_in_program_json_is_refused(artifact: Path) -> None:
    lm = {"model": "openai/gpt-4o", "api_base": "http://127.0.0.1:9/v1", "api_key": "k"}
    _edit(artifact / PROGRAM_FILE, lambda state: state["reflect"].update(lm=lm))
    message = _refusal(artifact)
    assert f"{artifact / PROGRAM_FILE}: key 'reflect.lm' must be null" in message
    assert "127.0.0.1:9" not in message


def test_an_unknown_top_level_key_in_program_json_is_refused(artifact: Path) -> None:
    _edit(artifact / PROGRAM_FILE, lambda state: state.update(callbacks=["x"]))
    assert f"{artifact / PROGRAM_FILE}: key 'callbacks' is not allowed" in _refusal(artifact)


def test_a_key_inside_a_signature_is_refused(artifact: Path) -> None:
    _edit(artifact / PROGRAM_FILE, lambda state: state["extract"]["signature"]["fields"][0].update(type="x"))
    assert "key 'extract.signature.fields[0].type' is not allowed" in _refusal(artifact)


def test_field_texts_for_another_signature_are_refused(artifact: Path) -> None:
    _edit(artifact / PROGRAM_FILE, lambda state: state["extract"]["signature"]["fields"].pop())
    assert "key 'extract.signature.fields' has 6 field texts" in _refusal(artifact)


def test_a_missing_step_is_refused(artifact: Path) -> None:
    _edit(artifact / PROGRAM_FILE, lambda state: state.pop("attributes"))
    assert "no state for the program's step(s) attributes" in _refusal(artifact)


# -- manifest.json -------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["config", "lm", "api_base", "callbacks", "anything"])
def test_an_unknown_manifest_key_is_refused(artifact: Path, key: str) -> None:
    _edit(
        artifact / MANIFEST_FILE, lambda manifest: manifest.update({key: {"api_base": "http://127.0.0.1:9"}})
    )
    assert f"{artifact / MANIFEST_FILE}: key {key!r} is not allowed" in _refusal(artifact)


def test_an_unknown_program_option_is_refused_by_name(artifact: Path) -> None:
    _edit(artifact / MANIFEST_FILE, lambda manifest: manifest["settings"].update(program_options={"x": 1}))
    assert f"{artifact / MANIFEST_FILE}: key 'settings.program_options.x' is not allowed" in _refusal(
        artifact
    )


def test_a_manifest_symlinked_to_a_secret_file_is_refused_without_its_content(
    artifact: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0:SECRET-FIRST-LINE:/root:/bin/bash\ndaemon:x:1:1::/:/usr/sbin/nologin\n")
    (artifact / MANIFEST_FILE).unlink()
    (artifact / MANIFEST_FILE).symlink_to(secret)
    message = _refusal(artifact)
    assert f"{artifact / MANIFEST_FILE} is not JSON (" in message
    assert not any(part in message for part in ("SECRET", "root:x", "/bin/bash", "daemon", "nologin"))


def test_a_manifest_symlinked_to_a_json_secret_names_no_value(artifact: Path, tmp_path: Path) -> None:
    secret = tmp_path / "credentials.json"
    secret.write_text(json.dumps({"dspy_version": ["hunter2-value"], "a secret sentence as a key": 1}))
    (artifact / MANIFEST_FILE).unlink()
    (artifact / MANIFEST_FILE).symlink_to(secret)
    message = _refusal(artifact)
    assert str(artifact / MANIFEST_FILE) in message
    assert "hunter2" not in message and "secret sentence" not in message


def test_a_program_json_symlinked_to_a_secret_file_is_refused_without_its_content(
    artifact: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("SECRET-FIRST-LINE: hunter2\n")
    (artifact / PROGRAM_FILE).unlink()
    (artifact / PROGRAM_FILE).symlink_to(secret)
    message = _refusal(artifact)
    assert str(artifact / PROGRAM_FILE) in message and "SECRET" not in message and "hunter2" not in message


# -- what a compile writes still loads -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(shipped_programs()))
def test_every_shipped_program_loads(name: str) -> None:
    program = load(name)
    assert isinstance(program, EdgeExtractor)
    assert all(predictor.lm is None and predictor.config == {} for predictor in program.predictors())


def test_a_saved_program_with_demos_and_an_attached_lm_loads_without_the_lm(tmp_path: Path) -> None:
    program = EdgeExtractor()
    demo = dspy.Example(episode_content="Alice joined Acme.", gold_episode_id="g-1").with_inputs(
        "episode_content"
    )
    program.extract.demos = [demo]
    program.extract.signature = program.extract.signature.with_instructions("Tuned instructions.")
    lm = build_lm(LMConfig(model="openai/mock", api_base="http://127.0.0.1:9/v1", api_key=SECRET_KEY))
    for predictor in program.predictors():
        predictor.lm = lm  # compiled with its LM attached
    directory = save(
        program, tmp_path / "prog", new_manifest(program, task_model="openai/mock", optimizer="x")
    )
    state = json.loads((directory / PROGRAM_FILE).read_text())
    assert all(state[name]["lm"] is None for name in ("extract", "reflect", "attributes"))
    loaded = load(directory)
    assert loaded.extract.signature.instructions == "Tuned instructions."
    assert [dict(demo) for demo in loaded.extract.demos] == [
        {"episode_content": "Alice joined Acme.", "gold_episode_id": "g-1"}
    ]
    assert all(predictor.lm is None for predictor in loaded.predictors())


# -- end to end: the redirect endpoint is sent nothing -----------------------------------------------------


def _redirecting(artifact: Path, redirect: MockOpenAIServer) -> None:
    _edit(
        artifact / PROGRAM_FILE, lambda state: state["extract"].update(config={"api_base": redirect.api_base})
    )


def test_a_program_naming_an_endpoint_sends_it_nothing_through_edgewise_load(artifact: Path) -> None:
    with MockOpenAIServer(REPLY) as real, MockOpenAIServer(REPLY) as redirect:
        _redirecting(artifact, redirect)
        lm = build_lm(LMConfig(model="openai/mock", api_base=real.api_base, api_key=SECRET_KEY, cache=False))
        refused: ArtifactError | None = None
        try:
            program = edgewise.load(artifact)
        except ArtifactError as error:
            refused = error
        else:
            with lm_context(lm):
                program(Episode.model_validate(EPISODE))
        assert not redirect.requests, "the program's own endpoint was called"
    assert refused is not None and "key 'extract.config' is not allowed" in str(refused)


def test_a_program_naming_an_endpoint_sends_it_nothing_through_the_cli(
    artifact: Path, tmp_path: Path, capsys
) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(EPISODE) + "\n")

    def extract(program: Path, server: MockOpenAIServer) -> int:
        return main(["extract", "--program", str(program), "--model", "openai/mock", "--api-base", server.api_base,
                     "--api-key", SECRET_KEY, "-i", str(source), "-o", str(out), "--no-progress", "--no-cache",
                     "--max-retries", "0"])  # fmt: skip

    with MockOpenAIServer(REPLY) as real, MockOpenAIServer(REPLY) as redirect:
        assert extract(artifact, real) == 0 and len(real.requests) == 1  # the untouched copy runs
        _redirecting(artifact, redirect)
        capsys.readouterr()
        code = extract(artifact, real)
        assert not redirect.requests, "the program's own endpoint was called"
        assert len(real.requests) == 1  # refused before any episode ran
    assert code == 1
    err = capsys.readouterr().err
    assert "key 'extract.config' is not allowed" in err and SECRET_KEY not in err
