"""Type signatures: which entity types a relationship type connects, and in which direction.

A relationship type may declare them (`sourceTypes` / `targetTypes` on an edge type, as Graphiti's
`edge_type_map` does); where an episode declares none, a compiled program carries the signatures its
labeled train split uses: every (source type, relationship type, target type) of a gold edge.

Half of a small model's right entity pairs come back with a wrong type or direction (WORKS_AT for
STUDIES_AT, a reversed PARENT_OF). `check_signatures` flips an edge whose reverse is allowed and its
own direction not, and drops one that no direction allows, or re-types it (`retype`): with `unique`,
the one vocabulary type that can connect its ends; with `ask`, the caller asks the model to choose
among them (`modules.retype`). Each change is a warning. An edge whose ends have no entity type, or
whose type no signature mentions, is left as it is; so, with `unseen_types_open`, is an edge whose
end has an entity type no learned signature uses (the user named it differently, or it is new):
the train split knows nothing against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from edgewise.domain.episode import Episode
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.names import to_screaming_snake
from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.options import Retype

STATE_KEY: Final = "type_signatures"
"""The key of the learned signatures in a compiled program's `program.json`."""

Triple = tuple[str, str, str]


class TypeSignatures(BaseModel):
    """Learned (source entity type, relationship type, target entity type) triples."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    triples: tuple[Triple, ...] = Field(default_factory=tuple)

    def allows(self, relationship_type: str) -> frozenset[tuple[str, str]] | None:
        """The (source type, target type) pairs `relationship_type` may connect; None: no signature."""
        pairs = frozenset(
            (source, target) for source, kind, target in self.triples if kind == relationship_type
        )
        return pairs or None

    def entity_types(self) -> frozenset[str]:
        """The entity types some learned signature uses, at either end."""
        return frozenset(name for source, _, target in self.triples for name in (source, target))

    def listing(self) -> list[str]:
        """One line per triple, as a manifest lists them: `Person -WORKS_AT-> Organization`."""
        return [f"{source} -{kind}-> {target}" for source, kind, target in self.triples]


def learn_type_signatures(episodes: Iterable[LabeledEpisode]) -> TypeSignatures:
    """Every (source type, relationship type, target type) that a gold edge of `episodes` uses."""
    found: set[Triple] = set()
    for episode in episodes:
        types = {entity.name: entity.type for entity in episode.entities}
        for edge in episode.edges:
            source, target = types.get(edge.source_entity_name), types.get(edge.target_entity_name)
            if source and target:
                found.add((source, edge.relationship_type, target))
    return TypeSignatures(triples=tuple(sorted(found)))


class PairRule:
    """What an episode allows for one relationship type: declared types first, then learned ones."""

    def __init__(
        self, episode: Episode, signatures: TypeSignatures | None, *, unseen_types_open: bool = False
    ) -> None:
        # Keyed by the type's one spelling: a reply's types are SCREAMING_SNAKE_CASE by the time they
        # are checked, whatever spelling the episode declared them in (worksAt, WORKS_AT).
        self._declared: dict[str, tuple[frozenset[str] | None, frozenset[str] | None]] = {
            to_screaming_snake(edge_type.name): (
                frozenset(edge_type.source_types) if edge_type.source_types is not None else None,
                frozenset(edge_type.target_types) if edge_type.target_types is not None else None,
            )
            for edge_type in episode.edge_types
            if edge_type.source_types is not None or edge_type.target_types is not None
        }
        self._learned = signatures
        self._known = signatures.entity_types() if signatures is not None and unseen_types_open else None
        self.symmetric = frozenset(to_screaming_snake(t.name) for t in episode.edge_types if t.symmetric)

    def constrained(self, relationship_type: str) -> bool:
        return to_screaming_snake(relationship_type) in self._declared or (
            self._learned is not None and self._learned.allows(relationship_type) is not None
        )

    def allowed(self, relationship_type: str, source_type: str | None, target_type: str | None) -> bool:
        """Whether the type may go from an entity of `source_type` to one of `target_type`.

        Untyped ends and unconstrained types are always allowed: nothing is known against them; so are
        ends whose types no learned signature uses, when the rule was made with `unseen_types_open`.
        A symmetric type may go either way.
        """
        if source_type is None or target_type is None or not self.constrained(relationship_type):
            return True
        relationship_type = to_screaming_snake(relationship_type)
        if (
            self._known is not None
            and relationship_type not in self._declared
            and not {source_type, target_type} <= self._known
        ):
            return True
        return self._one_way(relationship_type, source_type, target_type) or (
            relationship_type in self.symmetric and self._one_way(relationship_type, target_type, source_type)
        )

    def _one_way(self, relationship_type: str, source_type: str, target_type: str) -> bool:
        if relationship_type in self._declared:
            sources, targets = self._declared[relationship_type]
            return (sources is None or source_type in sources) and (targets is None or target_type in targets)
        assert self._learned is not None
        return (source_type, target_type) in (self._learned.allows(relationship_type) or frozenset())

    def types_between(
        self, source_type: str | None, target_type: str | None, names: Sequence[str]
    ) -> list[str]:
        """Of `names`, the relationship types allowed from `source_type` to `target_type`."""
        return [name for name in names if self.allowed(name, source_type, target_type)]


class Conflict(NamedTuple):
    """An edge whose type cannot connect its ends, and the vocabulary types that can.

    `options` pairs each such type with whether the edge must be flipped to fit it.
    """

    edge: Edge
    options: tuple[tuple[str, bool], ...]


def retype_options(
    edge: Edge, source_type: str | None, target_type: str | None, rule: PairRule, vocabulary: Sequence[str]
) -> tuple[tuple[str, bool], ...]:
    """The other vocabulary types that connect the edge's ends, as written or flipped (as written first)."""
    options: list[tuple[str, bool]] = []
    for name in vocabulary:
        if name == edge.relationship_type:
            continue
        if rule.allowed(name, source_type, target_type):
            options.append((name, False))
        elif rule.allowed(name, target_type, source_type):
            options.append((name, True))
    return tuple(options)


def retyped(edge: Edge, kind: str, flip: bool, why: str, context: CallContext) -> Edge:
    """`edge` with the relationship type `kind` (its ends swapped with `flip`), with a `retyped` warning."""
    context.warn(
        ExtractionWarning(
            code="retyped",
            message=f"{edge.relationship_type} cannot connect its ends: {why} {kind}"
            + (" (source and target swapped)" if flip else ""),
            edge=edge.to_json_dict(),
        )
    )
    update: dict[str, str] = {"relationship_type": kind}
    if flip:
        update |= {
            "source_entity_name": edge.target_entity_name,
            "target_entity_name": edge.source_entity_name,
        }
    return edge.model_copy(update=update)


def check_signatures(
    edges: list[Edge],
    episode: Episode,
    signatures: TypeSignatures | None,
    context: CallContext,
    *,
    unseen_types_open: bool = False,
    retype: Retype = "off",
    conflicts: list[Conflict] | None = None,
) -> list[Edge]:
    """Flip reversed edges and drop (or re-type) impossible ones under the episode's or the learned
    signatures.

    With `retype="ask"`, an impossible edge that some other type of the episode's vocabulary fits is
    appended to `conflicts` (which must be given) instead of being dropped: the caller decides.
    """
    if retype == "ask" and conflicts is None:
        raise ValueError("retype='ask' needs a list to collect the conflicts in")
    rule = PairRule(episode, signatures, unseen_types_open=unseen_types_open)
    types = {entity.name: entity.type for entity in episode.entities}
    vocabulary = [edge_type.name for edge_type in episode.edge_types]
    kept: list[Edge] = []
    for edge in edges:
        source, target = types.get(edge.source_entity_name), types.get(edge.target_entity_name)
        kind = edge.relationship_type
        if rule.allowed(kind, source, target):
            kept.append(edge)
            continue
        if rule.allowed(kind, target, source):
            context.warn(
                ExtractionWarning(
                    code="direction_flipped",
                    message=f"{kind} goes from {target} to {source}: source and target swapped",
                    edge=edge.to_json_dict(),
                )
            )
            kept.append(
                edge.model_copy(
                    update={
                        "source_entity_name": edge.target_entity_name,
                        "target_entity_name": edge.source_entity_name,
                    }
                )
            )
            continue
        options = retype_options(edge, source, target, rule, vocabulary) if retype != "off" else ()
        if retype == "unique" and len(options) == 1:
            ((other, flip),) = options
            kept.append(retyped(edge, other, flip, f"{other} is the one type that can, so it is", context))
        elif retype == "ask" and options:
            assert conflicts is not None
            conflicts.append(Conflict(edge, options))
        else:
            context.warn(
                ExtractionWarning(
                    code="type_signature",
                    message=f"dropped: {kind} does not connect {source} and {target}"
                    + (f" ({len(options)} other types could)" if len(options) > 1 else ""),
                    edge=edge.to_json_dict(),
                )
            )
    return kept
