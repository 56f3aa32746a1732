"""Each post-processing rule, one by one, on hand-written raw edges."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge
from edgewise.modules.call_context import CallContext
from edgewise.modules.postprocess import (
    MAX_ATTRIBUTE_CHARS,
    EntityIndex,
    cap_attributes,
    name_key,
    parse_date,
    postprocess,
    to_screaming_snake,
)
from edgewise.signatures.replies import ExtractedEdge


def _episode(names: list[str], symmetric: tuple[str, ...] = ()) -> Episode:
    return Episode(
        episode_content="text",
        entities=[{"name": name} for name in names],
        reference_time="2025-04-30T12:00:00Z",
        edge_types=[{"name": t, "symmetric": True} for t in symmetric],
    )


def _raw(source: str, rel: str, target: str, fact: str = "a fact", **dates: str | None) -> ExtractedEdge:
    return ExtractedEdge(
        relationshipType=rel, sourceEntityName=source, targetEntityName=target, fact=fact, **dates
    )


def _codes(warnings) -> list[str]:
    return [w.code for w in warnings]


def test_exact_name_kept_without_warning():
    edges, warnings = postprocess([_raw("Alice", "WORKS_AT", "Acme")], _episode(["Alice", "Acme"]))
    assert [(e.source_entity_name, e.target_entity_name) for e in edges] == [("Alice", "Acme")]
    assert warnings == []


def test_names_resolve_case_whitespace_and_diacritic_insensitively():
    edges, warnings = postprocess(
        [_raw("  josé   DÍAZ ", "WORKS_AT", "acme")], _episode(["José Díaz", "Acme"])
    )
    assert (edges[0].source_entity_name, edges[0].target_entity_name) == ("José Díaz", "Acme")
    assert _codes(warnings) == ["name_resolved", "name_resolved"]


def test_unknown_entity_is_dropped_never_invented():
    edges, warnings = postprocess([_raw("Alice", "WORKS_AT", "Globex")], _episode(["Alice", "Acme"]))
    assert edges == []
    assert _codes(warnings) == ["unknown_entity"]
    assert "Globex" in warnings[0].message


def test_ambiguous_normalized_name_is_not_guessed():
    index = EntityIndex(["Jose", "José"])
    assert index.resolve("JOSE") is None
    assert index.resolve("José") == "José"


def test_self_edge_dropped_after_resolution():
    edges, warnings = postprocess([_raw("alice", "KNOWS", "Alice")], _episode(["Alice", "Bob"]))
    assert edges == []
    assert _codes(warnings) == ["name_resolved", "self_edge"]


def test_empty_fact_dropped():
    edges, warnings = postprocess([_raw("Alice", "KNOWS", "Bob", fact="   ")], _episode(["Alice", "Bob"]))
    assert edges == []
    assert _codes(warnings) == ["empty_fact"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("worksAt", "WORKS_AT"),
        ("works at", "WORKS_AT"),
        ("Works-At", "WORKS_AT"),
        ("WORKS_AT", "WORKS_AT"),
        ("founded by", "FOUNDED_BY"),
        ("HTTPServer2", "HTTPSERVER2"),
    ],
)
def test_types_become_screaming_snake_case(given: str, expected: str):
    assert to_screaming_snake(given) == expected


def test_renamed_type_is_reported_and_unusable_type_dropped():
    edges, warnings = postprocess(
        [_raw("Alice", "works at", "Acme"), _raw("Alice", "!!!", "Acme")], _episode(["Alice", "Acme"])
    )
    assert [e.relationship_type for e in edges] == ["WORKS_AT"]
    assert _codes(warnings) == ["type_renamed", "empty_type"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2025-04-30T00:00:00Z", datetime(2025, 4, 30, tzinfo=UTC)),
        ("2025-04-30", datetime(2025, 4, 30, tzinfo=UTC)),
        ("2021", datetime(2021, 1, 1, tzinfo=UTC)),
        ("2021-03", datetime(2021, 3, 1, tzinfo=UTC)),
        ("2025-04-30T14:00:00+02:00", datetime(2025, 4, 30, 12, tzinfo=UTC)),
        ("2025-04-30T14:00:00", datetime(2025, 4, 30, 14, tzinfo=UTC)),
        ("null", None),
        ("", None),
        (None, None),
    ],
)
def test_dates_parse_to_utc(given, expected):
    assert parse_date(given) == (expected, None)


def test_unparseable_date_becomes_null_with_warning():
    edges, warnings = postprocess(
        [_raw("Alice", "WORKS_AT", "Acme", validAt="last spring")], _episode(["Alice", "Acme"])
    )
    assert edges[0].valid_at is None
    assert _codes(warnings) == ["bad_date"]
    assert "last spring" in warnings[0].message


def test_date_only_and_year_only_are_completed_and_reported():
    edges, warnings = postprocess(
        [_raw("Alice", "WORKS_AT", "Acme", validAt="2021", invalidAt="2023-06-01")],
        _episode(["Alice", "Acme"]),
    )
    assert edges[0].to_json_dict()["validAt"] == "2021-01-01T00:00:00Z"
    assert edges[0].to_json_dict()["invalidAt"] == "2023-06-01T00:00:00Z"
    assert _codes(warnings) == ["date_normalized", "date_normalized"]


def test_invalid_before_valid_is_swapped():
    edges, warnings = postprocess(
        [_raw("Alice", "WORKS_AT", "Acme", validAt="2023-01-01T00:00:00Z", invalidAt="2021-01-01T00:00:00Z")],
        _episode(["Alice", "Acme"]),
    )
    assert edges[0].valid_at.year == 2021 and edges[0].invalid_at.year == 2023
    assert _codes(warnings) == ["dates_swapped"]


def test_invalid_before_defaulted_valid_drops_the_default():
    edges, warnings = postprocess(
        [_raw("Alice", "WORKS_AT", "Acme", validAt="2025-04-30T12:00:00Z", invalidAt="2024-01-01T00:00:00Z")],
        _episode(["Alice", "Acme"]),
    )
    assert edges[0].valid_at is None and edges[0].invalid_at.year == 2024
    assert _codes(warnings) == ["valid_at_dropped"]


def test_duplicates_dropped_and_later_dates_fill_nulls():
    edges, warnings = postprocess(
        [
            _raw("Alice", "WORKS_AT", "Acme", fact="first"),
            _raw("alice", "works_at", "Acme", fact="second", validAt="2021-01-01T00:00:00Z"),
        ],
        _episode(["Alice", "Acme"]),
    )
    assert len(edges) == 1
    assert edges[0].fact == "first" and edges[0].valid_at.year == 2021
    assert _codes(warnings)[-1] == "duplicate"


def test_symmetric_types_dedupe_across_directions_but_others_do_not():
    episode = _episode(["Alice", "Bob"], symmetric=("MARRIED_TO",))
    edges, _ = postprocess(
        [
            _raw("Alice", "MARRIED_TO", "Bob"),
            _raw("Bob", "MARRIED_TO", "Alice"),
            _raw("Alice", "MANAGES", "Bob"),
            _raw("Bob", "MANAGES", "Alice"),
        ],
        episode,
    )
    assert [(e.source_entity_name, e.relationship_type) for e in edges] == [
        ("Alice", "MARRIED_TO"),
        ("Alice", "MANAGES"),
        ("Bob", "MANAGES"),
    ]


def test_injected_instruction_cannot_create_an_edge_outside_entities():
    edges, _ = postprocess(
        [_raw("Mallory", "WORKS_AT", "Acme"), _raw("Alice", "OWNS", "the database")],
        _episode(["Alice", "Acme"]),
    )
    assert edges == []


def test_attribute_strings_are_capped_and_nulls_dropped():
    edge = Edge(relationship_type="R", source_entity_name="A", target_entity_name="B", fact="f")
    context = CallContext()
    warnings = context.warnings
    capped = cap_attributes({"note": "x" * 600, "role": None, "years": 3}, edge, context)
    assert capped == {"note": "x" * MAX_ATTRIBUTE_CHARS, "years": 3}
    assert _codes(warnings) == ["attribute_truncated"]


def test_name_key_folds_case_space_diacritics():
    assert name_key("  Zoë   Saldaña ") == "zoe saldana"


def _typed_episode(types: list[str]) -> Episode:
    return Episode(
        episode_content="Alice runs the Acme wiki.",
        entities=[{"name": "Alice"}, {"name": "Acme"}],
        reference_time="2025-04-30T12:00:00Z",
        edge_types=[{"name": name} for name in types],
    )


def test_closed_types_drop_an_off_list_type_with_a_warning_naming_it():
    raw = [_raw("Alice", "ADMIN_OF", "Acme"), _raw("Alice", "works at", "Acme")]
    edges, warnings = postprocess(raw, _typed_episode(["WORKS_AT"]), closed_types=True)
    assert [e.relationship_type for e in edges] == ["WORKS_AT"]  # a respelled listed type still counts
    assert _codes(warnings) == ["unknown_type", "type_renamed"]
    assert "'ADMIN_OF' is not one of the RELATIONSHIP TYPES" in warnings[0].message
    assert warnings[0].edge is not None and warnings[0].edge["relationshipType"] == "ADMIN_OF"


def test_open_types_and_episodes_without_a_type_list_keep_any_type():
    raw = [_raw("Alice", "ADMIN_OF", "Acme")]
    assert len(postprocess(raw, _typed_episode(["WORKS_AT"]), closed_types=False)[0]) == 1
    assert len(postprocess(raw, _typed_episode([]), closed_types=True)[0]) == 1


def test_a_hosted_model_sent_no_vocabulary_still_gets_only_listed_types(scripted_lm):
    """No api_base: the request carries no enum, so only post-processing can hold the type list."""
    import dspy
    from fakes import edge, edges_reply

    from edgewise.modules.extractor import EdgeExtractor

    reply = edges_reply(edge("Alice", "ADMIN_OF", "Acme", "Alice runs the Acme wiki."))
    episode = _typed_episode(["WORKS_AT"])
    with dspy.context(lm=scripted_lm([reply, reply]), adapter=dspy.JSONAdapter()):
        closed = EdgeExtractor()(episode).result
        opened = EdgeExtractor(closed_types=False)(episode).result
    assert closed.edges == [] and [w.code for w in closed.warnings] == ["unknown_type"]
    assert [e.relationship_type for e in opened.edges] == ["ADMIN_OF"]


@pytest.mark.parametrize("value", ["0000", "0001-01-01T00:00:00+13:59"])
def test_a_date_outside_the_calendar_is_null_with_a_reason_not_a_crash(value: str) -> None:
    parsed, problem = parse_date(value, None)
    assert parsed is None and problem is not None


def test_a_signature_holds_whatever_spelling_the_type_is_declared_in():
    from edgewise.domain.episode import Episode
    from edgewise.modules.postprocess import postprocess
    from edgewise.signatures.replies import ExtractedEdge

    def kept(declared_name: str) -> list[str]:
        episode = Episode.model_validate(
            {
                "episodeContent": "Ann works at Acme in Leeds.",
                "referenceTime": "2025-01-01T00:00:00Z",
                "entities": [
                    {"name": "Ann", "type": "Person"},
                    {"name": "Acme", "type": "Organization"},
                    {"name": "Leeds", "type": "Location"},
                ],
                "edgeTypes": [
                    {"name": declared_name, "sourceTypes": ["Person"], "targetTypes": ["Organization"]}
                ],
            }
        )
        replies = [
            ExtractedEdge(
                relationshipType="WORKS_AT", sourceEntityName="Ann", targetEntityName=target, fact="x"
            )
            for target in ("Acme", "Leeds")
        ]
        edges, _ = postprocess(replies, episode)
        return [edge.target_entity_name for edge in edges]

    assert kept("WORKS_AT") == kept("worksAt") == ["Acme"]
