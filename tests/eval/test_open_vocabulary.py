"""The open-vocabulary case: types that normalize alike, the alias-aware edge-F1, type shares, the bench flag."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedLM, edge, edges_reply
from paths import ROOT

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval.bench import run_bench
from edgewise.eval.bench_records import BenchReport
from edgewise.eval.open_vocabulary import (
    alias_aware_score,
    canonical_type,
    dominant_type,
    named_like_gold,
    type_shares,
    without_vocabulary,
)
from edgewise.eval.scoring import score_episode
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("WORKS_FOR", "WORKS_AT"),
        ("worksAt", "WORKS_AT"),
        ("works at", "WORKS_AT"),
        ("IS_MARRIED_TO", "MARRIED_TO"),
        ("WAS_MARRIED_TO", "MARRIED"),
        ("SIBLING_OF", "SIBLING"),
        ("LIVES_IN", "LIVES_AT"),
    ],
)
def test_types_that_differ_in_style_normalize_alike(first: str, second: str) -> None:
    assert canonical_type(first) == canonical_type(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("EMPLOYED_BY", "EMPLOYS"),  # the passive runs the other way
        ("EMPLOYED_BY", "EMPLOYED"),
        ("HAS_CHILD", "CHILD_OF"),  # the same relation reversed
        ("MOVED_FROM", "MOVED_TO"),
        ("WORKED_AT", "WORKS_AT"),  # tense is meaning
        ("LIVES_IN", "RESIDES_IN"),  # a synonym counts only as a gold alias
    ],
)
def test_types_that_differ_in_meaning_do_not(first: str, second: str) -> None:
    assert canonical_type(first) != canonical_type(second)


def test_a_preposition_or_copula_alone_is_kept() -> None:
    assert canonical_type("OF") == "OF" and canonical_type("IS") == "IS"


GOLD = LabeledEpisode.model_validate(
    {
        "id": "g-1",
        "source": "s",
        "license": "CC0-1.0",
        "episodeContent": "Ann works at Co. Bo lives in Leeds.",
        "entities": ["Ann", "Co", "Bo", "Leeds"],
        "referenceTime": "2025-01-01T00:00:00Z",
        "edgeTypes": [{"name": "WORKS_AT"}, {"name": "LIVES_IN"}],
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Ann",
                "targetEntityName": "Co",
                "fact": "Ann works at Co.",
                "aliases": ["EMPLOYED_BY"],
            },
            {
                "relationshipType": "LIVES_IN",
                "sourceEntityName": "Bo",
                "targetEntityName": "Leeds",
                "fact": "x",
            },
        ],
    }
)


def _edge(source: str, kind: str, target: str) -> Edge:
    return Edge(relationship_type=kind, source_entity_name=source, target_entity_name=target, fact="f")


def test_the_alias_aware_score_credits_a_type_that_normalizes_like_the_gold_or_an_alias() -> None:
    predicted = [_edge("Ann", "WORKS_FOR", "Co"), _edge("Bo", "RESIDES_IN", "Leeds")]
    assert score_episode(GOLD, predicted).tp == 0
    aware = alias_aware_score(GOLD, predicted)
    assert (aware.tp, aware.fp, aware.fn) == (1, 1, 1)  # RESIDES_IN is no alias here: still wrong
    assert alias_aware_score(GOLD, [_edge("Ann", "IS_EMPLOYED_BY", "Co")]).tp == 1  # like the alias


def test_renaming_stays_inside_the_entity_pair_and_keeps_direction_judged() -> None:
    other_pair = [_edge("Ann", "WORKS_FOR", "Leeds")]
    assert named_like_gold(GOLD, other_pair)[0].relationship_type == "WORKS_FOR"
    reversed_edge = alias_aware_score(GOLD, [_edge("Co", "WORKS_FOR", "Ann")])
    assert (reversed_edge.tp, len(reversed_edge.reversed)) == (0, 1)


def test_type_shares_and_the_dominant_type() -> None:
    predicted = [_edge("a", "WORKS_AT", "b")] * 3 + [_edge("a", "lives in", "b")]
    shares = type_shares(predicted, GOLD.edges)
    assert [(s.type, s.edges, s.share, s.gold_edges, s.gold_share) for s in shares] == [
        ("WORKS_AT", 3, 0.75, 1, 0.5),
        ("LIVES_IN", 1, 0.25, 1, 0.5),
    ]
    assert dominant_type(shares) == shares[0]
    # the gold writing the type as often is no fault
    assert dominant_type(type_shares(predicted[:2], [GOLD.edges[0]])) is None
    assert type_shares([], GOLD.edges) == [] and dominant_type([]) is None


def test_without_vocabulary_drops_only_the_types() -> None:
    episode = without_vocabulary(GOLD.episode())
    assert episode.edge_types == [] and episode.entities == GOLD.episode().entities


def test_the_bench_sends_no_types_and_reports_the_open_vocabulary_scores(tmp_path: Path) -> None:
    seen: list[str] = []

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        seen.append("\n".join(str(message.get("content")) for message in messages))
        return edges_reply(edge("Ann", "WORKS_FOR", "Co"), edge("Bo", "WORKS_FOR", "Leeds"))

    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(respond, model=config.model)

    report = run_bench(
        [LMConfig(model="openai/mock")],
        {"default": resolve_program("default")},
        [GOLD],
        workers=1,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory,
        open_vocabulary=True,
    )
    assert seen and all("LIVES_IN" not in text for text in seen)  # no relationship type was offered
    [run] = report.runs
    assert run.scores is not None and run.scores.edge_f1 == 0.0
    assert run.edge_f1_alias_aware == pytest.approx(0.5)  # one of two gold edges, one of two predictions
    assert [(s.type, s.share, s.gold_share) for s in run.type_shares] == [("WORKS_FOR", 1.0, 0.0)]
    assert run.episodes[0].alias_aware is not None and run.episodes[0].alias_aware.tp == 1
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["open_vocabulary"] is True and results["runs"][0]["edge_f1_alias_aware"] == 0.5
    table = (tmp_path / "results.md").read_text()
    assert "Open vocabulary (episodes sent without edgeTypes)" in table
    assert "| openai/mock | default | 0.500 [" in table and "WORKS_FOR 1.00 (gold 0.00)" in table


RESULTS = ROOT / "benchmarks" / "results"
_spec = importlib.util.spec_from_file_location("type_shares", RESULTS.parent / "type_shares.py")
assert _spec is not None and _spec.loader is not None
type_shares_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(type_shares_script)


def test_the_script_reads_a_bench_folder_back_to_the_bench_s_own_edge_f1() -> None:
    folder = RESULTS / "test-conversational-graphiti-1.5b" / "chunk-1"
    report = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    rows = [line.split(" | ") for line in type_shares_script.table([folder]).splitlines()[2:]]
    by_program = {row[1]: row for row in rows}
    for run in report.runs:
        assert run.scores is not None
        row = by_program[run.program]
        assert float(row[6]) == round(run.scores.edge_f1, 3), run.program  # plain edge-F1, as benched
        assert float(row[5]) >= float(row[6])  # alias-aware never counts fewer right
        assert int(row[3]) == sum(episode.n_predicted for episode in run.episodes)
