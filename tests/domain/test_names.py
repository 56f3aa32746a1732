"""One name rule: post-processing resolves a model's spelling with it and the metric matches edges with it."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Edge, Entity
from edgewise.eval import score_episode
from edgewise.modules.postprocess import EntityIndex


def _decomposed_then_folded(name: str) -> str:
    """The rule spelled out without shortcuts: compatibility decomposition, no marks, case folded, spaces."""
    decomposed = unicodedata.normalize("NFKD", name)
    return " ".join("".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold().split())


@given(st.text(max_size=30))
def test_the_ascii_shortcut_and_the_cache_give_the_rule_itself(name: str) -> None:
    assert normalize_name(name) == _decomposed_then_folded(name)


def test_case_accents_spacing_and_compatibility_forms_do_not_matter() -> None:
    assert normalize_name("  Zoë   Saldaña ") == "zoe saldana"
    assert normalize_name("ᴬna Ｌópez") == normalize_name("ana lopez")  # superscript and full-width capitals


def test_a_spelling_post_processing_resolves_to_an_entity_is_that_entity_for_the_metric() -> None:
    spelling = "ᴬna Ｌópez"  # a compatibility capital: folded only after it is decomposed
    assert EntityIndex(["Ana López", "Acme"]).resolve(spelling) == "Ana López"
    labeled = LabeledEpisode(
        id="names-1",
        source="test",
        license="CC0-1.0",
        episode_content="Ana López works at Acme.",
        reference_time=datetime(2025, 1, 1, tzinfo=UTC),
        entities=[Entity(name="Ana López"), Entity(name="Acme")],
        edges=[
            GoldEdge(
                relationship_type="WORKS_AT",
                source_entity_name="Ana López",
                target_entity_name="Acme",
                fact="",
            )
        ],
    )
    predicted = Edge(
        relationship_type="WORKS_AT", source_entity_name=spelling, target_entity_name="Acme", fact=""
    )
    score = score_episode(labeled, [predicted])
    assert (score.tp, score.fp, score.fn) == (1, 0, 0)
