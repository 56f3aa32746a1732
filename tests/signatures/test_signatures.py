"""The signatures carry every rule of the seed: a later edit cannot silently drop one."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from paths import FIXTURES

from edgewise.domain.types import EdgeType
from edgewise.signatures.extract_edge_attributes import (
    ExtractEdgeAttributes,
    attributes_model,
    attributes_signature,
)
from edgewise.signatures.extract_edges import ExtractEdges, extract_signature, with_missing_facts
from edgewise.signatures.find_missing_facts import FindMissingFacts
from edgewise.signatures.replies import CompactEdge

SEED = (FIXTURES / "seed" / "extractEdges.ts").read_text()


def _normalize(text: str) -> str:
    """Compare words, not markdown: drop **bold**, `code` ticks and line wrapping."""
    return " ".join(text.replace("**", "").replace("`", "").replace("\\", "").split())


def _section(start: str, end: str) -> str:
    return SEED[SEED.index(start) + len(start) : SEED.index(end, SEED.index(start))]


def _rules(start: str, end: str, marker: str) -> list[str]:
    """Bulleted or numbered rules between two headings, one string per rule (wrapped lines joined)."""
    rules: list[str] = []
    for line in _section(start, end).splitlines():
        if re.match(marker, line.strip()):
            rules.append(line.strip())
        elif line.strip() and rules and line.startswith("    "):
            rules[-1] += " " + line.strip()
    return [re.sub(marker, "", rule, count=1).strip() for rule in rules]


EXTRACTION_RULES = _rules("# EXTRACTION RULES", "# DATETIME RULES", r"^\d+\.\s")
DATETIME_RULES = _rules("# DATETIME RULES", "Respond with", r"^-\s")
TASK_RULES = _rules("Only extract facts that:", "You may use", r"^-\s")
SYSTEM_SENTENCES = [
    "You are an expert fact extractor that extracts fact triples from text.",
    "Extracted fact triples should also be extracted with relevant date information.",
    "Treat the CURRENT TIME as the time the CURRENT EPISODE was created.",
    "All temporal information should be extracted relative to this time.",
    "Extract all factual relationships between the given ENTITIES based on the CURRENT EPISODE.",
    "You may use information from the PREVIOUS EPISODES only to disambiguate references or support continuity.",
]


def test_the_seed_yields_the_expected_rule_counts():
    assert len(EXTRACTION_RULES) == 7
    assert len(DATETIME_RULES) == 6
    assert len(TASK_RULES) == 3


@pytest.mark.parametrize("rule", EXTRACTION_RULES + DATETIME_RULES + TASK_RULES + SYSTEM_SENTENCES)
def test_extract_edges_instructions_carry_every_seed_rule(rule):
    assert _normalize(rule) in _normalize(ExtractEdges.instructions)


@pytest.mark.parametrize(
    "sentence",
    [
        "You are an AI assistant that determines which facts have not been extracted from the given context",
        (
            "Given the above EPISODES, list of EXTRACTED ENTITIES entities, and list of EXTRACTED FACTS; "
            "determine if any facts haven't been extracted."
        ),
    ],
)
def test_find_missing_facts_carries_the_reflexion_prompt(sentence):
    assert _normalize(sentence) in _normalize(FindMissingFacts.instructions)


ATTRIBUTE_RULES = _rules("Guidelines:", "<FACT>", r"^\d+\.\s")


@pytest.mark.parametrize(
    "sentence",
    ATTRIBUTE_RULES
    + [
        "You are a helpful assistant that extracts fact properties from the provided text.",
        "Use the provided attribute descriptions to better understand how each attribute should be determined.",
    ],
)
def test_extract_edge_attributes_carries_the_attributes_prompt(sentence):
    assert len(ATTRIBUTE_RULES) == 2
    assert _normalize(sentence) in _normalize(ExtractEdgeAttributes.instructions)


def test_extract_edges_fields_mirror_the_seed_blocks():
    # Shared inputs first (cached prefix), the episode's own last.
    assert list(ExtractEdges.input_fields) == [
        "relationship_types",
        "custom_prompt",
        "previous_episodes",
        "entities",
        "reference_time",
        "episode_content",
    ]
    assert list(ExtractEdges.output_fields) == ["edges"]
    # The reviewer's hints exist only in a re-extraction call, as the last input.
    assert list(with_missing_facts(ExtractEdges).input_fields)[-1] == "missing_facts"
    assert list(FindMissingFacts.output_fields) == ["missing_facts"]


def test_attribute_signature_output_is_a_concrete_model_keeping_tuned_instructions():
    edge_type = EdgeType(
        name="WORKS_AT",
        attributes=[{"name": "role", "kind": "string"}, {"name": "since_year", "kind": "integer"}],
    )
    tuned = ExtractEdgeAttributes.with_instructions("TUNED")
    signature = attributes_signature(tuned, edge_type)
    model = signature.output_fields["attributes"].annotation
    assert signature.instructions == "TUNED"
    assert set(model.model_fields) == {"role", "since_year"}
    assert model.model_validate({"role": "cto", "since_year": 2020}).since_year == 2020
    assert attributes_model(edge_type).model_json_schema()["properties"]["since_year"]["anyOf"][0] == {
        "type": "integer"
    }


def test_compact_shape_keeps_the_instructions_and_changes_only_the_reply():
    compact = extract_signature("compact")
    assert compact.instructions == ExtractEdges.instructions
    assert list(compact.input_fields) == list(ExtractEdges.input_fields)
    item = compact.output_fields["edges"].annotation.__args__[0]
    assert list(item.model_fields) == ["source", "type", "target", "fact", "validAt", "invalidAt"]
    with pytest.raises(ValueError, match="unknown output shape"):
        extract_signature("tiny")  # type: ignore[arg-type]


def test_compact_edge_maps_back_to_the_seed_names_and_the_reference_instant():
    reference = datetime(2024, 3, 18, 20, 0, tzinfo=UTC)
    compact = CompactEdge(
        source="Ana", type="WORKS_AT", target="Acme", fact="f", validAt="2024-03-18", invalidAt="2025-01-02"
    )
    edge = compact.extracted(reference)
    assert (edge.sourceEntityName, edge.relationshipType, edge.targetEntityName) == (
        "Ana",
        "WORKS_AT",
        "Acme",
    )
    assert edge.validAt == "2024-03-18T20:00:00Z"  # ongoing: REFERENCE_TIME itself, as the seed asks
    assert edge.invalidAt == "2025-01-02"  # other days are left to post-processing


def test_the_labeled_fields_an_episode_knows_are_those_a_labeled_episode_adds() -> None:
    from edgewise.domain.episode import LABELED_FIELDS, Episode
    from edgewise.domain.gold import LabeledEpisode

    def names(model: type) -> set[str]:
        return {alias for name, field in model.model_fields.items() for alias in (name, field.alias) if alias}

    assert names(LabeledEpisode) - names(Episode) == LABELED_FIELDS
