"""Conversational-memory episodes: a user telling a memory assistant about jobs, moves, family and pets.

The episodes and their gold edges are written by hand in `conversational_source.py`; this module turns
them into `LabeledEpisode` dicts. Every date there is an expression ("last Saturday", "two years ago",
"March 4") that `resolve_date` computes from the turn's reference time, so no calendar date is ever
worked out by hand, and the source is checked (entities, types, dates, word counts) on every build.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final, NamedTuple

from edgewise.data.build import conversational_source as source
from edgewise.signatures.types import Granularity, LabeledEpisode, format_utc

SOURCE_NAME: Final[str] = "conversational"
LICENSE: Final[str] = "CC-BY-4.0"
#: How precisely "ref" (an ongoing fact with no stated start) is judged: the seed asks for the reference
#: time itself, but an extractor that writes the same calendar day has stated the same fact.
REFERENCE_GRANULARITY: Final[Granularity] = "day"
#: Previous episodes given with a turn: the latest earlier turns of its conversation.
MAX_PREVIOUS_EPISODES: Final[int] = 3
#: Longest current episode, in whitespace-separated words.
MAX_EPISODE_WORDS: Final[int] = 80
MIN_ENTITIES: Final[int] = 2
MAX_ENTITIES: Final[int] = 8

_SOURCE_FILE: Final[str] = "data/build/conversational_source.py"
_WEEKDAYS: Final[dict[str, int]] = {
    name: index
    for index, name in enumerate(
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    )
}
_MONTHS: Final[dict[str, int]] = {
    name: index
    for index, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_NUMBER_WORDS: Final[dict[str, int]] = {
    word: index
    for index, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
} | {"a": 1, "an": 1, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}


class ResolvedDate(NamedTuple):
    """An absolute UTC date computed from an expression, with how precisely the text states it."""

    value: datetime
    granularity: Granularity


class ConversationalSourceError(ValueError):
    """The hand-written source breaks a rule; the message names conversation, turn and field."""


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _month_start(year: int, month: int) -> ResolvedDate:
    return ResolvedDate(datetime(year, month, 1, tzinfo=UTC), "month")


def _shift_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _count(word: str) -> int:
    if word.isdigit():
        return int(word)
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    raise ValueError(f"unknown number {word!r}")


def resolve_date(expression: str, reference_time: datetime) -> ResolvedDate:
    """Turn a date expression of `conversational_source` into an absolute date, relative to `reference_time`.

    The grammar is the one listed in `conversational_source`'s docstring: "ref", absolute "2019" /
    "2019-05" / "2019-05-17", and relative forms such as "last Saturday", "two weeks ago", "last month",
    "March 4" or "next September". Raises ValueError for anything else, so a typo never becomes a date.
    """
    ref = reference_time.astimezone(UTC)
    today = ref.date()
    text = " ".join(expression.strip().lower().split())

    if text == "ref":
        return ResolvedDate(ref, REFERENCE_GRANULARITY)
    if match := re.fullmatch(r"(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", text):
        year, month, day = match.groups()
        if day is not None:
            return ResolvedDate(_midnight(date(int(year), int(month), int(day))), "day")
        if month is not None:
            return _month_start(int(year), int(month))
        return ResolvedDate(datetime(int(year), 1, 1, tzinfo=UTC), "year")
    simple_days = {"today": 0, "yesterday": -1, "tomorrow": 1}
    if text in simple_days:
        return ResolvedDate(_midnight(today + timedelta(days=simple_days[text])), "day")

    if match := re.fullmatch(r"(last|next|this) (month|year)", text):
        direction, unit = match.groups()
        step = {"last": -1, "this": 0, "next": 1}[direction]
        if unit == "month":
            return _month_start(*_shift_months(today.year, today.month, step))
        return ResolvedDate(datetime(today.year + step, 1, 1, tzinfo=UTC), "year")

    if match := re.fullmatch(r"(?:(in) )?(\w+) (day|week|month|year)s?(?: (ago))?", text):
        future, number, unit, past = match.groups()
        if bool(future) == bool(past):
            raise ValueError(f"date expression {expression!r} needs exactly one of 'in ...' or '... ago'")
        amount = _count(number) * (1 if future else -1)
        if unit in ("day", "week"):
            return ResolvedDate(
                _midnight(today + timedelta(days=amount * (7 if unit == "week" else 1))), "day"
            )
        if unit == "month":
            return _month_start(*_shift_months(today.year, today.month, amount))
        return ResolvedDate(datetime(today.year + amount, 1, 1, tzinfo=UTC), "year")

    if match := re.fullmatch(r"(last|next) (\w+)", text):
        direction, name = match.groups()
        if name in _WEEKDAYS:
            offset = (today.weekday() - _WEEKDAYS[name]) % 7 or 7
            if direction == "next":
                offset = -((_WEEKDAYS[name] - today.weekday()) % 7 or 7)
            return ResolvedDate(_midnight(today - timedelta(days=offset)), "day")
        if name in _MONTHS:
            month = _MONTHS[name]
            if direction == "last":
                year = today.year if month < today.month else today.year - 1
            else:
                year = today.year if month > today.month else today.year + 1
            return _month_start(year, month)

    if match := re.fullmatch(r"([a-z]+)(?: (\d{1,2}))?", text):
        name, day_text = match.groups()
        if name in _MONTHS:
            if day_text is None:
                return _month_start(today.year, _MONTHS[name])
            return ResolvedDate(_midnight(date(today.year, _MONTHS[name], int(day_text))), "day")

    raise ValueError(f"unknown date expression {expression!r}")


def _edge_types() -> list[dict[str, Any]]:
    return [
        {"name": name, "description": description, "symmetric": symmetric}
        for name, (description, symmetric, _aliases) in source.EDGE_TYPES.items()
    ]


def _where(conversation_id: int, turn: int | None = None, field: str | None = None) -> str:
    place = f"{_SOURCE_FILE}: conversation {conversation_id}"
    if turn is not None:
        place += f", turn {turn}"
    if field is not None:
        place += f", {field}"
    return place


def _resolve_field(
    expression: str | None, reference_time: datetime, where: str
) -> tuple[str | None, Granularity | None]:
    if expression is None:
        return None, None
    try:
        resolved = resolve_date(expression, reference_time)
    except ValueError as error:
        raise ConversationalSourceError(f"{where}: {error}") from None
    return format_utc(resolved.value), resolved.granularity


def _gold_edge(
    raw: Sequence[Any], turn: dict[str, Any], reference_time: datetime, where: str
) -> dict[str, Any]:
    if len(raw) not in (6, 7):
        raise ConversationalSourceError(f"{where}: an edge is a 6- or 7-tuple, got {len(raw)} items")
    relationship, subject, target, fact, valid_expression, invalid_expression = raw[:6]
    extra_aliases = tuple(raw[6]) if len(raw) == 7 else ()
    if relationship not in source.EDGE_TYPES:
        raise ConversationalSourceError(f"{where}, type: {relationship!r} is not in EDGE_TYPES")
    for role, name in (("source", subject), ("target", target)):
        if name not in turn["entities"]:
            raise ConversationalSourceError(f"{where}, {role}: {name!r} is not in this turn's entities")
    if subject == target:
        raise ConversationalSourceError(f"{where}: source and target are both {subject!r}")
    valid_at, valid_granularity = _resolve_field(valid_expression, reference_time, f"{where}, validAt")
    invalid_at, invalid_granularity = _resolve_field(
        invalid_expression, reference_time, f"{where}, invalidAt"
    )
    if valid_at is not None and invalid_at is not None and invalid_at < valid_at:
        raise ConversationalSourceError(f"{where}: invalidAt {invalid_at} is before validAt {valid_at}")
    aliases = [
        alias for alias in (*source.EDGE_TYPES[relationship][2], *extra_aliases) if alias != relationship
    ]
    return {
        "relationshipType": relationship,
        "sourceEntityName": subject,
        "targetEntityName": target,
        "fact": fact,
        "validAt": valid_at,
        "invalidAt": invalid_at,
        "attributes": {},
        "aliases": list(dict.fromkeys(aliases)),
        "validAtGranularity": valid_granularity,
        "invalidAtGranularity": invalid_granularity,
    }


def _check_turn(conversation: dict[str, Any], index: int, turn: dict[str, Any], previous: list[str]) -> None:
    """Catch typos in the hand-written source: unknown entities, names the text never mentions, sizes."""
    conversation_id = conversation["id"]
    words = len(turn["text"].split())
    if words > MAX_EPISODE_WORDS:
        raise ConversationalSourceError(
            f"{_where(conversation_id, index, 'text')}: {words} words, at most {MAX_EPISODE_WORDS}"
        )
    names = turn["entities"]
    if not MIN_ENTITIES <= len(names) <= MAX_ENTITIES or len(set(names)) != len(names):
        raise ConversationalSourceError(
            f"{_where(conversation_id, index, 'entities')}: need {MIN_ENTITIES}-{MAX_ENTITIES} distinct names"
        )
    if conversation["user"] not in names:
        raise ConversationalSourceError(f"{_where(conversation_id, index, 'entities')}: the user is missing")
    visible = " ".join([turn["text"], *previous]).lower()
    for name in names:
        if name not in conversation["entities"]:
            raise ConversationalSourceError(
                f"{_where(conversation_id, index, 'entities')}: {name!r} has no type in the conversation"
            )
        if name != "User" and name.lower() not in visible:
            raise ConversationalSourceError(
                f"{_where(conversation_id, index, 'entities')}: {name!r} is not mentioned in the episode "
                "or its previous episodes"
            )


def _conversation_episodes(
    conversation: dict[str, Any], edge_types: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    conversation_id = conversation["id"]
    episodes: list[dict[str, Any]] = []
    earlier: list[str] = []
    last_time: datetime | None = None
    for index, turn in enumerate(conversation["turns"], start=1):
        reference_time = datetime.fromisoformat(turn["time"])
        if last_time is not None and reference_time < last_time:
            raise ConversationalSourceError(
                f"{_where(conversation_id, index, 'time')}: earlier than turn {index - 1}"
            )
        last_time = reference_time
        previous = earlier[-MAX_PREVIOUS_EPISODES:]
        _check_turn(conversation, index, turn, previous)
        edges = [
            _gold_edge(raw, turn, reference_time, _where(conversation_id, index, f"edge {number}"))
            for number, raw in enumerate(turn["edges"], start=1)
        ]
        episodes.append(
            {
                "id": f"conv-{conversation_id:03d}-{index}",
                "source": SOURCE_NAME,
                "license": LICENSE,
                "exhaustive": True,
                "episodeContent": turn["text"],
                "previousEpisodes": previous,
                "entities": [
                    {"name": name, "type": conversation["entities"][name]} for name in turn["entities"]
                ],
                "referenceTime": format_utc(reference_time),
                "edgeTypes": edge_types,
                "customPrompt": "",
                "edges": edges,
            }
        )
        earlier.append(turn["text"])
    return episodes


def build_conversational_episodes() -> list[dict[str, Any]]:
    """All labeled conversational episodes as camelCase `LabeledEpisode` JSON dicts, in source order.

    Deterministic: the same source always yields the same list. Ids are "conv-007-2" (conversation 7,
    turn 2), so that a splitter can keep the turns of one conversation together.
    """
    edge_types = _edge_types()
    episodes: list[dict[str, Any]] = []
    seen: set[int] = set()
    for conversation in source.CONVERSATIONS:
        if conversation["id"] in seen:
            raise ConversationalSourceError(f"{_where(conversation['id'])}: duplicate conversation id")
        seen.add(conversation["id"])
        episodes.extend(_conversation_episodes(conversation, edge_types))
    for episode in episodes:
        LabeledEpisode.model_validate(episode)
    return episodes


def conversation_id(episode_id: str) -> str:
    """The conversation an episode belongs to: "conv-007-2" -> "conv-007" (the unit a split keeps whole)."""
    return episode_id.rsplit("-", 1)[0]


def build_example_episodes() -> list[dict[str, Any]]:
    """The unlabeled example episodes (`Episode` JSON plus an id) used by the README and benchmarks."""
    examples: list[dict[str, Any]] = []
    for example in source.EXAMPLES:
        unknown = [name for name in example["types"] if name not in source.EDGE_TYPES]
        if unknown:
            raise ConversationalSourceError(f"{_SOURCE_FILE}: {example['id']}, types: unknown {unknown}")
        examples.append(
            {
                "id": example["id"],
                "episodeContent": example["text"],
                "previousEpisodes": list(example["previous"]),
                "entities": [{"name": name} for name in example["entities"]],
                "referenceTime": example["time"],
                "edgeTypes": [
                    {
                        "name": name,
                        "description": source.EDGE_TYPES[name][0],
                        "symmetric": source.EDGE_TYPES[name][1],
                    }
                    for name in example["types"]
                ],
            }
        )
    return examples


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    """One JSON object per line, keys in insertion order, non-ASCII kept: byte-stable across runs."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str] | None = None) -> int:
    """Write the labeled episodes and/or the example file: `python -m edgewise.data.build.conversational`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the labeled episodes to this JSONL file")
    parser.add_argument(
        "--examples", type=Path, help="write the unlabeled example episodes to this JSONL file"
    )
    args = parser.parse_args(argv)
    episodes = build_conversational_episodes()
    if args.out:
        args.out.write_text(to_jsonl(episodes), encoding="utf-8")
    if args.examples:
        args.examples.write_text(to_jsonl(build_example_episodes()), encoding="utf-8")
    edges = sum(len(episode["edges"]) for episode in episodes)
    print(
        f"{len(episodes)} episodes, {edges} gold edges, {len(source.CONVERSATIONS)} conversations",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
