"""The layers docs/ARCHITECTURE.md draws are the ones the imports keep.

pyproject.toml's `[tool.importlinter]` holds them as a layers contract (and what inference may not
import as a forbidden one); `lint-imports` checks every import against them, as `.ci/run` does. It
runs in `.pyright/`, where `edgewise` is the package laid out as Python imports it: import-linter reads
a package's folder, and the editable install's hook, which puts `edgewise.X` in `X/`, is not a folder.
The second test reads the layers drawn in ARCHITECTURE.md and compares them with the contract's, so
that the picture a reader trusts is the one that is checked.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
ARCHITECTURE: Final = ROOT / "docs" / "ARCHITECTURE.md"
LAYERS_BLOCK: Final = re.compile(
    r"<!-- layers: begin -->\s*```text\n(.*?)```\s*<!-- layers: end -->", re.DOTALL
)


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["contracts"]


def _lint_imports() -> str:
    found = Path(sys.executable).with_name("lint-imports")
    if found.exists():
        return str(found)
    on_path = shutil.which("lint-imports")
    if on_path is None:
        pytest.skip("import-linter is not installed (it is in the dev extra: pip install -e '.[dev]')")
    return on_path


def test_the_imports_keep_the_layers():
    done = subprocess.run(
        [_lint_imports(), "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT / ".pyright",
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", done.stdout)
    assert kept and int(kept.group(1)) == len(_contracts()), done.stdout[-2000:]


def test_architecture_draws_the_contracts_layers():
    drawn = LAYERS_BLOCK.search(ARCHITECTURE.read_text())
    assert drawn, f"{ARCHITECTURE.name} has no layers block between the layers markers"
    lines = [line.split("#")[0].strip() for line in drawn.group(1).splitlines()]
    in_doc = [" | ".join(name.strip() for name in line.split("|")) for line in lines if line]
    (layers,) = [contract for contract in _contracts() if contract["type"] == "layers"]
    in_contract = [
        " | ".join(name.strip().removeprefix("edgewise.") for name in layer.split("|"))
        for layer in layers["layers"]
    ]
    assert in_doc == in_contract


def _layout_folders(document: Path) -> set[str]:
    """The folders a document's Layout table lists (its rows' first cell, `X/`)."""
    text = document.read_text()
    table = text[text.index("| folder | import | holds |") :].split("\n\n", 1)[0]
    return {match.group(1) for match in re.finditer(r"^\| `([\w.-]+)/` \|", table, re.MULTILINE)}


@pytest.mark.parametrize("document", [ROOT / "README.md", ARCHITECTURE], ids=lambda path: path.name)
def test_the_layout_tables_list_every_package_folder(document: Path):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = {path.split("/")[0] for path in config["tool"]["setuptools"]["package-dir"].values()}
    listed = _layout_folders(document)
    assert folders - {"edgewise"} <= listed, (
        f"{document.name} lacks {sorted(folders - listed - {'edgewise'})}"
    )
    assert all((ROOT / folder).is_dir() for folder in listed), (
        f"{document.name} lists a folder that is not there"
    )
