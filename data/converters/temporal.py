# Over 400 lines: two sources of one format (TempReason, TimeQA) share one converter.
"""Time-scoped facts (TempReason via TimeBench, and TimeQA) as short Wikipedia-sentence episodes.

Both sources pair a Wikipedia page with facts that hold from a start to an end ("X plays for Y from
2003 to 2006"). A fact becomes a gold edge only when one or two consecutive sentences of the page
name its object and state its dates; that window is the episode and the page's opening sentence is
the previous episode. The gold lists only those facts, so these episodes are `exhaustive: false`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, NamedTuple

from edgewise.data.converters.common import (
    FIXED_REFERENCE_TIME,
    MAX_EPISODE_WORDS,
    DatedValue,
    clean_spaced_text,
    month_number,
    slug,
    split_sentences,
    word_count,
)
from edgewise.data.converters.vocabulary import edge_types, type_aliases
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import EdgeType, Entity


class Source(NamedTuple):
    """One of the two sources: its name (the episodes' `source` and id prefix) and their license."""

    name: str
    license: str


TEMPREASON: Final = Source("tempreason", "TempReason CC BY-SA 3.0 (via TimeBench, MIT); text from Wikipedia")
TIMEQA: Final = Source("timeqa", "TimeQA BSD-3-Clause; text from Wikipedia, CC BY-SA")
#: Other type names a prediction may use for each gold type.
ALIASES: Final[dict[str, list[str]]] = type_aliases("temporal")
SEED: Final[int] = 20240103
#: At most this many episodes from one page, so a few long pages do not fill the source.
MAX_EPISODES_PER_PAGE: Final[int] = 3


class Fact(NamedTuple):
    """A time-scoped fact as its source states it (subject and object in the edge's direction)."""

    subject: str
    type_name: str
    obj: str
    start: DatedValue
    end: DatedValue | None


EDGE_TYPES: Final[tuple[EdgeType, ...]] = edge_types(
    {
        "PLAYS_FOR": "the subject (an athlete) plays or played for the object (a team)",
        "WORKS_FOR": "the subject is or was employed by the object",
        "HOLDS_POSITION": "the subject holds or held the object (a position or office)",
        "CHAIR_OF": "the subject chairs or chaired the object (an organization)",
        "HEAD_COACH_OF": "the subject is or was head coach of the object (a team)",
        "ATTENDED": "the subject studied at the object (a school or university)",
        "MEMBER_OF": "the subject is or was a member of the object (a group)",
        "MEMBER_OF_POLITICAL_PARTY": "the subject is or was a member of the object (a party)",
        "HEAD_OF_GOVERNMENT_OF": "the subject is or was mayor, premier or other head of government of the object",
        "OWNED_BY": "the subject is or was owned by the object",
        "SPOUSE_OF": "the two people are or were married",
        "WORKS_AT": "the subject works or worked at the object (a place or institution)",
        "LIVES_IN": "the subject lives or lived in the object (a place)",
        "CITIZEN_OF": "the subject is or was a citizen of the object (a country)",
        "DIRECTOR_OF": "the subject directs or directed the object (an organization)",
        "CEO_OF": "the subject is or was chief executive of the object",
        "PARENT_ORGANIZATION": "the object is or was the parent organization of the subject",
        "OPERATED_BY": "the subject (a ship, line, site) is or was operated by the object",
        "PLAYS_IN_LEAGUE": "the subject (a team) plays or played in the object (a league)",
        "HEADQUARTERED_IN": "the subject has or had its headquarters in the object",
        "PRESENTER_OF": "the subject presents or presented the object (a show)",
        "HOME_VENUE": "the object is or was the home ground of the subject (a team)",
        "RECORD_LABEL": "the subject (an artist) is or was signed to the object",
    },
    symmetric={"SPOUSE_OF"},
)

#: TempReason's fact sentences: "<subject> <predicate> <object> from <Mon, YYYY> to <Mon, YYYY>."
TEMPREASON_PREDICATES: Final[dict[str, str]] = {
    "plays for": "PLAYS_FOR",
    "works for": "WORKS_FOR",
    "holds the position of": "HOLDS_POSITION",
    "is the chair of": "CHAIR_OF",
    "is the head coach of": "HEAD_COACH_OF",
    "attended": "ATTENDED",
    "is a member of": "MEMBER_OF",
    "is the head of the government of": "HEAD_OF_GOVERNMENT_OF",
    "is owned by": "OWNED_BY",
}
_TEMPREASON_FACT: Final[re.Pattern[str]] = re.compile(
    r"^(?P<s>.+?) (?P<p>" + "|".join(TEMPREASON_PREDICATES) + r") (?P<o>.+?)"
    r"(?: from (?P<a>[A-Z][a-z]{2}, \d{4}))?(?: to (?P<b>[A-Z][a-z]{2}, \d{4}))?\s*\.?\s*$"
)

#: TimeQA question types used: P-id -> (edge type, True when the page is the edge's object).
TIMEQA_TYPES: Final[dict[str, tuple[str, bool]]] = {
    "P54": ("PLAYS_FOR", False),
    "P108": ("WORKS_FOR", False),
    "P39": ("HOLDS_POSITION", False),
    "P69": ("ATTENDED", False),
    "P463": ("MEMBER_OF", False),
    "P102": ("MEMBER_OF_POLITICAL_PARTY", False),
    "P26": ("SPOUSE_OF", False),
    "P127": ("OWNED_BY", False),
    "P286": ("HEAD_COACH_OF", True),
    "P6087": ("HEAD_COACH_OF", False),
    "P488": ("CHAIR_OF", True),
    "P6": ("HEAD_OF_GOVERNMENT_OF", True),
    "P937": ("WORKS_AT", False),
    "P551": ("LIVES_IN", False),
    "P27": ("CITIZEN_OF", False),
    "P1037": ("DIRECTOR_OF", True),
    "P169": ("CEO_OF", True),
    "P749": ("PARENT_ORGANIZATION", False),
    "P137": ("OPERATED_BY", False),
    "P118": ("PLAYS_IN_LEAGUE", False),
    "P159": ("HEADQUARTERED_IN", False),
    "P371": ("PRESENTER_OF", True),
    "P115": ("HOME_VENUE", False),
    "P264": ("RECORD_LABEL", False),
}
_MONTH_WORD: Final[str] = r"(?:(?P<{0}>[A-Z][a-z]{{2,8}}\.?) )?"
_TIMEQA_SCOPE: Final[re.Pattern[str]] = re.compile(
    r"\b(?:from|between|in)(?: the years?)? "
    + _MONTH_WORD.format("ma")
    + r"(?P<a>\d{4}) (?:to|and|until|-|–) "
    + _MONTH_WORD.format("mb")
    + r"(?P<b>\d{4})\b"
)
_SUFFIXES: Final[re.Pattern[str]] = re.compile(
    r"(?:,? (?:F\.?C\.?|A\.?F\.?C\.?|S\.?C\.?|C\.?F\.?|S\.?A\.?|Inc\.?|Ltd\.?|GmbH|plc))+$"
)
_PERSON_PRONOUNS: Final[re.Pattern[str]] = re.compile(r"\b(he|she|his|her|him)\b", re.IGNORECASE)


def _source_date(month: str | None, year: str) -> DatedValue:
    number = month_number(month) if month else None
    return DatedValue(datetime(int(year), number or 1, 1, tzinfo=UTC), "month" if number else "year")


def parse_tempreason_fact(line: str) -> Fact | None:
    """'Mark Gower plays for Barnet F.C. from Jan, 2003 to Jan, 2006.' -> Fact; None if unreadable."""
    match = _TEMPREASON_FACT.match(line.strip())
    if not match or not match["a"]:
        return None
    start_month, start_year = match["a"].split(", ")
    end = None
    if match["b"]:
        end_month, end_year = match["b"].split(", ")
        end = _source_date(end_month, end_year)
    return Fact(
        match["s"], TEMPREASON_PREDICATES[match["p"]], match["o"], _source_date(start_month, start_year), end
    )


def name_variants(name: str) -> list[str]:
    """Ways a page may write an entity's name: 'Barnet F.C.' -> ['Barnet F.C.', 'Barnet'].

    Longest first, so the longest form found in the text is the entity's name.
    """
    variants = [name]
    bare = re.sub(r"\s*\([^)]*\)", "", name).strip()
    variants.append(bare)
    variants.append(_SUFFIXES.sub("", bare).strip())
    variants.append(bare.split(",")[0].strip())
    for variant in list(variants):
        if "-" in variant and " " not in variant.split("-")[0][-1:]:
            variants.append(variant.split("-")[0].strip())
    usable = [v for v in dict.fromkeys(variants) if len(v) >= 3 and re.search(r"[A-Z]", v)]
    return sorted(usable, key=len, reverse=True)


def find_name(name: str, text: str) -> str | None:
    """The longest variant of `name` that occurs in `text` as whole words, or None."""
    for variant in name_variants(name):
        if re.search(rf"(?<!\w){re.escape(variant)}(?!\w)", text):
            return variant
    return None


def _has_year(year: int, text: str) -> bool:
    """`year` written as a year; "2016–17" names a season, not the year 2016, so it does not count."""
    return re.search(rf"(?<!\d){year}(?!\d|[–-]\d{{2}}(?!\d))", text) is not None


def stated_date(source: DatedValue, text: str) -> DatedValue | None:
    """The source date as precisely as `text` states it, or None when the text lacks its year.

    A month counts only when the text writes it next to the year ("March 1928", "1 March 1928",
    "March 1, 1928"); then a day next to that month counts too.
    """
    year = source.value.year
    if not _has_year(year, text):
        return None
    if source.granularity == "month":
        month = source.value.month
        for match in re.finditer(rf"(?:(\d{{1,2}}) )?([A-Z][a-z]+\.?)(?: (\d{{1,2}}))?,? {year}\b", text):
            if month_number(match[2]) != month:
                continue
            day = match[1] or match[3]
            if day and 1 <= int(day) <= 31:
                try:
                    return DatedValue(datetime(year, month, int(day), tzinfo=UTC), "day")
                except ValueError:
                    return None
            return DatedValue(datetime(year, month, 1, tzinfo=UTC), "month")
    return DatedValue(datetime(year, 1, 1, tzinfo=UTC), "year")


class _Placed(NamedTuple):
    fact: Fact
    subject_name: str
    object_name: str
    valid: DatedValue
    invalid: DatedValue | None


def _place(fact: Fact, page: str, text: str) -> _Placed | None:
    """Read `fact` off `text`: the non-page entity named, the start (and any end) year stated."""
    valid = stated_date(fact.start, text)
    if valid is None:
        return None
    invalid = None
    if fact.end is not None and fact.end.value.year != fact.start.value.year:
        invalid = stated_date(fact.end, text)
        if invalid is None:
            return None
    elif fact.end is not None:
        invalid = stated_date(fact.end, text)
        if invalid is not None and invalid.granularity == "year":
            invalid = None  # "in 2010" cannot say both when it began and when it ended
    if invalid is not None and invalid.value < valid.value:
        return None  # the source contradicts itself ("from 1998 until 1993")
    names = []
    for name in (fact.subject, fact.obj):
        if name == page:
            names.append(page)
            continue
        found = find_name(name, text)
        if found is None:
            return None
        names.append(found)
    if names[0] == names[1]:
        return None
    return _Placed(fact, names[0], names[1], valid, invalid)


def _window_episodes(
    source: Source,
    page: str,
    page_key: str,
    sentences: list[str],
    facts: Iterable[Fact],
    edge_types: list[EdgeType],
    anchor: dict[Fact, int] | None = None,
) -> list[LabeledEpisode]:
    """Episodes for one page: windows of one or two sentences that state some facts.

    `anchor` (TimeQA) pins a fact to the sentence holding its answer span; without it, every sentence
    naming the fact's object is tried. A fact is used in at most one episode; windows do not overlap.
    """
    placements: dict[tuple[int, int], list[_Placed]] = {}
    for fact in facts:
        found = _first_window(fact, page, sentences, [anchor[fact]] if anchor and fact in anchor else None)
        if found is not None:
            placements.setdefault(found[0], []).append(found[1])
    episodes = []
    taken: set[int] = set()
    used_facts: set[Fact] = set()
    for (start, end), placed in sorted(placements.items(), key=lambda item: (-len(item[1]), item[0])):
        placed = [p for p in placed if p.fact not in used_facts]
        if not placed or taken & set(range(start, end)) or len(episodes) >= MAX_EPISODES_PER_PAGE:
            continue
        taken |= set(range(start, end))
        used_facts |= {p.fact for p in placed}
        episodes.append(_episode(source, page, page_key, sentences, start, end, placed, edge_types))
    return sorted(episodes, key=lambda e: e.id)


#: A window that holds a list item ("- Jaromir Netzel, 2006-2007") states no relation: the role
#: ("chief executives") is in a section heading the page text does not keep.
_LIST_ITEM: Final[str] = "- "
#: Window shapes around a sentence i, tried in order: i alone, then (i-1, i), then (i, i+1).
_SHAPES: Final[tuple[tuple[int, int], ...]] = ((0, 1), (-1, 1), (0, 2))


def _first_window(
    fact: Fact, page: str, sentences: list[str], candidates: list[int] | None
) -> tuple[tuple[int, int], _Placed] | None:
    """The smallest window that states `fact`: one sentence if any does, else two; earliest first."""
    for before, after in _SHAPES:
        for index in candidates if candidates is not None else range(len(sentences)):
            start, end = index + before, index + after
            if start < 0 or end > len(sentences):
                continue
            text = " ".join(sentences[start:end])
            if word_count(text) > MAX_EPISODE_WORDS or any(
                x.startswith(_LIST_ITEM) for x in sentences[start:end]
            ):
                continue
            placed = _place(fact, page, text)
            if placed is not None:
                return (start, end), placed
    return None


def _episode(
    source: Source,
    page: str,
    page_key: str,
    sentences: list[str],
    start: int,
    end: int,
    placed: list[_Placed],
    edge_types: list[EdgeType],
) -> LabeledEpisode:
    content = " ".join(sentences[start:end])
    previous = []
    if start > 0:
        previous.append(sentences[0])
    if start > 1 and word_count(sentences[0]) + word_count(sentences[start - 1]) <= 150:
        previous.append(sentences[start - 1])
    entities: dict[str, None] = {}
    edges: dict[tuple[str, str, str], GoldEdge] = {}
    for item in sorted(placed, key=lambda p: (p.fact.subject, p.fact.type_name, p.fact.obj)):
        source_name, target_name = item.subject_name, item.object_name
        if item.fact.type_name == "SPOUSE_OF":
            source_name, target_name = sorted((source_name, target_name))
        entities.setdefault(item.subject_name)
        entities.setdefault(item.object_name)
        edges.setdefault(
            (source_name, item.fact.type_name, target_name),
            GoldEdge(
                relationship_type=item.fact.type_name,
                source_entity_name=source_name,
                target_entity_name=target_name,
                fact=_fact_text(content, source_name, target_name),
                valid_at=item.valid.value,
                valid_at_granularity=item.valid.granularity,
                invalid_at=item.invalid.value if item.invalid else None,
                invalid_at_granularity=item.invalid.granularity if item.invalid else None,
                aliases=ALIASES.get(item.fact.type_name, []),
            ),
        )
    return LabeledEpisode(
        id=f"{source.name}-{page_key}-s{start}",
        source=source.name,
        license=source.license,
        exhaustive=False,
        episode_content=content,
        previous_episodes=previous,
        entities=[Entity(name=name) for name in entities],
        reference_time=FIXED_REFERENCE_TIME,
        edge_types=edge_types,
        edges=list(edges.values()),
    )


def _fact_text(content: str, source: str, target: str) -> str:
    """The sentence of the window that names the target (or the whole window), quoted."""
    for sentence in split_sentences(content):
        if target in sentence or source in sentence:
            return sentence
    return content


def tempreason_page(row: dict[str, Any]) -> tuple[str, str, list[Fact]]:
    """(page title, page text, facts) of one TimeBench TempReason row.

    TimeBench glues the title to the text ("Mark GowerMark Gower (born..."); the title is the fact
    subject or object that the context starts with.
    """
    facts = [f for f in (parse_tempreason_fact(line) for line in row["fact_context"].split("\n")) if f]
    context: str = row["context"]
    names = sorted({f.subject for f in facts} | {f.obj for f in facts}, key=len, reverse=True)
    title = next((name for name in names if context.startswith(name)), "")
    if not title:
        match = re.match(r"^(.+?[a-z0-9)])(?=[A-Z][a-z])", context)
        title = match[1] if match else ""
    return title, context[len(title) :], facts


def build_tempreason_episodes(raw_dir: Path, count: int = 85) -> list[LabeledEpisode]:
    """Episodes from the TimeBench copy of TempReason (L2 event-time and L3 event-event files)."""
    pages: dict[str, tuple[str, str, set[Fact]]] = {}
    for name in ("event-time_1037.jsonl", "event-event_839.jsonl"):
        with (raw_dir / "tempreason_timebench" / name).open(encoding="utf-8") as handle:
            for line in handle:
                title, text, facts = tempreason_page(json.loads(line))
                if not title:
                    continue
                entry = pages.setdefault(title, (title, text, set()))
                entry[2].update(facts)
    episodes = []
    for title in sorted(pages):
        _, text, facts = pages[title]
        episodes.extend(tempreason_episodes(title, text, facts))
    return _sample(episodes, count)


def tempreason_episodes(title: str, text: str, facts: Iterable[Fact]) -> list[LabeledEpisode]:
    """The episodes of one TempReason page (its text without the glued title, and its facts)."""
    ordered = sorted(
        facts,
        key=lambda f: (f.start.value, f.subject, f.type_name, f.obj, f.end.value if f.end else f.start.value),
    )
    return _window_episodes(TEMPREASON, title, slug(title), split_sentences(text), ordered, list(EDGE_TYPES))


def _sample(episodes: list[LabeledEpisode], count: int) -> list[LabeledEpisode]:
    rng = random.Random(SEED)
    chosen = list(episodes)
    rng.shuffle(chosen)
    return sorted(chosen[:count], key=lambda e: e.id)


def _sentence_spans(paragraph: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of a space-tokenized paragraph ("... 1997 . She ...")."""
    spans = []
    start = 0
    for match in re.finditer(r" [.!?](?= [A-Z\"'(]| ?$)", paragraph):
        before = paragraph[max(0, match.start() - 3) : match.start()]
        if re.search(r"(^| )[A-Z]$", before):
            continue  # an initial: "L . E . Dickson"
        spans.append((start, match.end()))
        start = match.end() + 1
    if start < len(paragraph):
        spans.append((start, len(paragraph)))
    return spans


def timeqa_page(item: dict[str, Any]) -> tuple[str, list[str], list[Fact], dict[Fact, int]]:
    """(page title, sentences, facts, fact -> sentence index) of one TimeQA page.

    A question gives the fact's type (the page's P-id), its time scope ("from 2004 to 2005"), and its
    answer as a character span of a paragraph; single-year questions ("in 2005") are not used, since a
    year inside a longer tenure is neither its start nor its end.
    """
    title = clean_spaced_text(item["paras"][0])
    sentences: list[str] = []
    where: dict[tuple[int, int], int] = {}
    for para_index, paragraph in enumerate(item["paras"]):
        if para_index == 0:
            continue
        for start, end in _sentence_spans(paragraph):
            where[(para_index, start)] = len(sentences)
            sentences.append(clean_spaced_text(paragraph[start:end]))
    facts: list[Fact] = []
    anchors: dict[Fact, int] = {}
    mapped = TIMEQA_TYPES.get(item["type"])
    if mapped is None:
        return title, sentences, facts, anchors
    type_name, page_is_object = mapped
    for question, answers in item["questions"]:
        scope = _TIMEQA_SCOPE.search(question)
        if scope is None:
            continue
        start_date = _source_date(scope["ma"] if month_number(scope["ma"] or "") else None, scope["a"])
        end_date = _source_date(scope["mb"] if month_number(scope["mb"] or "") else None, scope["b"])
        for answer in answers:
            text = clean_spaced_text(answer["answer"])
            if not text or answer["para"] <= 0:
                continue
            paragraph = item["paras"][answer["para"]]
            index = next(
                (
                    where[(answer["para"], s)]
                    for s, e in _sentence_spans(paragraph)
                    if s <= answer["from"] < e and (answer["para"], s) in where
                ),
                None,
            )
            if index is None or text not in sentences[index]:
                continue
            subject, obj = (text, title) if page_is_object else (title, text)
            fact = Fact(subject, type_name, obj, start_date, end_date)
            anchors.setdefault(fact, index)
            facts.append(fact)
    return title, sentences, list(dict.fromkeys(facts)), anchors


def timeqa_item_episodes(item: dict[str, Any]) -> list[LabeledEpisode]:
    """The episodes of one TimeQA page (one item of a human_annotated file)."""
    title, sentences, facts, anchors = timeqa_page(item)
    if not facts:
        return []
    return _window_episodes(TIMEQA, title, slug(title), sentences, facts, list(EDGE_TYPES), anchors)


def build_timeqa_episodes(raw_dir: Path, count: int = 85) -> list[LabeledEpisode]:
    """Episodes from the TimeQA human-annotated train and test pages."""
    episodes = []
    seen: set[str] = set()
    for name in ("human_annotated_train.json", "human_annotated_test.json"):
        with (raw_dir / "timeqa" / name).open(encoding="utf-8") as handle:
            items = json.load(handle)
        for item in items:
            key = f"{slug(clean_spaced_text(item['paras'][0]))}_{item['type']}"
            if key in seen:
                continue
            seen.add(key)
            episodes.extend(timeqa_item_episodes(item))
    unique: dict[str, LabeledEpisode] = {}
    for episode in episodes:
        unique.setdefault(episode.id, episode)
    return _sample(list(unique.values()), count)
