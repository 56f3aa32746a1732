"""Dates from the fact itself: the time words a model copied into a fact but did not turn into validAt.

A small model writes REFERENCE_TIME (the seed's default for an ongoing fact) where the text gives its
own time: "friends since 2008", "moved to Lisbon two years ago", "adopted Nata yesterday". The fact
it writes usually keeps those words. `date_from_fact` finds the first time expression in the fact and
resolves it against REFERENCE_TIME (`time_words.resolve_time_words`, dateparser underneath); the
edge's validAt is replaced only when it was REFERENCE_TIME or null, and never for a fact that says
it ended (then the time is its invalidAt's, which the model writes as such).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from edgewise.domain.types import Edge, ExtractionWarning, format_utc
from edgewise.modules.call_context import CallContext
from edgewise.modules.time_words import resolve_time_words

_MONTH: Final = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY: Final = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUMBER: Final = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|several)"
TIME_EXPRESSIONS: Final = re.compile(
    "|".join(
        (
            rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b",  # March 4, March 4th 2021
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:\s+\d{{4}})?\b",  # 4 March 2021
            rf"\b{_MONTH}\s+\d{{4}}\b",  # March 2021
            r"\b\d{4}-\d{2}-\d{2}\b",
            rf"\b{_NUMBER}\s+(?:days?|weeks?|months?|years?)\s+ago\b",  # two years ago
            rf"\blast\s+(?:week|month|year|{_WEEKDAY}|{_MONTH})\b",
            rf"\bnext\s+(?:week|month|year|{_WEEKDAY}|{_MONTH})\b",
            r"\b(?:yesterday|tomorrow)\b",
            rf"\b(?:on|this|since)\s+{_WEEKDAY}\b",
            rf"\b(?:in|since|from|during)\s+{_MONTH}\b",
            r"\b(?:in|since|from|by|until|during|of|around)\s+(?:the\s+)?(?:1[5-9]|20)\d{2}s?\b",
            r"\b(?:1[5-9]|20)\d{2}\b",
        )
    ),
    re.IGNORECASE,
)
ENDED: Final = re.compile(
    r"\b(?:until|till|ended|ends|left|leaves|leaving|quit|quits|stopped|last day|no longer|broke up|"
    r"divorced|moved out|moved away|former|formerly|retired|resigned|died|passed away|used to)\b",
    re.IGNORECASE,
)


def date_from_fact(fact: str, reference_time: datetime) -> datetime | None:
    """The first time expression of `fact` that names a day other than REFERENCE_TIME's; else None."""
    reference_day = reference_time.date()
    for match in TIME_EXPRESSIONS.finditer(fact):
        resolved = resolve_time_words(match.group(0), reference_time)
        if resolved is not None and resolved.date() != reference_day:
            return resolved
    return None


def dates_from_facts(edges: list[Edge], reference_time: datetime, context: CallContext) -> list[Edge]:
    """Each edge whose validAt is REFERENCE_TIME or null takes the time its fact names, with a warning."""
    changed: list[Edge] = []
    for edge in edges:
        if edge.valid_at not in (None, reference_time) or ENDED.search(edge.fact):
            changed.append(edge)
            continue
        found = date_from_fact(edge.fact, reference_time)
        if found is None:
            changed.append(edge)
            continue
        before = format_utc(edge.valid_at) if edge.valid_at else "null"
        context.warn(
            ExtractionWarning(
                code="date_from_fact",
                message=f"validAt {before} set to {format_utc(found)}, the time the fact names",
                edge=edge.to_json_dict(),
            )
        )
        changed.append(edge.model_copy(update={"valid_at": found}))
    return changed
