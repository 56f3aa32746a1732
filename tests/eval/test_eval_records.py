"""Score records: ratios derived from counts, never stored, and results.json written as it always was."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval import SplitScore, aggregate, score_episode

RESULTS_DIR = ROOT / "benchmarks" / "results"
RESULTS = sorted(RESULTS_DIR.rglob("results.json"))  # chunked benches keep theirs a folder deeper


def _split_scores(path: Path) -> list[dict]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return [run[key] for run in report["runs"] for key in ("scores", "scores_completed") if run.get(key)]


@pytest.mark.parametrize("path", RESULTS, ids=[str(path.parent.relative_to(RESULTS_DIR)) for path in RESULTS])
def test_a_split_score_from_a_results_file_is_written_back_byte_for_byte(path: Path) -> None:
    """Same keys, same order, and every ratio recomputed from the counts equals the one the file holds."""
    scores = _split_scores(path)
    assert scores
    for written in scores:
        again = SplitScore.model_validate(written).model_dump(mode="json")
        assert json.dumps(again) == json.dumps(written)


def test_date_totals_are_the_matched_edges() -> None:
    labeled = LabeledEpisode.model_validate({
        "id": "dates-1", "source": "test", "license": "CC0-1.0", "referenceTime": "2025-01-01T00:00:00Z",
        "episodeContent": "Ana joined Acme in March 2021; Ben left Acme.",
        "entities": [{"name": "Ana"}, {"name": "Ben"}, {"name": "Acme"}],
        "edges": [
            {"relationshipType": "WORKS_AT", "sourceEntityName": "Ana", "targetEntityName": "Acme", "fact": "",
             "validAt": "2021-03-01T00:00:00Z", "validAtGranularity": "month"},
            {"relationshipType": "WORKS_AT", "sourceEntityName": "Ben", "targetEntityName": "Acme", "fact": ""},
        ],
    })  # fmt: skip
    day = datetime(2021, 3, 1, tzinfo=UTC)
    predicted = [
        Edge(relationship_type="WORKS_AT", source_entity_name="Ana", target_entity_name="Acme", fact="", valid_at=day),
        Edge(relationship_type="FOUNDED", source_entity_name="Ana", target_entity_name="Acme", fact=""),
    ]  # fmt: skip
    score = score_episode(labeled, predicted)
    assert (score.tp, score.valid_at_right, score.valid_at_total, score.invalid_at_total) == (1, 1, 1, 1)
    assert score.model_dump()["valid_at_total"] == 1
    split = aggregate([score])
    assert (split.valid_at_total, split.valid_at_accuracy, split.invalid_at_accuracy) == (1, 1.0, 1.0)
    empty = aggregate([score_episode(labeled, [])])
    assert (empty.valid_at_total, empty.valid_at_accuracy) == (0, None)
