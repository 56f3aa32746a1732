"""Time words: a date a model wrote as the text's own words ("in 1964", "last May") made a date.

A small model copies "from 1814 to 1819" or "last week" reliably and computes the ISO date from it
badly, so post-processing resolves such words against the episode's REFERENCE_TIME with
`dateparser` (a maintained parser of relative and absolute dates). Strings that are already ISO
dates never get here: `postprocess.parse_date` reads those itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

_NOW_WORDS: Final = frozenset(
    {"now", "currently", "current", "ongoing", "present", "today", "still", "these days"}
)
_LEADING_WORDS: Final = re.compile(
    r"^(?:since|from|in|on|at|by|until|till|as of|starting|started|beginning|around|about|circa|c\.|"
    r"during|back in|as early as|ever since|the)\s+",
    re.IGNORECASE,
)
_RANGE: Final = re.compile(r"^(.+?)\s*(?:-|–|to|until|till|through)\s*(.+)$", re.IGNORECASE)
_LAST_MONTH_NAME: Final = re.compile(r"^last\s+([a-z]+)$", re.IGNORECASE)
_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_DAY_PERIODS: Final = frozenset({"day", "week", "month", "year"})


_SETTINGS: Final = {
    "PREFER_DAY_OF_MONTH": "first",
    "PREFER_MONTH_OF_YEAR": "first",
    "RETURN_TIME_AS_PERIOD": True,
    "TIMEZONE": "UTC",
    "TO_TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": True,
}


def _parse(text: str, base: datetime) -> tuple[datetime | None, str | None]:
    """dateparser's reading of `text` relative to `base` (a parser per call, so it is thread-safe)."""
    from dateparser.date import DateDataParser

    found = DateDataParser(languages=["en"], settings={**_SETTINGS, "RELATIVE_BASE": base}).get_date_data(
        text
    )
    return found.date_obj, found.period


def _strip(text: str) -> str:
    text = text.strip().strip(".,;:!?\"'()").strip()
    while (shorter := _LEADING_WORDS.sub("", text)) != text:
        text = shorter.strip()
    return text


def resolve_time_words(text: str, reference_time: datetime, *, end: bool = False) -> datetime | None:
    """The UTC date `text` names, read relative to `reference_time`; None when it names none.

    A range ("from 1814 to 1819") gives its start, or its end with `end=True` (for invalidAt).
    Words for the present ("now", "currently") give REFERENCE_TIME itself, as the seed's rule for
    ongoing facts asks; a date with a day or coarser precision is at 00:00:00; a bare weekday is
    the last such day on or before REFERENCE_TIME.
    """
    reference = reference_time.astimezone(UTC)
    cleaned = _strip(text)
    if not cleaned:
        return None
    lowered = cleaned.casefold()
    if lowered in _NOW_WORDS:
        return reference
    if (ranged := _RANGE.match(cleaned)) and not re.fullmatch(r"\d{4}-\d{1,2}(-\d{1,2})?", cleaned):
        part = ranged.group(2) if end else ranged.group(1)
        return resolve_time_words(part, reference_time, end=end)
    if lowered in _WEEKDAYS:
        back = (reference.weekday() - _WEEKDAYS.index(lowered)) % 7
        return _midnight(reference - timedelta(days=back))
    if (last := _LAST_MONTH_NAME.match(cleaned)) and last.group(1).casefold() in _MONTHS:
        month = _MONTHS.index(last.group(1).casefold()) + 1
        year = reference.year if month < reference.month else reference.year - 1
        return datetime(year, month, 1, tzinfo=UTC)
    date, period = _parse(cleaned, reference.replace(tzinfo=None))
    if date is None:
        return None
    if period == "time" and not re.search(r"\d:\d|\b(am|pm|noon|midnight|o'clock)\b", lowered):
        return None  # "1990s" read as 90 seconds ago: not a date the text gave
    value = date.astimezone(UTC)
    return _midnight(value) if period in _DAY_PERIODS else value


def _midnight(value: datetime) -> datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)
