"""The labeled splits as a Hugging Face dataset: declared column types, and an exact round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgewise.cli import main
from edgewise.data.hf import features, from_row, to_dataset
from edgewise.data.loader import load_episodes

datasets = pytest.importorskip("datasets")


@pytest.mark.parametrize("split", ["dev", "smoke"])
def test_every_episode_comes_back_from_its_row_unchanged(split: str) -> None:
    episodes = load_episodes(split)
    dataset = to_dataset(episodes)
    assert dataset.features == features() and len(dataset) == len(episodes)
    assert [from_row(row) for row in dataset] == episodes


def test_dates_stay_iso_strings_and_attributes_json() -> None:
    dataset = to_dataset(load_episodes("smoke"))
    assert dataset.features["referenceTime"] == datasets.Value("string")
    assert all(row["referenceTime"].endswith("Z") for row in dataset)
    edge = next(edge for row in dataset for edge in row["edges"])
    assert edge["attributes"] == "{}"


def test_cli_export_writes_a_dataset_dict_and_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "export", str(tmp_path / "hf"), "--split", "smoke"]) == 0
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert list(loaded) == ["smoke"] and len(loaded["smoke"]) == len(load_episodes("smoke"))
    assert main(["data", "export", str(tmp_path / "pq"), "--split", "smoke", "--format", "parquet"]) == 0
    table = datasets.Dataset.from_parquet(str(tmp_path / "pq" / "smoke.parquet"))
    assert [from_row(row) for row in table] == load_episodes("smoke")
    assert "wrote" in capsys.readouterr().out
