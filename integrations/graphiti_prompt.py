"""Reading Graphiti's edge-extraction prompt back into an edgewise `Episode`.

Graphiti (graphiti-core) renders `prompt_library.extract_edges.edge(context)` and sends the messages
to its `LLMClient`; the context itself is not passed along. Every input edgewise needs is in the
rendered user message, in tagged sections written by a fixed template: the previous messages and
the entities as JSON, the current message, the reference time, the fact types with their
descriptions and signatures as JSON, and the custom instructions between two fixed sentences.
`read_edge_prompt` takes them out; when any of them cannot be read (Graphiti changed its template),
it raises `UnreadablePrompt` saying why, and the caller hands the call to the wrapped client instead
of guessing.

Strict mode (`add_episode(strict_edge_types=True)`) is not in the context either, only in the text:
with fact types, Graphiti's RELATION TYPE RULES section says either "Use one of the provided
fact_type_name values as the relation_type." (strict: skip what fits no fact type) or "derive a
`relation_type`" (open: the model may name new types). A rules section that says neither is
unreadable, since guessing open would let through types the caller excluded.

The timestamp prompts are read too: the single one's FACT (`read_fact`) and the batch one's FACTS,
a JSON list of `{fact, reference_time}` (`read_batch_facts`); `with_batch_facts` writes a subset of
them back into the same messages, for the wrapped client to answer only those.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel

from edgewise.domain.episode import Episode
from edgewise.domain.errors import EdgewiseError
from edgewise.domain.types import AttributeKind, EdgeAttribute, EdgeType, Entity
from edgewise.programs.graphiti_baseline import GENERIC_LABEL

_CUSTOM_START: Final = "support continuity.\n\n\n"
_CUSTOM_END: Final = "\n\n# EXTRACTION RULES"
_REFERENCE_COMMENT: Final = "  # ISO 8601"
_RULES_START: Final = "# RELATION TYPE RULES"
_RULES_END: Final = "# TASK"
_STRICT_RULE: Final = "Use one of the provided fact_type_name values as the relation_type."
_OPEN_RULE: Final = "derive a `relation_type`"
_FACTS_SECTION: Final = re.compile(r"(<FACTS>\n)(.*?)(\n</FACTS>)", re.DOTALL)
_ATTRIBUTE_KINDS: Final[dict[type, AttributeKind]] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
}


class EdgePrompt(NamedTuple):
    """What the prompt says: the episode, and whether Graphiti allows only its fact types."""

    episode: Episode
    strict_types: bool


class UnreadablePrompt(EdgewiseError, ValueError):
    """The rendered prompt does not have the shape this reader knows."""


def _section(text: str, tag: str, *, required: bool = True) -> str | None:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    if match is None:
        if required:
            raise UnreadablePrompt(f"no <{tag}> section")
        return None
    return match.group(1)


def _json_section(text: str, tag: str, *, required: bool = True) -> Any:
    raw = _section(text, tag, required=required)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as error:
        raise UnreadablePrompt(f"<{tag}> is not JSON ({error})") from None


def _entity(node: Any) -> Entity:
    if not isinstance(node, dict) or not isinstance(node.get("name"), str):
        raise UnreadablePrompt("an ENTITIES item has no name")
    labels = [label for label in node.get("entity_types") or [] if label != GENERIC_LABEL]
    return Entity(name=node["name"], type=labels[0] if labels else None)


def _edge_type(fact_type: Any, known_types: set[str]) -> EdgeType | None:
    """A Graphiti fact type as an edgewise edge type; None when its signatures fit no entity here.

    Graphiti's signatures are (source label, target label) pairs, "Entity" meaning any. edgewise
    keeps the source and target labels that the episode's entities have; a fact type none of whose
    signatures can connect two entities of this episode cannot apply to it.
    """
    if not isinstance(fact_type, dict) or not isinstance(fact_type.get("fact_type_name"), str):
        raise UnreadablePrompt("a FACT_TYPES item has no fact_type_name")
    sources: set[str] = set()
    targets: set[str] = set()
    any_source = any_target = False
    for pair in fact_type.get("fact_type_signatures") or [[GENERIC_LABEL, GENERIC_LABEL]]:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise UnreadablePrompt("a fact_type_signatures item is not a (source, target) pair")
        source, target = pair
        if (source == GENERIC_LABEL or source in known_types) and (
            target == GENERIC_LABEL or target in known_types
        ):
            any_source |= source == GENERIC_LABEL
            any_target |= target == GENERIC_LABEL
            sources.add(source)
            targets.add(target)
    if not sources:
        return None
    return EdgeType(
        name=fact_type["fact_type_name"],
        description=fact_type.get("fact_type_description") or "",
        source_types=None if any_source or not known_types else sorted(sources),
        target_types=None if any_target or not known_types else sorted(targets),
    )


def read_edge_prompt(messages: list[Any]) -> EdgePrompt:
    """The episode Graphiti's rendered edge prompt describes; raises `UnreadablePrompt` if it cannot."""
    if len(messages) < 2:
        raise UnreadablePrompt("expected a system and a user message")
    text = str(getattr(messages[-1], "content", ""))
    previous = _json_section(text, "PREVIOUS_MESSAGES")
    content = _section(text, "CURRENT_MESSAGE")
    nodes = _json_section(text, "ENTITIES")
    reference = _section(text, "REFERENCE_TIME")
    fact_types = _json_section(text, "FACT_TYPES", required=False) or []
    if not isinstance(previous, list) or not isinstance(nodes, list) or not isinstance(fact_types, list):
        raise UnreadablePrompt("PREVIOUS_MESSAGES, ENTITIES and FACT_TYPES must be JSON lists")
    try:
        reference_time = datetime.fromisoformat(str(reference).split(_REFERENCE_COMMENT)[0].strip())
    except ValueError:
        raise UnreadablePrompt(f"REFERENCE_TIME {reference!r} is not an ISO 8601 time") from None
    start, end = text.find(_CUSTOM_START), text.find(_CUSTOM_END)
    if start < 0 or end < start:
        raise UnreadablePrompt("the custom instructions are not between the expected sentences")
    custom = text[start + len(_CUSTOM_START) : end].strip()
    entities = [_entity(node) for node in nodes]
    known = {entity.type for entity in entities if entity.type}
    edge_types = [kind for item in fact_types if (kind := _edge_type(item, known)) is not None]
    previous_texts = [
        str(item.get("content", "")) if isinstance(item, dict) else str(item) for item in previous
    ]
    episode = Episode(
        episode_content=str(content),
        previous_episodes=previous_texts,
        entities=entities,
        reference_time=reference_time,
        edge_types=edge_types,
        custom_prompt=custom,
    )
    return EdgePrompt(episode, strict_types=bool(fact_types) and _strict_rules(text))


def _strict_rules(text: str) -> bool:
    """Whether the RELATION TYPE RULES section (present when there are fact types) is Graphiti's strict one.

    Read from that section only, so that custom instructions quoting either rule change nothing.
    """
    start = text.find(_RULES_START)
    end = text.find(_RULES_END, start)
    if start < 0 or end < 0:
        raise UnreadablePrompt("FACT_TYPES are given but there is no RELATION TYPE RULES section")
    rules = text[start:end]
    if _STRICT_RULE in rules:
        return True
    if _OPEN_RULE in rules:
        return False
    raise UnreadablePrompt("the RELATION TYPE RULES are neither Graphiti's strict nor its open ones")


def read_fact(messages: list[Any]) -> str | None:
    """The fact of Graphiti's `extract_timestamps` prompt; None if it has no FACT section."""
    text = str(getattr(messages[-1], "content", "")) if messages else ""
    return _section(text, "FACT", required=False)


def read_batch_facts(messages: list[Any]) -> list[dict[str, Any]] | None:
    """The facts of Graphiti's `extract_timestamps_batch` prompt, in order; None if they cannot be read.

    Each is `{"fact": ..., "reference_time": ...}` as Graphiti wrote it.
    """
    text = str(getattr(messages[-1], "content", "")) if messages else ""
    try:
        facts = _json_section(text, "FACTS", required=False)
    except UnreadablePrompt:
        return None
    if not isinstance(facts, list) or not all(
        isinstance(item, dict) and isinstance(item.get("fact"), str) for item in facts
    ):
        return None
    return facts


def with_batch_facts(messages: list[Any], facts: list[dict[str, Any]]) -> list[Any]:
    """Copies of the batch timestamp prompt's messages whose FACTS are `facts` (the rest unchanged).

    The caller's own template (a prompt override, Graphiti's appended notes) is kept: only the JSON
    between the tags changes, written as Graphiti writes it (`to_prompt_json`).
    """
    from graphiti_core.prompts.prompt_helpers import to_prompt_json

    last = messages[-1]
    content = _FACTS_SECTION.sub(
        lambda match: match.group(1) + to_prompt_json(facts) + match.group(3),
        str(last.content),
        count=1,
    )
    return [message.model_copy() for message in messages[:-1]] + [
        last.model_copy(update={"content": content})
    ]


def read_attribute_prompt(messages: list[Any]) -> tuple[str | None, dict[str, Any]]:
    """The fact of Graphiti's `extract_attributes` prompt and its EXISTING ATTRIBUTES (empty if none)."""
    text = str(getattr(messages[-1], "content", "")) if messages else ""
    existing = _json_section(text, "EXISTING ATTRIBUTES", required=False)
    return _section(text, "FACT", required=False), existing if isinstance(existing, dict) else {}


def graphiti_attributes(edge_types: Mapping[str, type[BaseModel]]) -> dict[str, list[EdgeAttribute]]:
    """The attributes of Graphiti's edge type models (its `add_episode(edge_types=...)`), by type name.

    Each field of a plain kind (`str`, `int`, `float`, `bool`, optional or not) is an attribute with
    its description; a field of another type (a date, a list) has no edgewise kind and is left out,
    so an attribute call that asks for it is not one edgewise can answer.
    """
    return {
        name: [
            EdgeAttribute(name=field_name, kind=kind, description=field.description or "")
            for field_name, field in model.model_fields.items()
            if (kind := _attribute_kind(field.annotation)) is not None
        ]
        for name, model in edge_types.items()
    }


def _attribute_kind(annotation: Any) -> AttributeKind | None:
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [argument for argument in get_args(annotation) if argument is not type(None)]
        annotation = kinds[0] if len(kinds) == 1 else None
    return _ATTRIBUTE_KINDS.get(annotation) if isinstance(annotation, type) else None
