"""Dates written as the text's words, resolved against REFERENCE_TIME in post-processing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from edgewise.domain.episode import Episode
from edgewise.modules.postprocess import parse_date, postprocess
from edgewise.modules.time_words import resolve_time_words
from edgewise.signatures.replies import ExtractedEdge

REFERENCE = datetime(2024, 3, 18, 20, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("words", "start", "end"),
    [
        ("in 1964", datetime(1964, 1, 1), datetime(1964, 1, 1)),
        ("from 1814 to 1819", datetime(1814, 1, 1), datetime(1819, 1, 1)),
        ("since 2008", datetime(2008, 1, 1), datetime(2008, 1, 1)),
        ("March 2021", datetime(2021, 3, 1), datetime(2021, 3, 1)),
        ("last May", datetime(2023, 5, 1), datetime(2023, 5, 1)),  # May of 2024 has not come yet
        ("Saturday", datetime(2024, 3, 16), datetime(2024, 3, 16)),  # the last one before the reference
        ("last week", datetime(2024, 3, 11), datetime(2024, 3, 11)),
    ],
)
def test_time_words_become_dates_at_midnight_utc(words: str, start: datetime, end: datetime) -> None:
    assert resolve_time_words(words, REFERENCE) == start.replace(tzinfo=UTC)
    assert resolve_time_words(words, REFERENCE, end=True) == end.replace(tzinfo=UTC)


@pytest.mark.parametrize("words", ["now", "currently", "ongoing"])
def test_words_for_the_present_are_the_reference_time_itself(words: str) -> None:
    assert resolve_time_words(words, REFERENCE) == REFERENCE


@pytest.mark.parametrize("words", ["nonsense words", "1990s", "", "   "])
def test_words_that_name_no_date_give_none(words: str) -> None:
    assert resolve_time_words(words, REFERENCE) is None


def test_parse_date_reads_iso_itself_and_words_only_with_a_reference() -> None:
    assert parse_date("2021-03-05") == (datetime(2021, 3, 5, tzinfo=UTC), None)
    assert parse_date("in 1964") == (None, "unparseable date 'in 1964'")
    assert parse_date("in 1964", REFERENCE) == (datetime(1964, 1, 1, tzinfo=UTC), None)


def test_postprocess_resolves_a_range_into_valid_and_invalid_dates() -> None:
    episode = Episode(
        episode_content="Thomas attended the Cadet Corps from 1814 to 1819.",
        entities=[{"name": "Thomas"}, {"name": "Cadet Corps"}],
        reference_time=REFERENCE,
    )
    raw = ExtractedEdge(
        relationshipType="ATTENDED", sourceEntityName="Thomas", targetEntityName="Cadet Corps",
        fact="Thomas attended the Cadet Corps from 1814 to 1819.",
        validAt="from 1814 to 1819", invalidAt="from 1814 to 1819",
    )  # fmt: skip
    edges, warnings = postprocess([raw], episode)
    assert (edges[0].valid_at, edges[0].invalid_at) == (
        datetime(1814, 1, 1, tzinfo=UTC),
        datetime(1819, 1, 1, tzinfo=UTC),
    )
    assert {warning.code for warning in warnings} == {"date_normalized"}
