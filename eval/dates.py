"""Dates judged and written as precisely as the gold knows them: year, month, day, or the second."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from edgewise.domain.gold import Granularity
from edgewise.domain.types import format_utc

UNSTATED_GRANULARITY: Final[Granularity] = "instant"
"""How a gold date without a stated granularity is compared: exactly, to the second."""


def same_date(gold: datetime | None, granularity: Granularity | None, predicted: datetime | None) -> bool:
    """Whether `predicted` states the gold date at the gold's granularity (null is right only for null)."""
    if gold is None:
        return predicted is None
    if predicted is None:
        return False
    if gold.tzinfo is predicted.tzinfo and gold == predicted:
        return True  # equal fields in one time zone (always UTC once validated) agree at every granularity
    level = granularity or UNSTATED_GRANULARITY
    if level == "year":
        return gold.year == predicted.year
    if level == "month":
        return gold.year == predicted.year and gold.month == predicted.month
    if level == "day":
        return gold.date() == predicted.date()
    return gold.replace(microsecond=0) == predicted.replace(microsecond=0)


def format_date(value: datetime | None, granularity: Granularity | None) -> str:
    """A date as precisely as the gold knows it: "2020", "2020-05", "2020-05-01" or the full instant."""
    if value is None:
        return "null"
    level = granularity or UNSTATED_GRANULARITY
    if level == "year":
        return f"{value.year:04d}"
    if level == "month":
        return f"{value.year:04d}-{value.month:02d}"
    if level == "day":
        return value.date().isoformat()
    return format_utc(value)
