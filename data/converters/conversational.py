# Over 400 lines: one source's converter; its hand-written rules read best in one file.
"""Conversational-memory episodes: a user telling a memory assistant about jobs, moves, family and pets.

The episodes and their gold edges are written by hand in `conversational_source.json`, shipped beside
this module; this module turns them into `LabeledEpisode` dicts. Every date there is an expression
("last Saturday", "two years ago", "March 4") that `resolve_date` computes from the turn's reference
time, so no calendar date is ever worked out by hand, and the source is checked (entities, types,
dates, word counts) on every build.

The file holds `edgeTypes` (the relationship inventory given to every episode: name, description,
symmetric, aliases, the entity types it obviously connects (`sourceTypes` / `targetTypes`) and the
attributes a type declares: name, kind, description), `conversations` (a stable id, the user's entity
name, the entity types, and the turns in order: time, text, entities, edges, and `kind` tags that say
what a turn tests) and `examples` (the labeled example episodes of `data/examples/episodes.jsonl`, for
the README's first command and its bench: id, time, text, previous turns, entities with their types,
the names of the relationship types to offer, described from `edgeTypes`, and gold edges). The
examples carry `sourceTypes` / `targetTypes` as their signatures, while the labeled conversational
episodes do not (their benches stay as measured, and a compiled program learns its signatures from
the train split's gold edges). An edge is `{"type", "source", "target", "fact", "validAt",
"invalidAt"}` with date expressions (or null), an optional `aliases` (extra acceptable type names for
that one edge, beyond the type's own) and, for a type that declares attributes, `attributes`: a value
or null for each of them.

More conversations are written by hand in `handwritten/*.json` beside this module, each file
`{"split": "train" | "dev", "conversations": [...]}` in the layout above and labeled with the source's
`edgeTypes`; `build_handwritten_episodes` builds them with the same checks (plus a genre as each turn's
first `kind` tag, and conversation ids no other conversation uses), and `python -m
edgewise.data.converters.conversational --check-handwritten` prints every problem they have.

Date expressions (the grammar `resolve_date` reads; granularity in brackets):
    "ref"                          the turn's reference time, for ongoing facts with no stated start [day]
    "2019", "2019-05", "2019-05-17" an absolute year [year], month [month] or day [day]
    "today", "yesterday", "tomorrow", "N days ago", "in N days", "N weeks ago", "in N weeks" [day]
    "last <weekday>"               the latest such weekday strictly before the reference date [day]
    "next <weekday>"               the first such weekday strictly after the reference date [day]
    "N months ago", "last month", "next month" [month];  "N years ago", "last year" [year]
    "<Month>", "<Month> <day>"     in the reference year [month] / [day]
    "last <Month>", "next <Month>" the latest such month before / first after the reference month [month]
N is digits or a word ("two"). A month value is the 1st of that month, a year value January 1st.

Labeling conventions (the seed's rules, made concrete where the text leaves a choice):
 1. Ongoing present-tense fact with no stated start: validAt = "ref". A stated start is validAt, a stated
    end is invalidAt; a past fact with no stated date has both null. Dates are never invented.
 2. An arranged future fact with a date ("I start at Canva on April 2", "the lease is signed") is an edge
    dated by that date; plans, wishes, offers not yet accepted and hypotheticals are not edges.
 3. Only facts stated (or directly entailed) in the current episode; previous episodes only resolve
    references ("she", "Mum", "the school"). Knock-on effects are not labeled: leaving a company ends
    WORKS_AT, not the COLLEAGUE_OF or MANAGES edges around it. Moving house does end the old LIVES_IN
    or NEIGHBOR_OF, since the move states it.
 4. Symmetric types are labeled once. A manager is MANAGES, not also COLLEAGUE_OF; COLLEAGUE_OF needs the
    words colleague / coworker / teammate or "works with". "My teammate" or "my manager" entails that
    person's WORKS_AT at the user's employer (so an employer the turn does not restate is left out of
    its entities rather than left unlabeled).
 5. A named professional at a named practice: TREATED_BY the professional, who WORKS_AT the practice.
 6. Where someone is from, trips, visits and temporary stays are not LIVES_IN / ROOMMATE_OF; family living
    together is not ROOMMATE_OF. World knowledge (where a company is) is not a fact of the episode.
 7. Quoted text, instructions to the assistant, jokes and song lines state no facts.
 8. Attributes: an edge of a type that declares attributes labels every one of them, with the value the
    current episode states or directly entails ("I finally switched dentists. I'm now seeing Dr. Hoffmann"
    is specialty "dentist"), else null, even where an earlier turn said it (the attribute step reads the
    current episode). Values are the text's words in their base form ("lead" for "I'm leading"); a
    person who is an entity is named by the entity's name, several joined by "and". A parent is
    "mother" or "father" only when a gendered word or pronoun says so, never from a first name; "runs a
    bakery" names no role; a coat such as "tabby" is not a breed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError
from pydantic.alias_generators import to_camel

from edgewise.data.loader import check_episode
from edgewise.domain.errors import EdgewiseError
from edgewise.domain.gold import Granularity, LabeledEpisode
from edgewise.domain.names import field_path
from edgewise.domain.types import AttributeValue, EdgeAttribute, format_utc

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
#: The hand-labeled source, shipped as package data beside this module.
SOURCE_FILE: Final[Path] = Path(__file__).with_name("conversational_source.json")
#: More hand-written conversations, one JSON file each group: `{"split": "train" | "dev", "conversations":
#: [...]}` in the layout of the source's `conversations`, labeled with its `edgeTypes`. Their episodes go
#: to the split the file declares, after the drawn ones (`splits.append_declared`).
HANDWRITTEN_DIR: Final[Path] = Path(__file__).with_name("handwritten")
#: What a hand-written turn is, always its first `kind` tag; `edgewise data stats` counts them.
GENRES: Final[tuple[str, ...]] = (
    "assistant_chat",
    "group_chat",
    "meeting_notes",
    "support_ticket",
    "email",
    "diary",
)

#: How messages name the shipped file: by its place in the source tree, wherever the package is installed.
_SHIPPED_LABEL: Final[str] = "data/converters/conversational_source.json"
_HANDWRITTEN_LABEL: Final[str] = "data/converters/handwritten"
# The words of the date grammar, each list as one line of words (as literals they would take a line a word).
_WEEKDAY_WORDS: Final = "monday tuesday wednesday thursday friday saturday sunday"
_MONTH_WORDS: Final = "january february march april may june july august september october november december"
_NUMBER_WORDS_0_TO_12: Final = "zero one two three four five six seven eight nine ten eleven twelve"
_WEEKDAYS: Final[dict[str, int]] = {name: index for index, name in enumerate(_WEEKDAY_WORDS.split())}
_MONTHS: Final[dict[str, int]] = {name: index for index, name in enumerate(_MONTH_WORDS.split(), start=1)}
_SMALL_NUMBERS: Final[dict[str, int]] = {word: n for n, word in enumerate(_NUMBER_WORDS_0_TO_12.split())}
_NUMBER_WORDS: Final = _SMALL_NUMBERS | {
    "a": 1,
    "an": 1,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
}


class ResolvedDate(NamedTuple):
    """An absolute UTC date computed from an expression, with how precisely the text states it."""

    value: datetime
    granularity: Granularity


class ConversationalSourceError(EdgewiseError, ValueError):
    """The hand-written source breaks a rule; the message names conversation, turn and field."""


class SourceRecord(BaseModel):
    """A record of the source file: camelCase keys, none missing and none unknown, so a typo fails."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class SourceEdgeType(SourceRecord):
    name: str
    description: str
    symmetric: bool
    source_types: tuple[str, ...] | None = None
    target_types: tuple[str, ...] | None = None
    aliases: tuple[str, ...] = ()
    attributes: tuple[EdgeAttribute, ...] = ()


class SourceEdge(SourceRecord):
    """A gold edge with its dates as expressions; `aliases` are extra accepted types for this one edge.

    `attributes` holds a value (or null) for every attribute its type declares, and nothing else.
    """

    type: str
    source: str
    target: str
    fact: str
    valid_at: str | None
    invalid_at: str | None
    aliases: tuple[str, ...] = ()
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)


class SourceTurn(SourceRecord):
    time: str
    text: str
    entities: tuple[str, ...]
    edges: tuple[SourceEdge, ...]
    kind: tuple[str, ...] = ()


class SourceConversation(SourceRecord):
    id: int
    user: str
    entities: dict[str, str]
    turns: tuple[SourceTurn, ...]


class HandwrittenFile(SourceRecord):
    """One file of `handwritten/`: the split its episodes go to, and conversations in the source's layout."""

    split: Literal["train", "dev"]
    conversations: tuple[SourceConversation, ...]


class HandwrittenEpisode(NamedTuple):
    """A built hand-written episode with what the files say of it beyond the episode: split and `kind` tags."""

    file: str
    split: str
    kind: tuple[str, ...]
    episode: dict[str, Any]


class SourceEpisodeFields(SourceRecord):
    """What every hand-written episode states (this file's examples, the injection set's episodes): its
    time, text and earlier turns, its entities with their types, the types it offers and its gold edges."""

    time: str
    text: str
    previous: tuple[str, ...]
    entities: dict[str, str]
    types: tuple[str, ...]
    edges: tuple[SourceEdge, ...]


class SourceExample(SourceEpisodeFields):
    """An example episode, by its id."""

    id: str


class ConversationalSource(SourceRecord):
    """The whole hand-labeled file: the type inventory, the conversations and the unlabeled examples."""

    edge_types: tuple[SourceEdgeType, ...]
    conversations: tuple[SourceConversation, ...]
    examples: tuple[SourceExample, ...] = ()

    _file: str = PrivateAttr(default=_SHIPPED_LABEL)

    @property
    def file(self) -> str:
        """The file this source was read from, as error messages name it."""
        return self._file

    def edge_type(self, name: str) -> SourceEdgeType | None:
        return next((edge_type for edge_type in self.edge_types if edge_type.name == name), None)

    def where(self, conversation_id: int, turn: int | None = None, field: str | None = None) -> str:
        """`<file>: conversation 3, turn 2, edge 1`: the place a message names."""
        place = f"{self._file}: conversation {conversation_id}"
        if turn is not None:
            place += f", turn {turn}"
        if field is not None:
            place += f", {field}"
        return place


def read_source(path: Path = SOURCE_FILE) -> ConversationalSource:
    """Read and check the source file's shape; a problem is a `ConversationalSourceError` naming the field."""
    label = _SHIPPED_LABEL if path == SOURCE_FILE else str(path)
    try:
        source = ConversationalSource.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        where = field_path(tuple(first["loc"])) or "the file"
        raise ConversationalSourceError(f"{label}: {where}: {first['msg']}") from None
    names = [edge_type.name for edge_type in source.edge_types]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConversationalSourceError(f"{label}: edgeTypes: {', '.join(repeated)} listed more than once")
    source._file = label
    return source


@cache
def shipped_source() -> ConversationalSource:
    """The source file shipped with the package, read once."""
    return read_source()


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
    raise ConversationalSourceError(f"unknown number {word!r}")


def resolve_date(expression: str, reference_time: datetime) -> ResolvedDate:
    """Turn a date expression of `conversational_source` into an absolute date, relative to `reference_time`.

    The grammar is the one listed in `conversational_source`'s docstring: "ref", absolute "2019" /
    "2019-05" / "2019-05-17", and relative forms such as "last Saturday", "two weeks ago", "last month",
    "March 4" or "next September". Raises ConversationalSourceError (a ValueError) for anything else,
    so a typo never becomes a date.
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
            raise ConversationalSourceError(
                f"date expression {expression!r} needs exactly one of 'in ...' or '... ago'"
            )
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

    raise ConversationalSourceError(f"unknown date expression {expression!r}")


def _edge_types(source: ConversationalSource) -> list[dict[str, Any]]:
    return [
        {
            "name": edge_type.name,
            "description": edge_type.description,
            "symmetric": edge_type.symmetric,
            "attributes": [attribute.to_json_dict() for attribute in edge_type.attributes],
        }
        for edge_type in source.edge_types
    ]


def _gold_attributes(edge_type: SourceEdgeType, raw: SourceEdge, where: str) -> dict[str, AttributeValue]:
    """The edge's labeled attributes in the type's order: every declared one labeled (null: not stated)."""
    declared = [attribute.name for attribute in edge_type.attributes]
    unknown = [name for name in raw.attributes if name not in declared]
    if unknown:
        raise ConversationalSourceError(
            f"{where}, attributes: {', '.join(unknown)} not declared by {edge_type.name}"
            f" (it declares: {', '.join(declared) or 'none'})"
        )
    missing = [name for name in declared if name not in raw.attributes]
    if missing:
        raise ConversationalSourceError(
            f"{where}, attributes: {', '.join(missing)} not labeled (write null when the text does not say)"
        )
    for attribute in edge_type.attributes:
        value = raw.attributes[attribute.name]
        if not attribute.accepts(value):
            raise ConversationalSourceError(
                f"{where}, attributes.{attribute.name}: {value!r} is not of kind {attribute.kind}"
            )
    return {name: raw.attributes[name] for name in declared}


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
    source: ConversationalSource,
    raw: SourceEdge,
    entities: Iterable[str],
    reference_time: datetime,
    where: str,
    *,
    attributes: bool = True,
    entity_types: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One gold edge as `LabeledEpisode` JSON; `attributes=False` for an episode whose offered types
    declare none (the examples), so that its edges label none either. With `entity_types`, both ends
    must fit the type's `sourceTypes` / `targetTypes`: a LIVES_IN to an Organization is a slip."""
    edge_type = source.edge_type(raw.type)
    if edge_type is None:
        raise ConversationalSourceError(f"{where}, type: {raw.type!r} is not in edgeTypes")
    for role, name in (("source", raw.source), ("target", raw.target)):
        if name not in entities:
            raise ConversationalSourceError(f"{where}, {role}: {name!r} is not in this episode's entities")
    if raw.source == raw.target:
        raise ConversationalSourceError(f"{where}: source and target are both {raw.source!r}")
    if entity_types is not None:
        _check_signature(edge_type, raw, entity_types, where)
    valid_at, valid_granularity = _resolve_field(raw.valid_at, reference_time, f"{where}, validAt")
    invalid_at, invalid_granularity = _resolve_field(raw.invalid_at, reference_time, f"{where}, invalidAt")
    if valid_at is not None and invalid_at is not None and invalid_at < valid_at:
        raise ConversationalSourceError(f"{where}: invalidAt {invalid_at} is before validAt {valid_at}")
    aliases = [alias for alias in (*edge_type.aliases, *raw.aliases) if alias != raw.type]
    return {
        "relationshipType": raw.type,
        "sourceEntityName": raw.source,
        "targetEntityName": raw.target,
        "fact": raw.fact,
        "validAt": valid_at,
        "invalidAt": invalid_at,
        "attributes": _gold_attributes(edge_type, raw, where) if attributes else {},
        "aliases": list(dict.fromkeys(aliases)),
        "validAtGranularity": valid_granularity,
        "invalidAtGranularity": invalid_granularity,
    }


def _check_signature(
    edge_type: SourceEdgeType, raw: SourceEdge, entity_types: Mapping[str, str], where: str
) -> None:
    for role, name, allowed in (
        ("source", raw.source, edge_type.source_types),
        ("target", raw.target, edge_type.target_types),
    ):
        if allowed is not None and entity_types.get(name) not in allowed:
            raise ConversationalSourceError(
                f"{where}, {role}: {name!r} is of type {entity_types.get(name)}, and {raw.type} takes"
                f" {' or '.join(allowed)} as its {role}"
            )


def _reference_time(source: ConversationalSource, conversation: SourceConversation, index: int) -> datetime:
    """The turn's time as an aware datetime: ISO 8601 with its offset ("2024-03-14T09:30:00Z")."""
    text = conversation.turns[index - 1].time
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise ConversationalSourceError(
            f"{source.where(conversation.id, index, 'time')}: {text!r} is not an ISO 8601 time with an offset"
        )
    return parsed


def _check_turn(
    source: ConversationalSource,
    conversation: SourceConversation,
    index: int,
    turn: SourceTurn,
    previous: list[str],
) -> None:
    """Catch typos in the hand-written source: unknown entities, names the text never mentions, sizes."""
    where = source.where(conversation.id, index, "entities")
    words = len(turn.text.split())
    if words > MAX_EPISODE_WORDS:
        raise ConversationalSourceError(
            f"{source.where(conversation.id, index, 'text')}: {words} words, at most {MAX_EPISODE_WORDS}"
        )
    names = turn.entities
    if not MIN_ENTITIES <= len(names) <= MAX_ENTITIES or len(set(names)) != len(names):
        raise ConversationalSourceError(f"{where}: need {MIN_ENTITIES}-{MAX_ENTITIES} distinct names")
    if conversation.user not in names:
        raise ConversationalSourceError(f"{where}: the user is missing")
    visible = " ".join([turn.text, *previous]).lower()
    for name in names:
        if name not in conversation.entities:
            raise ConversationalSourceError(f"{where}: {name!r} has no type in the conversation")
        if name != "User" and name.lower() not in visible:
            raise ConversationalSourceError(
                f"{where}: {name!r} is not mentioned in the episode or its previous episodes"
            )


def _raise(error: ConversationalSourceError) -> None:
    raise error


def episode_id_for(conversation: int, turn: int) -> str:
    """Turn 2 (counted from 1) of conversation 7 is "conv-007-2"; `conversation_id` reads "conv-007" back."""
    return f"conv-{conversation:03d}-{turn}"


def _conversation_episodes(
    source: ConversationalSource,
    conversation: SourceConversation,
    edge_types: list[dict[str, Any]],
    report: Callable[[ConversationalSourceError], None] = _raise,
) -> list[dict[str, Any]]:
    """The conversation's episodes, one a turn. Each problem goes to `report`, which raises by default; a
    `report` that returns lets the check go on to the next edge or turn (the hand-written files' check)."""
    episodes: list[dict[str, Any]] = []
    earlier: list[str] = []
    last_time: datetime | None = None
    for index, turn in enumerate(conversation.turns, start=1):
        previous = earlier[-MAX_PREVIOUS_EPISODES:]
        earlier.append(turn.text)
        try:
            _check_turn(source, conversation, index, turn, previous)
        except ConversationalSourceError as error:
            report(error)
        try:
            reference_time = _reference_time(source, conversation, index)
            if last_time is not None and reference_time < last_time:
                raise ConversationalSourceError(
                    f"{source.where(conversation.id, index, 'time')}: earlier than turn {index - 1}"
                )
        except ConversationalSourceError as error:
            report(error)
            continue
        last_time = reference_time
        edges = []
        for number, raw in enumerate(turn.edges, start=1):
            try:
                edges.append(
                    _gold_edge(
                        source,
                        raw,
                        turn.entities,
                        reference_time,
                        source.where(conversation.id, index, f"edge {number}"),
                        entity_types=conversation.entities,
                    )
                )
            except ConversationalSourceError as error:
                report(error)
        episodes.append(
            {
                "id": episode_id_for(conversation.id, index),
                "source": SOURCE_NAME,
                "license": LICENSE,
                "exhaustive": True,
                "exhaustiveEntities": True,
                "episodeContent": turn.text,
                "previousEpisodes": previous,
                "entities": [{"name": name, "type": conversation.entities[name]} for name in turn.entities],
                "referenceTime": format_utc(reference_time),
                "edgeTypes": edge_types,
                "customPrompt": "",
                "edges": edges,
            }
        )
    return episodes


def build_conversational_episodes(source: ConversationalSource | None = None) -> list[dict[str, Any]]:
    """All labeled conversational episodes as camelCase `LabeledEpisode` JSON dicts, in source order.

    `source` defaults to the shipped file. Deterministic: the same source always yields the same list.
    Ids are "conv-007-2" (conversation 7, turn 2), so that a splitter can keep the turns of one
    conversation together.
    """
    source = source or shipped_source()
    edge_types = _edge_types(source)
    episodes: list[dict[str, Any]] = []
    seen: set[int] = set()
    for conversation in source.conversations:
        if conversation.id in seen:
            raise ConversationalSourceError(f"{source.where(conversation.id)}: duplicate conversation id")
        seen.add(conversation.id)
        episodes.extend(_conversation_episodes(source, conversation, edge_types))
    for episode in episodes:
        LabeledEpisode.model_validate(episode)
    return episodes


def _handwritten_label(path: Path) -> str:
    """How messages name a hand-written file: by its place in the source tree when it is a shipped one."""
    return f"{_HANDWRITTEN_LABEL}/{path.name}" if path.parent == HANDWRITTEN_DIR else str(path)


def _schema_place(label: str, raw: Any, location: tuple[int | str, ...]) -> str:
    """`<file>: conversation 104, turn 2, edge 1, validAt` for a pydantic error's location in a file."""
    rest = list(location)
    if not (len(rest) >= 2 and rest[0] == "conversations" and isinstance(rest[1], int)):
        return f"{label}: {field_path(location) or 'the file'}"
    try:
        number: Any = raw["conversations"][rest[1]]["id"]
    except (KeyError, IndexError, TypeError):
        number = f"#{rest[1] + 1}"
    parts, rest = [f"{label}: conversation {number}"], rest[2:]
    for name, word in (("turns", "turn"), ("edges", "edge")):
        if len(rest) >= 2 and rest[0] == name and isinstance(rest[1], int):
            parts.append(f"{word} {rest[1] + 1}")
            rest = rest[2:]
    if rest:
        parts.append(field_path(tuple(rest)))
    return ", ".join(parts)


def _read_handwritten(path: Path, label: str, problems: list[str]) -> HandwrittenFile | None:
    """The file's shape, or None with every problem (not only the first) added to `problems`."""
    try:
        raw = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        problems.append(f"{label}: invalid JSON: {error}")
        return None
    try:
        return HandwrittenFile.model_validate(raw)
    except ValidationError as error:
        problems.extend(f"{_schema_place(label, raw, tuple(e['loc']))}: {e['msg']}" for e in error.errors())
        return None


def _check_kinds(source: ConversationalSource, conversation: SourceConversation) -> list[str]:
    """Every hand-written turn names its genre first, so that `edgewise data stats` can count it."""
    return [
        f"{source.where(conversation.id, index, 'kind')}: the first tag must be one of {', '.join(GENRES)}"
        for index, turn in enumerate(conversation.turns, start=1)
        if not turn.kind or turn.kind[0] not in GENRES
    ]


def _handwritten_conversation(
    source: ConversationalSource,
    split: str,
    conversation: SourceConversation,
    edge_types: list[dict[str, Any]],
    problems: list[str],
) -> list[HandwrittenEpisode]:
    """One hand-written conversation's episodes, with each of its problems added to `problems`."""
    problems.extend(_check_kinds(source, conversation))
    episodes = _conversation_episodes(
        source, conversation, edge_types, lambda error: problems.append(str(error))
    )
    kinds = {
        episode_id_for(conversation.id, n): turn.kind for n, turn in enumerate(conversation.turns, start=1)
    }
    for episode in episodes:
        where = source.where(conversation.id, int(episode["id"].rsplit("-", 1)[1]))
        try:
            labeled = LabeledEpisode.model_validate(episode)
        except ValidationError as error:
            problems.append(f"{where}: {error.errors()[0]['msg']}")
            continue
        problems.extend(f"{where}, {field}: {reason}" for field, reason in check_episode(labeled))
    return [HandwrittenEpisode(source.file, split, kinds[episode["id"]], episode) for episode in episodes]


def check_handwritten(
    folder: Path = HANDWRITTEN_DIR, main: ConversationalSource | None = None
) -> tuple[list[HandwrittenEpisode], list[str]]:
    """Build every `*.json` of `folder` and collect every problem, each naming file, conversation, turn
    and field: the main source's checks, plus a genre first in `kind` and conversation ids that no other
    conversation (of the main source or of another file) uses, since a split keeps a conversation whole.
    """
    main = main or shipped_source()
    edge_types = _edge_types(main)
    owners: dict[int, str] = {conversation.id: main.file for conversation in main.conversations}
    built: list[HandwrittenEpisode] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        label = _handwritten_label(path)
        parsed = _read_handwritten(path, label, problems)
        if parsed is None:
            continue
        source = ConversationalSource(edge_types=main.edge_types, conversations=parsed.conversations)
        source._file = label
        for conversation in parsed.conversations:
            if conversation.id in owners:
                problems.append(
                    f"{source.where(conversation.id)}: id already used in {owners[conversation.id]}"
                )
                continue
            owners[conversation.id] = label
            built.extend(_handwritten_conversation(source, parsed.split, conversation, edge_types, problems))
    return built, problems


def build_handwritten_episodes(folder: Path = HANDWRITTEN_DIR) -> list[HandwrittenEpisode]:
    """The hand-written episodes of `folder`, in file and conversation order; a
    `ConversationalSourceError` that lists every problem if any file has one."""
    built, problems = check_handwritten(folder)
    if problems:
        raise ConversationalSourceError(
            f"{len(problems)} problem(s) in the hand-written files:\n" + "\n".join(problems)
        )
    return built


def conversation_id(episode_id: str) -> str:
    """The conversation an episode belongs to: "conv-007-2" -> "conv-007" (the unit a split keeps whole)."""
    return episode_id.rsplit("-", 1)[0]


def _signature(edge_type: SourceEdgeType) -> dict[str, Any]:
    """An edge type as an example episode offers it: described, with its signature where it has one."""
    offered: dict[str, Any] = {"name": edge_type.name, "description": edge_type.description}
    if edge_type.source_types is not None:
        offered["sourceTypes"] = list(edge_type.source_types)
    if edge_type.target_types is not None:
        offered["targetTypes"] = list(edge_type.target_types)
    return offered | {"symmetric": edge_type.symmetric}


def build_example_episodes(source: ConversationalSource | None = None) -> list[dict[str, Any]]:
    """The labeled example episodes (`LabeledEpisode` JSON) of `data/examples/episodes.jsonl`.

    Typed entities and declared signatures, as a memory system's nodes and schema give them, so that
    the README's first command shows what the signatures do; gold edges, so that `edgewise bench
    --data data/examples/episodes.jsonl` scores it. Labeled by the conventions above.
    """
    source = source or shipped_source()
    examples: list[dict[str, Any]] = []
    for example in source.examples:
        where = f"{source.file}: {example.id}"
        types = [source.edge_type(name) for name in example.types]
        unknown = [name for name, edge_type in zip(example.types, types, strict=True) if edge_type is None]
        if unknown:
            raise ConversationalSourceError(f"{where}, types: unknown {unknown}")
        visible = " ".join([example.text, *example.previous]).lower()
        unseen = [name for name in example.entities if name != "User" and name.lower() not in visible]
        if unseen:
            raise ConversationalSourceError(f"{where}, entities: {unseen} not mentioned in the episode")
        reference_time = datetime.fromisoformat(example.time)
        edges = []
        for number, raw in enumerate(example.edges, start=1):
            if raw.type not in example.types:
                raise ConversationalSourceError(f"{where}, edge {number}: {raw.type} is not offered in types")
            # The examples offer their types without attributes (the README's first command makes no
            # attribute call), so their gold edges label none.
            edges.append(
                _gold_edge(
                    source, raw, example.entities, reference_time, f"{where}, edge {number}", attributes=False
                )
            )
        examples.append(
            {
                "id": example.id,
                "source": SOURCE_NAME,
                "license": LICENSE,
                "exhaustive": True,
                "exhaustiveEntities": True,
                "episodeContent": example.text,
                "previousEpisodes": list(example.previous),
                "entities": [{"name": name, "type": kind} for name, kind in example.entities.items()],
                "referenceTime": example.time,
                "edgeTypes": [_signature(edge_type) for edge_type in types if edge_type is not None],
                "edges": edges,
            }
        )
    for example in examples:
        LabeledEpisode.model_validate(example)
    return examples


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    """One JSON object per line, keys in insertion order, non-ASCII kept: byte-stable across runs."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def report_handwritten(folder: Path = HANDWRITTEN_DIR) -> int:
    """Print every problem of the hand-written files (stdout) and what each file holds (stderr); 1 if any."""
    built, problems = check_handwritten(folder)
    for problem in problems:
        print(problem)
    for file in dict.fromkeys(item.file for item in built):
        mine = [item for item in built if item.file == file]
        edges = sum(len(item.episode["edges"]) for item in mine)
        conversations = len({conversation_id(item.episode["id"]) for item in mine})
        print(
            f"{file}: {mine[0].split}, {conversations} conversations, {len(mine)} episodes, {edges} gold edges",
            file=sys.stderr,
        )
    edges = sum(len(item.episode["edges"]) for item in built)
    verdict = f"{len(problems)} problem(s)" if problems else "no problems"
    print(f"hand-written: {len(built)} episodes, {edges} gold edges; {verdict}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    """Write the labeled episodes and/or the example file: `python -m edgewise.data.converters.conversational`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the labeled episodes to this JSONL file")
    parser.add_argument("--examples", type=Path, help="write the labeled example episodes to this JSONL file")
    parser.add_argument(
        "--check-handwritten",
        nargs="?",
        const=HANDWRITTEN_DIR,
        type=Path,
        metavar="DIR",
        help=f"only check the hand-written files (default {_HANDWRITTEN_LABEL}/): print every problem, "
        "exit 1 if any",
    )
    args = parser.parse_args(argv)
    if args.check_handwritten is not None:
        return report_handwritten(args.check_handwritten)
    episodes = build_conversational_episodes()
    if args.out:
        args.out.write_text(to_jsonl(episodes), encoding="utf-8")
    if args.examples:
        args.examples.write_text(to_jsonl(build_example_episodes()), encoding="utf-8")
    edges = sum(len(episode["edges"]) for episode in episodes)
    print(
        f"{len(episodes)} episodes, {edges} gold edges, {len(shipped_source().conversations)} conversations",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
