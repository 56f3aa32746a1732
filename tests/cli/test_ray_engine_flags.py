"""`edgewise extract --engine` flags checked before anything runs; these need no Ray installed."""

from __future__ import annotations

import json
import sys

import pytest

from edgewise.cli import main
from edgewise.cli.extract_ray import MISSING_RAY

GOOD = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme Corp in 2021.",
    "entities": [{"name": "Alice"}, {"name": "Acme Corp"}],
    "referenceTime": "2025-04-30T00:00:00Z",
}
MODEL = ["--model", "openai/mock", "--api-base", "http://127.0.0.1:9/v1", "--no-progress"]


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    return path


def test_without_ray_the_engine_says_which_extra_to_install(tmp_path, source, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the extra
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    assert main(["extract", "--engine", "ray", "-i", str(source), "-o", str(out), *MODEL]) == 1
    assert f"edgewise: error: {MISSING_RAY}" in capsys.readouterr().err
    assert out.read_text() == "earlier results\n"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--actors", "4"], "--actors need --engine ray"),
        (["--address", "auto"], "--address need --engine ray"),
        (["--api-base", "http://127.0.0.1:9/v1,http://127.0.0.1:10/v1"], "several --api-base servers need"),
        (["-o", "OUT/edges.parquet"], "is Parquet: Parquet files need --engine ray"),
        (["-i", "OUT"], "is a folder: folders of episodes need --engine ray"),
    ],
)
def test_the_local_engine_refuses_what_only_ray_does(tmp_path, source, capsys, flags, message):
    flags = [flag.replace("OUT", str(tmp_path)) for flag in flags]
    assert main(["extract", "-i", str(source), *MODEL, *flags]) == 1
    assert message in capsys.readouterr().err


def test_the_ray_engine_needs_files_and_never_reads_its_own_output(tmp_path, source, capsys):
    assert main(["extract", "--engine", "ray", "-i", str(source), *MODEL]) == 1
    assert "--engine ray reads --input" in capsys.readouterr().err
    folder = tmp_path / "episodes"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(GOOD) + "\n")
    assert (
        main(["extract", "--engine", "ray", "-i", str(folder), "-o", str(folder / "out.jsonl"), *MODEL]) == 1
    )
    assert "the output is inside the input folder" in capsys.readouterr().err
    assert main(["extract", "--engine", "ray", "-i", str(source), "-o", str(source), *MODEL]) == 1
    assert "the output is the input file" in capsys.readouterr().err
    assert source.read_text() == json.dumps(GOOD) + "\n"
