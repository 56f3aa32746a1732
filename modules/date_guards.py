"""Date guards: validAt values read from words that do not give the fact's start.

Dates from facts (`modules.fact_dates`) and the model itself make the same four mistakes, each of which
this module undoes with a warning of its own code:

- `date_names_thing`: a number that names a thing, not a time, read as a date. A model year ("my 2015
  Civic"), a product version ("iOS 17", "Windows 11", "Office 2019"), a room, flight, bus or house
  number, a number inside a name ("FK DAC 1904"). The date is replaced by the time the fact's other
  words name, else by what the fact gives without it (REFERENCE_TIME for an ongoing fact, else null).
- `date_cancelled_plan`: the date of a plan that the text says was called off ("we were going to move
  to Austin in June, but that's off"). A plan that is off starts nothing: validAt becomes null.
- `date_no_start`: REFERENCE_TIME, the seed's default for an ongoing fact, on a fact that ended or
  lies in the past ("played for", "was a student at", "is leaving"). The seed's rule for such a fact
  with no stated start is null, and so are the project's labels (data/converters/conversational.py,
  labeling convention 1; Re-DocRED's past facts).
- `date_end_as_start`: the time a fact names as its end ("will leave Station 12 at the end of March")
  written as validAt, with no invalidAt. The date moves to invalidAt and validAt becomes null.

Each rule keeps a date that some other time expression of the text also names, and acts only on a
fact of one sentence where it reads the fact's tense, since a fact that joins two statements ("ended
things on Saturday. We're staying friends.") has no one tense. The guards run after dates from facts,
when the program's options say so (`ProgramOptions.date_guards`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Final, Literal, NamedTuple

from edgewise.domain.types import Edge, ExtractionWarning, format_utc
from edgewise.modules.call_context import CallContext
from edgewise.modules.fact_dates import ENDED, TIME_EXPRESSIONS, date_from_fact
from edgewise.modules.time_words import resolve_time_words

_MONTH_NAMES: Final = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_TEXT_TIMES: Final = re.compile(
    TIME_EXPRESSIONS.pattern
    + r"|(?-i:\b(?:January|February|March|April|June|July|August|September|October|November|December)\b)"
    + r"|\b(?:in|of|since|until|by)\s+(?-i:May)\b",
    re.IGNORECASE,
)
"""The time expressions of dates from facts, and a month named alone ("at the end of March")."""

_THING_WORD_NUMBER: Final = re.compile(
    r"\b(?:iOS|iPadOS|macOS|watchOS|Android|Windows|version|ver|release|build|model|room|rm|flight|bus|"
    r"train|tram|route|line|gate|platform|terminal|seat|apartment|apt|flat|suite|unit|floor|number|no|"
    r"exit|highway|channel)\.?\s*#?\s*v?(\d+)(?:\.\d+)*\b|#\s*(\d+)\b|\bv(\d+)(?:\.\d+)+\b",
    re.IGNORECASE,
)
"""A number after a word that says it counts or labels a thing: "iOS 17", "room 1204", "flight 1987"."""

_NAME_NUMBER: Final = re.compile(r"\b([A-Z][\w'’-]*)\s+(\d+)(?:\.\d+)*(?![\w.,:/-]*\d)\b")
"""A number after a capitalized word: "Windows 11", "Station 12", "DAC 1904" (times are excepted)."""

_NUMBER_NAME: Final = re.compile(r"(?:\b([\w'’]+),?\s+)?\b(\d{4})\s+((?:[A-Z][\w'’-]*\s*){1,3})")
"""A four-digit number before a capitalized word: "2015 Civic", "1910 Elm Street" (times are excepted)."""

_TIME_WORDS_BEFORE_NUMBER: Final = frozenset(
    (
        _MONTH_NAMES + "|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|In|Since|From|By|Until|"
        "Till|Through|During|Of|Around|Before|After|Circa|Early|Late|Mid|Spring|Summer|Autumn|Fall|Winter|"
        "Christmas|Easter|AD|BC|CE|BCE|Born|Died|Founded|Established|Est|Opened|Closed|Between|And|To"
    ).split("|")
)
"""Capitalized words after which a number is a time ("March 2021", "Since 2008", "Summer 2019")."""

_TIME_WORDS_BEFORE_YEAR: Final = re.compile(
    r"^(?:in|on|since|from|by|until|till|through|during|of|around|before|after|circa|early|late|mid|"
    r"between|and|to|\d{1,2}(?:st|nd|rd|th)?|" + _MONTH_NAMES + r")$",
    re.IGNORECASE,
)
"""The word before a year that makes it a time ("in 2015 Maya joined", "March 4, 2021 ...")."""

_EVENT_WORDS: Final = re.compile(
    r"\b(?:Olympics?|Olympic|Paralympics?|Games|Cup|Championships?|Elections?|Grand Prix|Open|Festival|"
    r"Tour|Season|Awards?|Expo|Marathon|Census|Conference|Summit|Series|Bowl|Tournament|Regatta|Rally)\b"
)
"""Names of events: "the 2012 Summer Olympics" dates the event, it does not label a thing."""

_PLAN: Final = re.compile(
    r"\b(?:going to|gonna|planned|planning|plans? to|supposed to|was to|were to|meant to|would|hoped to|"
    r"intended to|set to|about to|due to)\b",
    re.IGNORECASE,
)
_CANCELLED: Final = re.compile(
    r"(?:\b(?:that|it|this|which|wedding|move|trip|plan|deal|engagement)(?:'s|’s| is| was| are| were)\s+(?:all\s+)?"
    r"off\b|\bcall(?:ed|ing)?\s+(?:it\s+|the \w+\s+)?off\b|\bcancel(?:l)?(?:ed|ing|s)?\b|\bfell through\b|"
    r"\bfalling through\b|\b(?:not|isn't|isn’t|aren't|aren’t|won't|won’t) (?:happening|happen)\b|"
    r"\bchanged (?:my|our|their|his|her) minds?\b|\bscrapped\b|\bshelved\b|\bbacked out\b|\bpulled out\b|"
    r"\bdecided (?:not to|against)\b|\bnot (?:going|moving) (?:to|anymore|any more)\b|\bno longer going\b)",
    re.IGNORECASE,
)
"""Words that say a plan is off ("but that's off", "we called it off", "the move fell through")."""

_NO_START_ENDED: Final = re.compile(
    ENDED.pattern.replace("until|till|", "").replace("ends|", "") + r"|\bmov(?:ed|es|ing) (?:away )?from\b",
    re.IGNORECASE,
)
"""`fact_dates.ENDED` without "until", "till" and "ends", and "moved from": a fact that runs until a
stated end is ongoing now (its validAt is REFERENCE_TIME), one that ended or is being left has no start."""

_PAST_STATE: Final = re.compile(
    r"\b(?:was|were)\s+(?:a|an|the|born|once|formerly|previously|part|member|one|his|her|their|its|my|our|"
    r"in|at|with|on|married|engaged|friends?|roommates?|neighbou?rs?|colleagues?|students?|based|located|"
    r"employed|enrolled)\b|\b(?:used to|had been|grew up)\b|"
    r"(?<!\bhas )(?<!\bhave )(?<!'s )(?<!'ve )(?<!’s )(?<!’ve )\b(?:lived|worked|studied|played|served|"
    r"attended|graduated|taught|coached|owned|dated|belonged|stayed|resided|spent)\b",
    re.IGNORECASE,
)
"""A state that the fact puts in the past: "played for", "was a student at", "grew up in"."""

_START: Final = re.compile(
    r"\b(?:from|since|between)\s+(?=(?:the\s+)?(?:early\s+|late\s+|mid-?)?(?:\d|last\b|(?:"
    + _MONTH_NAMES
    + r")\b))|\b(?:starting|started|starts|start|began|begins|begin|join|joins|joined|joining|"
    r"mov(?:ed|es|ing) (?:in)?to)\b|\b(?:1[5-9]|20)\d{2}\s*(?:-|–|to)\s*(?:(?:1[5-9]|20)?\d{2})\b",
    re.IGNORECASE,
)
"""Words that state or imply a start ("from 1997", "since May", "joined", "1968–70")."""

_ENDING_THEN_TIME: Final = re.compile(
    r"\b(?:leave|leaves|leaving|left|quit|quits|quitting|retire|retires|retiring|retired|resign|resigns|"
    r"resigned|last day|moving out|moves out|moved out|stop|stops|stopping|stopped|graduate|graduates|"
    r"graduating|graduated|finish|finishes|finishing|finished|end|ends|ending|ended|break up|broke up|"
    r"split up|divorced?)\b",
    re.IGNORECASE,
)
"""Words after which a time is the fact's end ("will leave Station 12 at the end of March")."""

Cue = Literal["ended", "past", "started"]
_TENSE_CUES: Final[tuple[tuple[Cue, re.Pattern[str]], ...]] = (
    ("started", _START),
    ("ended", _NO_START_ENDED),
    ("past", _PAST_STATE),
)
_ENDING_CUES: Final[tuple[tuple[Cue, re.Pattern[str]], ...]] = (
    ("started", _START),
    ("ended", _ENDING_THEN_TIME),
)

_SENTENCE_END: Final = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")


class _Span(NamedTuple):
    start: int
    end: int
    number: int


def _thing_numbers(text: str) -> list[_Span]:
    """The numbers of `text` that name a thing: after a thing word or a capitalized name, or before one."""
    spans: list[_Span] = []
    for match in _THING_WORD_NUMBER.finditer(text):
        group = next(index for index in (1, 2, 3) if match.group(index) is not None)
        spans.append(_Span(match.start(group), match.end(group), int(match.group(group))))
    for match in _NAME_NUMBER.finditer(text):
        word = match.group(1)
        if word not in _TIME_WORDS_BEFORE_NUMBER and not _EVENT_WORDS.fullmatch(word):
            spans.append(_Span(match.start(2), match.end(2), int(match.group(2))))
    for match in _NUMBER_NAME.finditer(text):
        before, name = match.group(1), match.group(3)
        if before is not None and _TIME_WORDS_BEFORE_YEAR.match(before):
            continue
        if _EVENT_WORDS.search(name) or name.split()[0] in _TIME_WORDS_BEFORE_NUMBER:
            continue
        spans.append(_Span(match.start(2), match.end(2), int(match.group(2))))
    return spans


def _overlaps(start: int, end: int, spans: Iterable[_Span]) -> bool:
    return any(start < span.end and span.start < end for span in spans)


def _is_year(value: datetime) -> bool:
    """A date written as a year alone: 1 January, midnight (how a year is stored)."""
    return (value.month, value.day, value.hour, value.minute, value.second) == (1, 1, 0, 0, 0)


def _same_date(value: datetime, named: datetime) -> bool:
    """Whether `named` states `value`: the same year for a year-only value, else the same day."""
    return value.year == named.year if _is_year(value) else value.date() == named.date()


def _named_dates(text: str, reference_time: datetime, things: list[_Span]) -> list[datetime]:
    """The dates `text`'s time expressions name, leaving out the numbers that name a thing."""
    dates = []
    for match in _TEXT_TIMES.finditer(text):
        if _overlaps(match.start(), match.end(), things):
            continue
        resolved = resolve_time_words(match.group(0), reference_time)
        if resolved is not None:
            dates.append(resolved)
    return dates


def _reads_as(value: datetime, number: int) -> bool:
    """Whether `value` is what a date parser or a model makes of `number` alone.

    A year (2015; 17 as 2017, 95 as 1995), or a day of the month (17 as the 17th).
    """
    if _is_year(value):
        return value.year == number or (number < 100 and value.year in (1900 + number, 2000 + number))
    return 1 <= number <= 31 and value.day == number


def _one_sentence(fact: str) -> bool:
    return len(_SENTENCE_END.split(fact.strip())) == 1


def _mention(fact: str, edge: Edge) -> int | None:
    """Where the fact first names the edge's target, else its source; None when it names neither."""
    for name in (edge.target_entity_name, edge.source_entity_name):
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", fact, re.IGNORECASE)
        if found is not None:
            return found.start()
    return None


def _cue(edge: Edge, cues: tuple[tuple[Cue, re.Pattern[str]], ...], *, named: bool) -> tuple[Cue, int] | None:
    """The word that sets the edge's tense in its fact, and where it ends.

    In "leaving Quantix on Friday to join Tidepool" the edge to Quantix is governed by "leaving" and
    the edge to Tidepool by "join": the last cue before the first mention of the target (else the
    source). Where no cue comes before it, or the fact names neither end, the first kind of cue the
    fact holds anywhere, in the order of `cues`; with `named`, a fact that names neither end has none.
    """
    fact = edge.fact
    at = _mention(fact, edge)
    if at is None and named:
        return None
    found = [(match.start(), kind, match.end()) for kind, pattern in cues for match in pattern.finditer(fact)]
    before = [item for item in found if at is not None and item[0] < at]
    if before:
        _, kind, end = max(before)
        return kind, end
    for kind, _ in cues:
        ends = [end for _, found_kind, end in found if found_kind == kind]
        if ends:
            return kind, ends[0]
    return None


def _no_start(edge: Edge, reference_time: datetime) -> bool:
    """A fact of one sentence that ended or is being left, or a past state with no time named at all."""
    if not _one_sentence(edge.fact):
        return False
    cue = _cue(edge, _TENSE_CUES, named=False)
    if cue is None or cue[0] == "started":
        return False
    return cue[0] == "ended" or not _named_dates(edge.fact, reference_time, _thing_numbers(edge.fact))


def _masked(text: str, spans: list[_Span]) -> str:
    """`text` with the numbers that name a thing blanked out, so that no time expression reads them."""
    for span in spans:
        text = text[: span.start] + "#" * (span.end - span.start) + text[span.end :]
    return text


def _names_thing(edge: Edge, content: str, reference_time: datetime) -> bool:
    """Whether validAt is what a number naming a thing reads as, and no time expression names it."""
    value = edge.valid_at
    if value is None or value == reference_time:
        return False
    fact_things = _thing_numbers(edge.fact)
    content_things = _thing_numbers(content)
    if not any(_reads_as(value, span.number) for span in (*fact_things, *content_things)):
        return False
    named = _named_dates(edge.fact, reference_time, fact_things) + _named_dates(
        content, reference_time, content_things
    )
    return not any(_same_date(value, date) for date in named)


def _date_without_things(edge: Edge, reference_time: datetime) -> datetime | None:
    """The validAt a fact gives once its thing numbers are left out: its own time words, else the
    default of its tense (REFERENCE_TIME for an ongoing fact, null for one that ended or is past)."""
    masked = edge.model_copy(update={"fact": _masked(edge.fact, _thing_numbers(edge.fact))})
    found = date_from_fact(masked.fact, reference_time)
    if found is not None:
        return found
    return None if _no_start(masked, reference_time) else reference_time


def _cancelled_plan(edge: Edge, content: str, reference_time: datetime) -> bool:
    """Whether validAt is a time only a plan names, and the text says that plan is off."""
    value = edge.valid_at
    if value is None or value == reference_time:
        return False
    sentences = _SENTENCE_END.split(content)
    planned = elsewhere = False
    for index, sentence in enumerate(sentences):
        things = _thing_numbers(sentence)
        names_it = any(_same_date(value, date) for date in _named_dates(sentence, reference_time, things))
        if not names_it:
            continue
        plan = _PLAN.search(sentence)
        if plan and any(
            _CANCELLED.search(later) for later in (sentence[plan.end() :], *sentences[index + 1 :])
        ):
            planned = True
        else:
            elsewhere = True
    return planned and not elsewhere


def _end_as_start(edge: Edge, reference_time: datetime) -> bool:
    """Whether validAt is the time the fact names after the word that ends the edge, with no invalidAt."""
    value = edge.valid_at
    if value is None or value == reference_time or edge.invalid_at is not None:
        return False
    if not _one_sentence(edge.fact):
        return False
    cue = _cue(edge, _ENDING_CUES, named=True)
    if cue is None or cue[0] != "ended":
        return False
    tail = edge.fact[cue[1] :]
    return any(_same_date(value, date) for date in _named_dates(tail, reference_time, _thing_numbers(tail)))


def _warning(code: str, message: str, edge: Edge) -> ExtractionWarning:
    return ExtractionWarning(code=code, message=message, edge=edge.to_json_dict())


def _date_text(value: datetime | None) -> str:
    return "null" if value is None else format_utc(value)


def guard_dates(
    edges: list[Edge], content: str, reference_time: datetime, context: CallContext
) -> list[Edge]:
    """Each edge with the first of the four guards that applies to its dates, with its warning.

    `content` is the current episode's text, where a plan and its cancellation, and a number that names
    a thing, are read; the fact is read for its tense and its own time words.
    """
    guarded: list[Edge] = []
    for edge in edges:
        before = _date_text(edge.valid_at)
        if _names_thing(edge, content, reference_time):
            thing = _date_without_things(edge, reference_time)
            context.warn(
                _warning(
                    "date_names_thing",
                    f"validAt {before} set to {_date_text(thing)}: the number it was read from names a thing",
                    edge,
                )
            )
            guarded.append(edge.model_copy(update={"valid_at": thing}))
        elif _cancelled_plan(edge, content, reference_time):
            context.warn(
                _warning(
                    "date_cancelled_plan", f"validAt {before} set to null: a plan the text calls off", edge
                )
            )
            guarded.append(edge.model_copy(update={"valid_at": None}))
        elif edge.valid_at == reference_time and _no_start(edge, reference_time):
            context.warn(
                _warning(
                    "date_no_start",
                    f"validAt {before} (REFERENCE_TIME) set to null: the fact ended or is past and states "
                    "no start",
                    edge,
                )
            )
            guarded.append(edge.model_copy(update={"valid_at": None}))
        elif _end_as_start(edge, reference_time):
            context.warn(
                _warning(
                    "date_end_as_start",
                    f"validAt {before} moved to invalidAt: it is the time the fact names as its end",
                    edge,
                )
            )
            guarded.append(edge.model_copy(update={"valid_at": None, "invalid_at": edge.valid_at}))
        else:
            guarded.append(edge)
    return guarded
