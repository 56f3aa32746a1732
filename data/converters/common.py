"""Shared pieces of the converters: detokenizing, names, dates, and the fixed reference time.

Every converter turns a public data set into `LabeledEpisode`s; what they share (how a token list
becomes text, how a relation label becomes a SCREAMING_SNAKE_CASE type, how "13 March 1963" becomes a
dated value with its granularity) lives here so that each converter reads as its source's rules only.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Final, NamedTuple

from edgewise.domain.errors import EdgewiseError
from edgewise.domain.gold import Granularity


class DataBuildError(EdgewiseError, ValueError):
    """The built episodes break a rule of the split files (a repeated id, a field out of bounds, a
    split a hand-written file declares that does not exist); the message names the episodes."""


#: Wikipedia- and transcript-derived episodes carry no creation time of their own; every such
#: episode gets this one fixed, plausible reference time so that builds are reproducible.
FIXED_REFERENCE_TIME: Final[datetime] = datetime(2024, 1, 1, tzinfo=UTC)

#: The most words the current episode may have: the test model has 8k context and 2 CPU cores.
MAX_EPISODE_WORDS: Final[int] = 120
#: The most entities one episode may list.
MAX_ENTITIES: Final[int] = 15
#: At most this many previous episodes, and at most this many words in all of them.
MAX_PREVIOUS_ITEMS: Final[int] = 3
MAX_PREVIOUS_WORDS: Final[int] = 150

_NO_SPACE_BEFORE: Final[frozenset[str]] = frozenset(
    {
        ",",
        ".",
        ";",
        ":",
        "!",
        "?",
        ")",
        "]",
        "}",
        "%",
        "'s",
        "'S",
        "n't",
        "'re",
        "'ve",
        "'ll",
        "'d",
        "'m",
        "'",
    }
)
_NO_SPACE_AFTER: Final[frozenset[str]] = frozenset({"(", "[", "{", "$", "#"})
_JOINERS: Final[frozenset[str]] = frozenset({"-", "–", "/"})


class TokenText(NamedTuple):
    """Text rebuilt from tokens, with the character span of every token in it."""

    text: str
    spans: list[tuple[int, int]]

    def span_text(self, start: int, end: int) -> str:
        """The text of tokens `start` (inclusive) to `end` (exclusive), exactly as in `text`."""
        return self.text[self.spans[start][0] : self.spans[end - 1][1]]


def detokenize(tokens: list[str]) -> TokenText:
    """Join tokenized text the way it was written: "Schneider ( born" -> "Schneider (born".

    Returns token spans too, so that a mention (a token range) maps to a substring of the text; the
    entity names built from mentions are therefore always found verbatim in the episode.
    """
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    quote_open = False
    previous = ""
    glue_next = False
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        space = index > 0 and not glue_next
        glue_next = False
        if token in _NO_SPACE_BEFORE or previous in _NO_SPACE_AFTER:
            space = False
        if token in _JOINERS and previous[-1:].isalnum() and following[:1].isalnum():
            space = False
            glue_next = True
        if token in {'"', "``", "''"}:
            if quote_open:
                space = False
            else:
                glue_next = True
            quote_open = not quote_open
            token = '"'
        if space:
            parts.append(" ")
            length += 1
        spans.append((length, length + len(token)))
        parts.append(token)
        length += len(token)
        previous = token
    return TokenText("".join(parts), spans)


def clean_spaced_text(text: str) -> str:
    """Detokenize text that was stored with spaces around punctuation ("Tucson , Arizona")."""
    return detokenize(text.split()).text


def screaming_snake(label: str) -> str:
    """'country of citizenship' -> 'COUNTRY_OF_CITIZENSHIP'; 'girl/boyfriend' -> 'GIRL_BOYFRIEND'."""
    ascii_label = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "_", ascii_label).strip("_").upper()


def slug(title: str) -> str:
    """A dash-free ASCII key for a document title, so ids can be split on '-'."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "_", ascii_title).strip("_")[:60] or "untitled"


def word_count(text: str) -> int:
    return len(text.split())


class DatedValue(NamedTuple):
    """A date read from text, with how precisely the text states it."""

    value: datetime
    granularity: Granularity


_MONTHS: Final[dict[str, int]] = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH_RX: Final[str] = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_PATTERNS: Final[list[tuple[re.Pattern[str], str]]] = [
    (re.compile(rf"^(\d{{1,2}}) {_MONTH_RX},? (\d{{4}})$", re.IGNORECASE), "dmy"),
    (re.compile(rf"^{_MONTH_RX} (\d{{1,2}}),? (\d{{4}})$", re.IGNORECASE), "mdy"),
    (re.compile(rf"^{_MONTH_RX},? (\d{{4}})$", re.IGNORECASE), "my"),
    (re.compile(r"^(\d{4})$"), "y"),
]


def parse_date_text(text: str) -> DatedValue | None:
    """Read a date written as '13 March 1963', 'March 13, 1963', 'July 2012' or '1998'.

    Anything else (ranges, decades, dates without a year) returns None: a gold date must be one the
    text states exactly, never a guess.
    """
    cleaned = re.sub(r"\s+", " ", text.strip().replace(" ,", ","))
    for pattern, kind in _DATE_PATTERNS:
        match = pattern.match(cleaned)
        if not match:
            continue
        try:
            if kind == "dmy":
                day, month, year = int(match[1]), _MONTHS[match[2].lower()], int(match[3])
                return DatedValue(datetime(year, month, day, tzinfo=UTC), "day")
            if kind == "mdy":
                month, day, year = _MONTHS[match[1].lower()], int(match[2]), int(match[3])
                return DatedValue(datetime(year, month, day, tzinfo=UTC), "day")
            if kind == "my":
                month, year = _MONTHS[match[1].lower()], int(match[2])
                return DatedValue(datetime(year, month, 1, tzinfo=UTC), "month")
            year = int(match[1])
        except ValueError:
            return None
        if not 1000 <= year <= 2100:
            return None
        return DatedValue(datetime(year, 1, 1, tzinfo=UTC), "year")
    return None


def month_number(name: str) -> int | None:
    return _MONTHS.get(name.lower().rstrip("."))


_SENTENCE_END: Final[re.Pattern[str]] = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_ABBREVIATIONS: Final[tuple[str, ...]] = (
    "Mr.",
    "Mrs.",
    "Ms.",
    "Dr.",
    "St.",
    "Jr.",
    "Sr.",
    "No.",
    "Co.",
    "Inc.",
    "Ltd.",
    "Gen.",
    "Lt.",
    "Col.",
    "Capt.",
    "Sgt.",
    "Rev.",
    "Prof.",
    "Gov.",
    "Sen.",
    "Rep.",
    "U.S.",
    "U.K.",
    "F.C.",
    "A.F.C.",
    "Mt.",
    "vs.",
)


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences without a model: good enough for Wikipedia prose.

    Breaks after . ! ? followed by a capital, except after common abbreviations and initials
    ("P. Chandrasekhara Rao"); also repairs TimeBench's glued paragraphs ("...in 2008.It was").
    """
    text = re.sub(r"([a-z0-9\)\]][.!?])([A-Z][a-z])", r"\1 \2", text)
    pieces = _SENTENCE_END.split(text)
    sentences: list[str] = []
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if sentences and (
            sentences[-1].endswith(_ABBREVIATIONS) or re.search(r"(^|\s)[A-Z]\.$", sentences[-1])
        ):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences
