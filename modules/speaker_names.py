"""Speaker names: in a transcript whose turns are labelled by entities ("Speaker 2: ..."), who each label is.

A transcript names its speakers only by what the others call them. "Speaker 2: Pheebs?" followed by
"Speaker 3: No thanks" says that Speaker 3 is Pheebs; "Speaker 1: Hey Monica, it's Chip." says that
Speaker 1 is Chip. A small model never writes these alias edges (it reads "Speaker 1" as a person
unrelated to the names in the text), so post-processing adds them:

- a name said as a form of address (at the start of a turn or after a greeting, or set off by a comma
  at the end of a clause, or a whole turn such as "Pheebs?") names the speaker who answers: the next
  turn's, else the previous turn's, when that is another speaker;
- "I'm X", "I am X", "it's X", "my name is X" names the turn's own speaker.

Names are the episode's Person entities that label no turn and are not forms of address ("honey",
"sir"); a name that would go to two speakers goes to neither. The edge's type is the episode's alias
type (ALSO_KNOWN_AS or a synonym it offers), from the name to the turn label; an episode that offers
none gets no edge. Each added edge is a `speaker_named` warning. On when the program's options say so
(`ProgramOptions.speaker_names`).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from edgewise.domain.episode import Episode
from edgewise.domain.names import FORMS_OF_ADDRESS, to_screaming_snake
from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.postprocess import edge_key

ALIAS_TYPES: Final = ("ALSO_KNOWN_AS", "SAME_AS", "ALIAS_OF", "ALTERNATE_NAME", "KNOWN_AS", "AKA")
"""Relationship types that say two names are one entity, in the order one is chosen."""

_NOT_NAMES: Final = FORMS_OF_ADDRESS | {"dear", "guys", "you"}
_TURN: Final = re.compile(r"^\s*([^:\n]{1,40}?)\s*:\s*(.*)$")
_GREETING: Final = (
    r"(?:hey|hi|hello|oh|okay|ok|yes|yeah|no|well|thanks|thank you|bye|look|come on|sorry|please|excuse me)"
)


class Turn(NamedTuple):
    speaker: str
    text: str


def transcript_turns(content: str, entity_names: set[str]) -> list[Turn | None]:
    """Each line of `content` as a turn when it starts with an entity's name and a colon, else None."""
    turns: list[Turn | None] = []
    for line in content.splitlines():
        match = _TURN.match(line)
        turns.append(Turn(match[1], match[2]) if match and match[1] in entity_names else None)
    return turns


def _addressed(text: str, name: str) -> bool:
    """Whether `text` calls someone `name`: "Pheebs?", "Hey Monica, ...", "..., Ross.", "Ross, thank you"."""
    n = re.escape(name)
    return bool(
        re.search(
            rf"(?:^|[.!?]\s+|\b{_GREETING}[,!]?\s+){n}\s*(?:[,.!?…]|$)|,\s*{n}\s*(?:[.!?…]|$)",
            text,
            re.IGNORECASE,
        )
    )


def _introduced(text: str, name: str) -> bool:
    """Whether the speaker of `text` gives `name` as their own: "I'm Joey", "it's Chip", "my name is Ana"."""
    return bool(
        re.search(
            rf"\b(?:i'm|i’m|i am|it's|it’s|it is|my name is)\s+{re.escape(name)}\b", text, re.IGNORECASE
        )
    )


def alias_type(episode: Episode) -> str | None:
    """The episode's relationship type for two names of one entity, if it offers one."""
    offered = {to_screaming_snake(edge_type.name): edge_type.name for edge_type in episode.edge_types}
    return next((offered[name] for name in ALIAS_TYPES if name in offered), None)


def _speaker_of(turns: list[Turn | None], index: int, other_than: str) -> str | None:
    """The speaker who answers turn `index`: the next turn's, else the previous one's, if not `other_than`."""
    for neighbour in (index + 1, index - 1):
        if 0 <= neighbour < len(turns):
            turn = turns[neighbour]
            if turn is not None and turn.speaker != other_than:
                return turn.speaker
    return None


def speaker_names(episode: Episode) -> dict[str, tuple[str, str]]:
    """Name -> (the turn label it names, the turn that says so); names that go to two labels are left out."""
    entity_names = {entity.name for entity in episode.entities}
    turns = transcript_turns(episode.episode_content, entity_names)
    labels = {turn.speaker for turn in turns if turn is not None}
    names = [
        entity.name
        for entity in episode.entities
        if entity.type == "Person"
        and entity.name not in labels
        and entity.name[:1].isupper()
        and entity.name.casefold() not in _NOT_NAMES
    ]
    found: dict[str, set[str]] = {}
    evidence: dict[str, str] = {}
    for index, turn in enumerate(turns):
        if turn is None:
            continue
        for name in names:
            speaker = None
            if _introduced(turn.text, name):
                speaker = turn.speaker
            elif _addressed(turn.text, name):
                speaker = _speaker_of(turns, index, turn.speaker)
            if speaker is not None:
                found.setdefault(name, set()).add(speaker)
                evidence.setdefault(name, f"{turn.speaker}: {turn.text}")
    return {
        name: (next(iter(speakers)), evidence[name]) for name, speakers in found.items() if len(speakers) == 1
    }


def add_speaker_names(edges: list[Edge], episode: Episode, context: CallContext) -> list[Edge]:
    """`edges` and, for each speaker name the transcript gives, its alias edge (unless already there)."""
    kind = alias_type(episode)
    if kind is None:
        return edges
    symmetric = frozenset(t.name for t in episode.edge_types if t.symmetric)
    seen = {edge_key(edge, symmetric) for edge in edges}
    added: list[Edge] = []
    for name, (speaker, turn) in speaker_names(episode).items():
        edge = Edge(
            relationship_type=kind, source_entity_name=name, target_entity_name=speaker, fact=turn.strip()
        )
        if edge_key(edge, symmetric) in seen:
            continue
        seen.add(edge_key(edge, symmetric))
        added.append(edge)
        context.warn(
            ExtractionWarning(
                code="speaker_named",
                message=f"added: the transcript calls {speaker} {name!r}",
                edge=edge.to_json_dict(),
            )
        )
    return edges + added
