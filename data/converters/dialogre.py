"""DialogRE dialogues as episodes: speakers and arguments are entities, relations become typed edges.

DialogRE labels relations between arguments of a whole Friends transcript excerpt; evidence is not
located in turns, so only dialogues short enough to be one episode are used, whole, and their labels
are exactly the dialogue's. Inverse duplicates are merged and symmetric types stay one edge.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Final, NamedTuple

from edgewise.data.converters.common import FIXED_REFERENCE_TIME, MAX_ENTITIES, MAX_EPISODE_WORDS, word_count
from edgewise.data.converters.vocabulary import edge_types, type_aliases
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import FORMS_OF_ADDRESS
from edgewise.domain.types import EdgeType, Entity

SOURCE: Final[str] = "dialogre"
LICENSE: Final[str] = "DialogRE: non-commercial research purposes only"
SEED: Final[int] = 20240102
RAW_FILES: Final[tuple[str, ...]] = ("train", "dev", "test")
#: Other type names a prediction may use for each gold type.
ALIASES: Final[dict[str, list[str]]] = type_aliases("dialogre")


class Mapping(NamedTuple):
    """How one DialogRE relation becomes an edge: the type, and whether x and y swap."""

    type_name: str
    reverse: bool


#: DialogRE relation -> edge type. Inverse pairs map to one type (the "org:"/"gpe:" side and the
#: parent/subordinate sides are read backwards).
RELATION_MAP: Final[dict[str, Mapping]] = {
    "per:alternate_names": Mapping("ALSO_KNOWN_AS", False),
    "per:girl/boyfriend": Mapping("DATING", False),
    "per:dates": Mapping("DATING", False),
    "per:positive_impression": Mapping("LIKES", False),
    "per:negative_impression": Mapping("DISLIKES", False),
    "per:friends": Mapping("FRIEND_OF", False),
    "per:title": Mapping("HAS_TITLE", False),
    "per:spouse": Mapping("SPOUSE_OF", False),
    "per:siblings": Mapping("SIBLING_OF", False),
    "per:children": Mapping("PARENT_OF", False),
    "per:parents": Mapping("PARENT_OF", True),
    "per:other_family": Mapping("RELATIVE_OF", False),
    "per:roommate": Mapping("ROOMMATE_OF", False),
    "per:alumni": Mapping("SCHOOLMATE_OF", False),
    "per:neighbor": Mapping("NEIGHBOR_OF", False),
    "per:acquaintance": Mapping("ACQUAINTANCE_OF", False),
    "per:visited_place": Mapping("VISITED", False),
    "gpe:visitors_of_place": Mapping("VISITED", True),
    "per:place_of_residence": Mapping("LIVES_IN", False),
    "gpe:residents_of_place": Mapping("LIVES_IN", True),
    "per:employee_or_member_of": Mapping("WORKS_FOR_OR_MEMBER_OF", False),
    "org:employees_or_members": Mapping("WORKS_FOR_OR_MEMBER_OF", True),
    "per:boss": Mapping("BOSS_OF", True),
    "per:subordinate": Mapping("BOSS_OF", False),
    "per:client": Mapping("HAS_CLIENT", False),
    "per:place_of_work": Mapping("WORKS_AT_PLACE", False),
    "per:works": Mapping("CREATED_WORK", False),
    "per:pet": Mapping("HAS_PET", False),
    "per:origin": Mapping("COMES_FROM", False),
    "per:schools_attended": Mapping("ATTENDED_SCHOOL", False),
    "org:students": Mapping("ATTENDED_SCHOOL", True),
    "per:major": Mapping("STUDIES", False),
    "per:place_of_birth": Mapping("BORN_IN", False),
    "gpe:births_in_place": Mapping("BORN_IN", True),
}
#: Dropped: "unanswerable" says nothing; age and date of birth are values, not entities.
DROPPED_RELATIONS: Final[frozenset[str]] = frozenset({"unanswerable", "per:age", "per:date_of_birth"})

_SYMMETRIC: Final[frozenset[str]] = frozenset(
    {
        "ALSO_KNOWN_AS",
        "DATING",
        "FRIEND_OF",
        "SPOUSE_OF",
        "SIBLING_OF",
        "RELATIVE_OF",
        "ROOMMATE_OF",
        "SCHOOLMATE_OF",
        "NEIGHBOR_OF",
        "ACQUAINTANCE_OF",
    }
)
EDGE_TYPES: Final[tuple[EdgeType, ...]] = edge_types(
    {
        "ALSO_KNOWN_AS": "both names refer to the same person",
        "DATING": "the two people are or were romantically involved",
        "LIKES": "the subject has a positive impression of the object",
        "DISLIKES": "the subject has a negative impression of the object",
        "FRIEND_OF": "the two people are friends",
        "HAS_TITLE": "the object is the subject's job title or role",
        "SPOUSE_OF": "the two people are or were married",
        "SIBLING_OF": "the two people are siblings",
        "PARENT_OF": "the subject is a parent of the object",
        "RELATIVE_OF": "the two people are otherwise related",
        "ROOMMATE_OF": "the two people share a home",
        "SCHOOLMATE_OF": "the two people went to the same school",
        "NEIGHBOR_OF": "the two people are neighbors",
        "ACQUAINTANCE_OF": "the two people know each other",
        "VISITED": "the subject visited the object (a place)",
        "LIVES_IN": "the subject lives or lived in the object (a place)",
        "WORKS_FOR_OR_MEMBER_OF": "the subject works for or belongs to the object (a group)",
        "BOSS_OF": "the subject is the boss of the object",
        "HAS_CLIENT": "the object is a client or customer of the subject",
        "WORKS_AT_PLACE": "the subject works at the object (a place)",
        "CREATED_WORK": "the object is a work the subject made or appears in",
        "HAS_PET": "the object is the subject's pet",
        "COMES_FROM": "the subject comes from the object (a place)",
        "ATTENDED_SCHOOL": "the subject attended the object (a school)",
        "STUDIES": "the object is the subject's field of study",
        "BORN_IN": "the subject was born in the object (a place)",
    },
    symmetric=_SYMMETRIC,
)
_FACT_TEMPLATES: Final[dict[str, str]] = {
    "ALSO_KNOWN_AS": "{s} is also called {t}",
    "DATING": "{s} and {t} are romantically involved",
    "LIKES": "{s} likes {t}",
    "DISLIKES": "{s} dislikes {t}",
    "FRIEND_OF": "{s} and {t} are friends",
    "HAS_TITLE": "{s} is a {t}",
    "SPOUSE_OF": "{s} and {t} are married",
    "SIBLING_OF": "{s} and {t} are siblings",
    "PARENT_OF": "{s} is a parent of {t}",
    "RELATIVE_OF": "{s} and {t} are related",
    "ROOMMATE_OF": "{s} and {t} are roommates",
    "SCHOOLMATE_OF": "{s} and {t} went to school together",
    "NEIGHBOR_OF": "{s} and {t} are neighbors",
    "ACQUAINTANCE_OF": "{s} and {t} know each other",
    "VISITED": "{s} visited {t}",
    "LIVES_IN": "{s} lives in {t}",
    "WORKS_FOR_OR_MEMBER_OF": "{s} works for or belongs to {t}",
    "BOSS_OF": "{s} is the boss of {t}",
    "HAS_CLIENT": "{t} is a client of {s}",
    "WORKS_AT_PLACE": "{s} works at {t}",
    "CREATED_WORK": "{t} is a work of {s}",
    "HAS_PET": "{t} is the pet of {s}",
    "COMES_FROM": "{s} comes from {t}",
    "ATTENDED_SCHOOL": "{s} attended {t}",
    "STUDIES": "{s} studies {t}",
    "BORN_IN": "{s} was born in {t}",
}
#: ALSO_KNOWN_AS ("Speaker 1" is "Joey") is a third of DialogRE's labels; cap its share.
ALIAS_MAX_SHARE: Final[float] = 0.25
_ENTITY_TYPES: Final[dict[str, str]] = {"PER": "Person", "ORG": "Organization", "GPE": "Location"}


def _is_name(*names: str) -> bool:
    """Both sides of an ALSO_KNOWN_AS edge look like names: capitalized, not a form of address."""
    return all(name[:1].isupper() and name.lower() not in FORMS_OF_ADDRESS for name in names)


def convert_dialogue(dialogue: list[Any], dialogue_key: str) -> LabeledEpisode | None:
    """One episode for a whole DialogRE dialogue ([turns, relations]), or None if it breaks a rule.

    Entities are every speaker who talks and every argument of a relation (including arguments of
    "unanswerable" pairs, which are distractors). An alternate name that is a form of address
    ("Sir", "man") gives no edge. An argument that does not occur in the text, a
    dialogue over MAX_EPISODE_WORDS words or MAX_ENTITIES entities, or one with no edge is skipped.
    """
    turns: list[str] = dialogue[0]
    relations: list[dict[str, Any]] = dialogue[1]
    content = "\n".join(turns)
    if word_count(content) > MAX_EPISODE_WORDS:
        return None
    entity_types: dict[str, str | None] = {}
    for turn in turns:
        speaker = turn.split(":", 1)[0].strip()
        if speaker.startswith("Speaker "):
            entity_types.setdefault(speaker, "Person")
    for relation in relations:
        for name, kind in ((relation["x"], relation["x_type"]), (relation["y"], relation["y_type"])):
            if name not in content:
                return None
            entity_types.setdefault(name, _ENTITY_TYPES.get(kind))
    if len(entity_types) > MAX_ENTITIES:
        return None

    edges: dict[tuple[str, str, str], GoldEdge] = {}
    for relation in relations:
        for label in relation["r"]:
            if label in DROPPED_RELATIONS:
                continue
            mapping = RELATION_MAP[label]
            source, target = relation["x"], relation["y"]
            if mapping.reverse:
                source, target = target, source
            if mapping.type_name in _SYMMETRIC:
                source, target = sorted((source, target))
            if source == target or (mapping.type_name == "ALSO_KNOWN_AS" and not _is_name(source, target)):
                continue
            key = (source, mapping.type_name, target)
            edges.setdefault(
                key,
                GoldEdge(
                    relationship_type=mapping.type_name,
                    source_entity_name=source,
                    target_entity_name=target,
                    fact=_FACT_TEMPLATES[mapping.type_name].format(s=source, t=target),
                    aliases=ALIASES.get(mapping.type_name, []),
                ),
            )
    if not edges:
        return None
    return LabeledEpisode(
        id=f"{SOURCE}-{dialogue_key}-0",
        source=SOURCE,
        license=LICENSE,
        exhaustive=False,
        episode_content=content,
        previous_episodes=[],
        entities=[Entity(name=name, type=kind) for name, kind in entity_types.items()],
        reference_time=FIXED_REFERENCE_TIME,
        edge_types=list(EDGE_TYPES),
        edges=[edges[key] for key in sorted(edges)],
    )


def build_dialogre_episodes(raw_dir: Path, count: int = 110) -> list[LabeledEpisode]:
    """`count` short dialogues drawn at random (fixed seed) from all DialogRE files.

    A dialogue whose edges would push ALSO_KNOWN_AS over ALIAS_MAX_SHARE of the edges is passed over.
    """
    candidates: list[LabeledEpisode] = []
    for name in RAW_FILES:
        with (raw_dir / "dialogre" / f"{name}.json").open(encoding="utf-8") as handle:
            for index, dialogue in enumerate(json.load(handle)):
                episode = convert_dialogue(dialogue, f"{name}{index:04d}")
                if episode is not None:
                    candidates.append(episode)
    rng = random.Random(SEED)
    rng.shuffle(candidates)
    chosen: list[LabeledEpisode] = []
    edges_total = alias_total = 0
    for episode in candidates:
        aliases = sum(1 for edge in episode.edges if edge.relationship_type == "ALSO_KNOWN_AS")
        if alias_total + aliases > ALIAS_MAX_SHARE * (edges_total + len(episode.edges)):
            continue
        chosen.append(episode)
        edges_total += len(episode.edges)
        alias_total += aliases
        if len(chosen) == count:
            break
    return sorted(chosen, key=lambda e: e.id)
