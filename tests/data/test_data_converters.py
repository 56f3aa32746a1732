"""Each converter on a tiny hand-made excerpt of its raw format, against hand-checked output."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.data.converters.common import detokenize, parse_date_text, screaming_snake, split_sentences
from edgewise.data.converters.dialogre import convert_dialogue
from edgewise.data.converters.redocred import convert_window, edge_type_inventory
from edgewise.data.converters.temporal import (
    Fact,
    parse_tempreason_fact,
    stated_date,
    tempreason_episodes,
    tempreason_page,
    timeqa_item_episodes,
)
from edgewise.data.loader import check_episode


def edge_rows(episode):
    """(source, type, target, validAt, its granularity, invalidAt, its granularity) per gold edge."""
    return [
        (
            e.source_entity_name,
            e.relationship_type,
            e.target_entity_name,
            e.valid_at,
            e.valid_at_granularity,
            e.invalid_at,
            e.invalid_at_granularity,
        )
        for e in episode.edges
    ]


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


# ---------------------------------------------------------------- shared pieces


def test_detokenize_rejoins_punctuation_and_keeps_mention_spans() -> None:
    tokens = [
        "Wilfried",
        '"',
        "Willi",
        '"',
        "Schneider",
        "(",
        "born",
        "13",
        "March",
        "1963",
        "in",
        "Mediaș",
        ",",
        "Transylvania",
        ")",
        "won",
        "a",
        "two",
        "-",
        "year",
        "deal",
        ".",
    ]
    text = detokenize(tokens)
    assert (
        text.text
        == 'Wilfried "Willi" Schneider (born 13 March 1963 in Mediaș, Transylvania) won a two-year deal.'
    )
    assert text.span_text(0, 5) == 'Wilfried "Willi" Schneider'
    assert text.span_text(11, 12) == "Mediaș"


@pytest.mark.parametrize(
    ("text", "value", "granularity"),
    [
        ("13 March 1963", utc(1963, 3, 13), "day"),
        ("May 22, 1863", utc(1863, 5, 22), "day"),
        ("July 2012", utc(2012, 7, 1), "month"),
        ("1998", utc(1998, 1, 1), "year"),
    ],
)
def test_parse_date_text_reads_stated_dates(text: str, value: datetime, granularity: str) -> None:
    assert parse_date_text(text) == (value, granularity)


@pytest.mark.parametrize("text", ["1997 - 8", "the 1990s", "13 March", "31 February 2001"])
def test_parse_date_text_refuses_what_it_cannot_read_exactly(text: str) -> None:
    assert parse_date_text(text) is None


def test_screaming_snake_and_sentence_split() -> None:
    assert screaming_snake("languages spoken, written or signed") == "LANGUAGES_SPOKEN_WRITTEN_OR_SIGNED"
    assert split_sentences("Founded in 1968.It was revived. P. Rao was chair. He left St. Louis.") == [
        "Founded in 1968.",
        "It was revived.",
        "P. Rao was chair.",
        "He left St. Louis.",
    ]


# ---------------------------------------------------------------- Re-DocRED

REL_INFO = {
    "P17": "country",
    "P19": "place of birth",
    "P27": "country of citizenship",
    "P108": "employer",
    "P112": "founded by",
    "P131": "located in the administrative territorial entity",
    "P150": "contains administrative territorial entity",
    "P569": "date of birth",
    "P571": "inception",
}


def mention(name: str, kind: str, sent: int, start: int, end: int) -> dict:
    return {"name": name, "type": kind, "sent_id": sent, "pos": [start, end]}


REDOCRED_DOC = {
    "title": "Anna Berg",
    "sents": [
        [
            "Anna",
            "Berg",
            "(",
            "born",
            "4",
            "May",
            "1970",
            "in",
            "Oslo",
            ")",
            "is",
            "a",
            "Norwegian",
            "chemist",
            ".",
        ],
        ["She", "joined", "Nordic", "Labs", "in", "1999", "."],
        ["Nordic", "Labs", "was", "founded", "in", "1980", "by", "Per", "Lund", "."],
    ],
    "vertexSet": [
        [mention("Anna Berg", "PER", 0, 0, 2)],  # 0
        [mention("4 May 1970", "TIME", 0, 4, 7)],  # 1
        [mention("Oslo", "LOC", 0, 8, 9)],  # 2
        [mention("Norwegian", "LOC", 0, 12, 13)],  # 3
        [mention("Nordic Labs", "ORG", 1, 2, 4), mention("Nordic Labs", "ORG", 2, 0, 2)],  # 4
        [mention("1999", "TIME", 1, 5, 6)],  # 5
        [mention("1980", "TIME", 2, 5, 6)],  # 6
        [mention("Per Lund", "PER", 2, 7, 9)],  # 7
    ],
    "labels": [
        {"r": "P569", "h": 0, "t": 1, "evidence": [0]},
        {"r": "P19", "h": 0, "t": 2, "evidence": [0]},
        {"r": "P27", "h": 0, "t": 3, "evidence": [0]},
        {"r": "P17", "h": 2, "t": 3, "evidence": []},
        {"r": "P150", "h": 3, "t": 2, "evidence": [0]},  # inverse of P131: read back as Oslo -> Norwegian
        {"r": "P108", "h": 0, "t": 4, "evidence": [0, 1]},
        {"r": "P571", "h": 4, "t": 6, "evidence": [2]},
        {"r": "P112", "h": 4, "t": 7, "evidence": [2]},
        # Stated partly in sentence 1: in window [2, 3) both names are present, but this is no fact of it.
        {"r": "P108", "h": 7, "t": 4, "evidence": [1, 2]},
    ],
}


def test_redocred_window_with_dates_and_merged_multi_label_pair() -> None:
    types = edge_type_inventory(REL_INFO)
    episode = convert_window(REDOCRED_DOC, "Anna_Berg", 0, 1, REL_INFO, types)
    assert episode is not None
    assert episode.id == "redocred-Anna_Berg-s0"
    assert episode.episode_content == "Anna Berg (born 4 May 1970 in Oslo) is a Norwegian chemist."
    assert episode.previous_episodes == []
    assert [(e.name, e.type) for e in episode.entities] == [
        ("Anna Berg", "Person"),
        ("Oslo", "Location"),
        ("Norwegian", "Location"),
    ]
    assert edge_rows(episode) == [
        ("Anna Berg", "PLACE_OF_BIRTH", "Oslo", utc(1970, 5, 4), "day", None, None),
        ("Anna Berg", "COUNTRY_OF_CITIZENSHIP", "Norwegian", None, None, None, None),
        ("Oslo", "COUNTRY", "Norwegian", None, None, None, None),
    ]
    # P17 and the reversed P150 (= P131) label the same pair: one edge, the other type an alias.
    assert "LOCATED_IN_THE_ADMINISTRATIVE_TERRITORIAL_ENTITY" in episode.edges[2].aliases
    assert episode.exhaustive is True
    assert {t.name for t in episode.edge_types} >= {"PLACE_OF_BIRTH", "COUNTRY", "EMPLOYER"}
    assert "DATE_OF_BIRTH" not in {t.name for t in episode.edge_types}  # a date relation, never an edge
    assert check_episode(episode) == []


def test_redocred_pronoun_brings_in_the_entity_from_previous_episodes() -> None:
    types = edge_type_inventory(REL_INFO)
    episode = convert_window(REDOCRED_DOC, "Anna_Berg", 1, 2, REL_INFO, types)
    assert episode is not None
    assert episode.episode_content == "She joined Nordic Labs in 1999."
    assert episode.previous_episodes == ["Anna Berg (born 4 May 1970 in Oslo) is a Norwegian chemist."]
    assert [e.name for e in episode.entities] == ["Nordic Labs", "Anna Berg"]
    assert edge_rows(episode) == [("Anna Berg", "EMPLOYER", "Nordic Labs", None, None, None, None)]


def test_redocred_inception_dates_the_founded_by_edge_and_evidence_must_lie_in_the_window() -> None:
    types = edge_type_inventory(REL_INFO)
    episode = convert_window(REDOCRED_DOC, "Anna_Berg", 2, 3, REL_INFO, types)
    assert episode is not None
    assert edge_rows(episode) == [
        ("Nordic Labs", "FOUNDED_BY", "Per Lund", utc(1980, 1, 1), "year", None, None)
    ]


def test_redocred_window_over_the_word_limit_is_refused() -> None:
    long_doc = dict(
        REDOCRED_DOC, sents=[REDOCRED_DOC["sents"][0] + ["word"] * 130, *REDOCRED_DOC["sents"][1:]]
    )
    assert convert_window(long_doc, "Anna_Berg", 0, 1, REL_INFO, edge_type_inventory(REL_INFO)) is None


# ---------------------------------------------------------------- DialogRE


def relation(x: str, y: str, label: str, x_type: str = "PER", y_type: str = "PER") -> dict:
    return {"x": x, "y": y, "r": [label], "t": [""], "rid": [0], "x_type": x_type, "y_type": y_type}


DIALOGUE = [
    [
        "Speaker 1: Hi Mom!",
        "Speaker 2: Hi Ross. Is Emma with Rachel?",
        "Speaker 1: Yes, Rachel has her today.",
    ],
    [
        relation("Speaker 1", "Speaker 2", "per:parents"),
        relation("Speaker 2", "Speaker 1", "per:children"),  # the same fact read backwards
        relation("Speaker 1", "Ross", "per:alternate_names"),
        relation("Rachel", "Emma", "per:children"),
        relation("Emma", "Speaker 2", "unanswerable"),
    ],
]


def test_dialogre_merges_inverse_duplicates_and_drops_unanswerable() -> None:
    episode = convert_dialogue(DIALOGUE, "dev0007")
    assert episode is not None
    assert episode.id == "dialogre-dev0007-0"
    assert episode.episode_content == "\n".join(DIALOGUE[0])
    assert [e.name for e in episode.entities] == ["Speaker 1", "Speaker 2", "Ross", "Rachel", "Emma"]
    assert [(s, t, o) for s, t, o, *_ in edge_rows(episode)] == [
        ("Rachel", "PARENT_OF", "Emma"),
        ("Ross", "ALSO_KNOWN_AS", "Speaker 1"),  # symmetric: one edge, names in sorted order
        ("Speaker 2", "PARENT_OF", "Speaker 1"),
    ]
    assert episode.exhaustive is False
    assert next(t for t in episode.edge_types if t.name == "ALSO_KNOWN_AS").symmetric
    assert check_episode(episode) == []


def test_dialogre_skips_a_dialogue_whose_argument_is_not_in_the_text() -> None:
    broken = [DIALOGUE[0], [relation("Speaker 1", "Monica", "per:siblings")]]
    assert convert_dialogue(broken, "dev0008") is None


# ---------------------------------------------------------------- TempReason (TimeBench copy)

TEMPREASON_ROW = {
    "question": "Which team did Mark Gower play for in Jan, 2004?",
    "answer": ["Barnet F.C."],
    "context": (
        "Mark GowerMark Gower (born 5 October 1978) is an English footballer. He played for Barnet from 2003 to "
        "2006. He joined Southend United in July 2006 and left in 2011. He retired in 2014."
    ),
    "fact_context": (
        "Mark Gower plays for Barnet F.C. from Jan, 2003 to Jan, 2006. \n"
        " Mark Gower plays for Southend United F.C. from Jul, 2006 to Jan, 2011. \n"
        " Mark Gower plays for Swansea City A.F.C. from Jan, 2011 to Jan, 2014."
    ),
}


def test_parse_tempreason_fact() -> None:
    fact = parse_tempreason_fact("Mark Gower plays for Southend United F.C. from Jul, 2006 to Jan, 2011.")
    assert fact == Fact(
        "Mark Gower",
        "PLAYS_FOR",
        "Southend United F.C.",
        (utc(2006, 7, 1), "month"),
        (utc(2011, 1, 1), "month"),
    )


def test_stated_date_uses_only_the_precision_the_text_gives() -> None:
    source = parse_date_text("July 2006")
    assert stated_date(source, "He joined in July 2006.") == (utc(2006, 7, 1), "month")
    assert stated_date(source, "He joined on 14 July 2006.") == (utc(2006, 7, 14), "day")
    assert stated_date(source, "He joined in 2006.") == (utc(2006, 1, 1), "year")
    assert stated_date(source, "He joined later.") is None


def test_tempreason_keeps_facts_whose_object_and_dates_the_window_states() -> None:
    title, text, facts = tempreason_page(TEMPREASON_ROW)
    assert title == "Mark Gower"
    episodes = tempreason_episodes(title, text, facts)
    assert [e.id for e in episodes] == ["tempreason-Mark_Gower-s1", "tempreason-Mark_Gower-s2"]
    first, second = episodes
    assert first.episode_content == "He played for Barnet from 2003 to 2006."
    assert first.previous_episodes == ["Mark Gower (born 5 October 1978) is an English footballer."]
    assert [e.name for e in first.entities] == ["Mark Gower", "Barnet"]
    assert edge_rows(first) == [
        ("Mark Gower", "PLAYS_FOR", "Barnet", utc(2003, 1, 1), "year", utc(2006, 1, 1), "year"),
    ]
    assert edge_rows(second) == [
        ("Mark Gower", "PLAYS_FOR", "Southend United", utc(2006, 7, 1), "month", utc(2011, 1, 1), "year"),
    ]
    # Swansea is never named in the text: no episode, no edge.
    assert all(e.target_entity_name != "Swansea City" for ep in episodes for e in ep.edges)
    assert all(ep.exhaustive is False and check_episode(ep) == [] for ep in episodes)


# ---------------------------------------------------------------- TimeQA

TIMEQA_PARAS = [
    "Ana Lopes",
    "Ana Lopes ( born 1980 ) is a Portuguese coach .",
    "Lopes coached Sporting B from 2010 to 2014 . She then moved to Braga .",
]


def timeqa_answer(answer: str, para: int = 2) -> dict:
    start = TIMEQA_PARAS[para].index(answer)
    return {"para": para, "from": start, "end": start + len(answer), "answer": answer}


TIMEQA_ITEM = {
    "index": "/wiki/Sporting_B#P286",
    "type": "P6087",
    "link": "/wiki/Ana_Lopes",
    "questions": [
        ["Which team did Ana Lopes coach from 2010 to 2014?", [timeqa_answer("Sporting B")]],
        ["Which team did Ana Lopes coach in 2016?", [timeqa_answer("Braga")]],  # one year: not used
    ],
    "paras": TIMEQA_PARAS,
}


def test_timeqa_uses_range_questions_whose_years_the_answer_sentence_states() -> None:
    episodes = timeqa_item_episodes(TIMEQA_ITEM)
    assert len(episodes) == 1
    episode = episodes[0]
    assert episode.id == "timeqa-Ana_Lopes-s1"
    assert episode.episode_content == "Lopes coached Sporting B from 2010 to 2014."
    assert episode.previous_episodes == ["Ana Lopes (born 1980) is a Portuguese coach."]
    assert edge_rows(episode) == [
        ("Ana Lopes", "HEAD_COACH_OF", "Sporting B", utc(2010, 1, 1), "year", utc(2014, 1, 1), "year"),
    ]
    assert check_episode(episode) == []


def test_timeqa_drops_a_fact_whose_years_are_not_in_the_text() -> None:
    item = dict(
        TIMEQA_ITEM,
        questions=[["Which team did Ana Lopes coach from 2009 to 2014?", [timeqa_answer("Sporting B")]]],
    )
    assert timeqa_item_episodes(item) == []


def test_a_season_is_not_a_stated_year() -> None:
    assert stated_date(parse_date_text("2016"), "a loan until the end of the 2016–17 season") is None
    assert stated_date(parse_date_text("2013"), "in 2013–2018 he worked there") == (utc(2013, 1, 1), "year")


def test_dialogre_form_of_address_is_not_an_alternate_name() -> None:
    dialogue = [
        ["Speaker 1: Sir? Ross?", "Speaker 2: Yes."],
        [
            relation("Speaker 2", "Sir", "per:alternate_names"),
            relation("Speaker 2", "Ross", "per:alternate_names"),
        ],
    ]
    episode = convert_dialogue(dialogue, "dev0009")
    assert episode is not None
    assert [(s, t, o) for s, t, o, *_ in edge_rows(episode)] == [("Ross", "ALSO_KNOWN_AS", "Speaker 2")]
    assert "Sir" in [e.name for e in episode.entities]  # still listed, as a distractor


def test_timeqa_list_item_without_its_heading_gives_no_episode() -> None:
    paras = ["Ana Lopes", "Ana Lopes ( born 1980 ) is a coach .", "- Sporting B ( 2010 – 2014 )"]
    start = paras[2].index("Sporting B")
    item = {
        "type": "P6087",
        "questions": [
            [
                "Which team did Ana Lopes coach from 2010 to 2014?",
                [{"para": 2, "from": start, "end": start + 10, "answer": "Sporting B"}],
            ]
        ],
        "paras": paras,
    }
    assert timeqa_item_episodes(item) == []


def test_each_converter_reads_an_alias_table_of_its_own_types_from_package_data() -> None:
    """The tables are data beside the converters, so a wheel must carry them; a key that is no gold
    type of its converter (a typo in the file) would silently give no aliases."""
    import tomllib

    from edgewise.data.converters import dialogre, redocred, temporal, vocabulary

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"]["package-data"]  # fmt: skip
    assert vocabulary.ALIASES_FILE.name in package_data["edgewise.data.converters"]
    for module in (dialogre, temporal):
        assert module.ALIASES and set(module.ALIASES) <= {t.name for t in module.EDGE_TYPES}
    assert redocred.ALIASES and all(re.fullmatch(r"P\d+", rel) for rel in redocred.ALIASES)


def test_a_bad_alias_file_or_unknown_converter_is_named(tmp_path: Path) -> None:
    from edgewise.data.converters.vocabulary import type_aliases

    path = tmp_path / "aliases.json"
    path.write_text('{"dialogre": {"LIKES": "FANCIES"}}')
    with pytest.raises(ValueError, match=r"(?s)aliases\.json: .*\ndialogre\.LIKES\n"):
        type_aliases("dialogre", path)
    path.write_text('{"dialogre": {"LIKES": ["FANCIES"]}}')
    assert type_aliases("dialogre", path) == {"LIKES": ["FANCIES"]}
    with pytest.raises(ValueError, match=r"no alias table for 'temporal' \(tables: dialogre\)"):
        type_aliases("temporal", path)
