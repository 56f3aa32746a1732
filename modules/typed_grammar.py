"""Typed decoding: the reply grammar offers each entity pair only the relationship types it may have.

Type signatures checked after the reply drop an edge whose type cannot connect its entity types, and
a small model writes such edges often: on the 1.5B, most of them join the right two entities under
its favourite type (WORKS_AT from a person to a school, a city or a sibling). Re-typing them afterwards
asks a second question or guesses. Here the question is never wrong to begin with: each edge of the
reply is one branch per ordered entity pair, written pair first (`sourceEntityName`, then
`targetEntityName`), and its `relationshipType` is limited to the types `PairRule` allows between
those two entity types. The decoder then picks the model's most likely type among those that fit,
and a pair no type fits cannot be written.

Branches grow with the square of the entities; past `MAX_PAIR_BRANCHES` the reply has one branch
per relationship type instead (type first, then the subjects and objects some pair allows it), which
is looser but stays small. Where nothing is known against any pair (no signatures, untyped entities,
an open vocabulary) the episode's plain vocabulary schema is used unchanged.
"""

from __future__ import annotations

import copy
from typing import Any, Final

import dspy

from edgewise.domain.episode import Episode
from edgewise.modules.type_signatures import PairRule
from edgewise.modules.vocabulary import EDGES_FIELD, reply_item_schema
from edgewise.signatures.schema import ReplySchemas, with_reply_schemas

MAX_PAIR_BRANCHES: Final = 64
"""Ordered entity pairs one reply grammar enumerates at most (eight or nine entities)."""


Pair = tuple[str, str]


def pair_types(episode: Episode, rule: PairRule, type_names: list[str]) -> dict[Pair, list[str]]:
    """Every ordered pair of distinct entities -> the types of `type_names` that may connect it."""
    types = {entity.name: entity.type for entity in episode.entities}
    return {
        (source, target): [kind for kind in type_names if rule.allowed(kind, types[source], types[target])]
        for source in types
        for target in types
        if source != target
    }


def typed_branches(
    edge: dict[str, Any], keys: tuple[str, str, str], pairs: dict[Pair, list[str]], type_names: list[str]
) -> list[dict[str, Any]] | None:
    """The `anyOf` branches of an edge item that writes only `pairs`' types (pairs with none left out):
    one per pair, or past `MAX_PAIR_BRANCHES` one per type; None when no pair has a type.

    `edge` is the item's schema, whose other properties each branch keeps; `keys` its (source, target,
    type) property names.
    """
    kept = {pair: kinds for pair, kinds in pairs.items() if kinds}
    if not kept:
        return None
    if len(kept) <= MAX_PAIR_BRANCHES:
        return [_branch(edge, keys, [source], [target], kinds) for (source, target), kinds in kept.items()]
    branches = []
    for kind in type_names:
        ends = [pair for pair, kinds in kept.items() if kind in kinds]
        if ends:
            sources = list(dict.fromkeys(source for source, _ in ends))
            targets = list(dict.fromkeys(target for _, target in ends))
            branches.append(_branch(edge, keys, sources, targets, [kind], type_first=True))
    return branches


def typed_reply_schemas(
    signature: type[dspy.Signature],
    vocabulary: ReplySchemas,
    episode: Episode,
    rule: PairRule,
    type_names: list[str],
    keys: tuple[str, str, str],
) -> ReplySchemas:
    """`vocabulary` with the `edges` items replaced by typed branches (see the module docstring).

    `keys` are the reply item's (source, target, type) property names; `type_names` the closed
    vocabulary (empty: open types, where nothing can be enumerated and `vocabulary` is returned).
    """
    if not type_names:
        return vocabulary
    pairs = pair_types(episode, rule, type_names)
    if all(len(kinds) == len(type_names) for kinds in pairs.values()):
        return vocabulary
    (item,) = signature.output_fields[EDGES_FIELD].annotation.__args__
    edge = with_reply_schemas(
        reply_item_schema(item),
        {path[1:]: part for path, part in vocabulary.items() if path[0] == EDGES_FIELD and len(path) > 1},
    )
    branches = typed_branches(edge, keys, pairs, type_names)
    return {
        **{path: part for path, part in vocabulary.items() if path[0] != EDGES_FIELD},
        (EDGES_FIELD,): {"type": "array", "items": {"anyOf": branches}}
        if branches
        else {"type": "array", "maxItems": 0},
    }


def _branch(
    edge: dict[str, Any],
    keys: tuple[str, str, str],
    sources: list[str],
    targets: list[str],
    kinds: list[str],
    *,
    type_first: bool = False,
) -> dict[str, Any]:
    """The edge's schema with these ends and types, its name properties first in writing order."""
    source, target, kind = keys
    named = {source: _one_of(sources), target: _one_of(targets), kind: _one_of(kinds)}
    order = (kind, source, target) if type_first else (source, target, kind)
    properties = {name: named[name] for name in order} | {
        name: copy.deepcopy(schema)
        for name, schema in edge.get("properties", {}).items()
        if name not in named
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _one_of(values: list[str]) -> dict[str, Any]:
    """A string among `values`; an `enum` even for one value, which every structured-output API takes
    (some reject `const`) and a grammar compiles to the same literal."""
    return {"type": "string", "enum": values}
