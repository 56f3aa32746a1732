"""`edgewise local-model list` says how to install a missing model with what really holds it."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from edgewise.cli import local_model as local_model_cli
from edgewise.cli import main
from edgewise.runtime.local_models import MODELS


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
