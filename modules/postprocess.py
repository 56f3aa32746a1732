"""Post-processing: the deterministic cleanup between a model's raw edges and the graph.

Every rule here is a pure function of (raw edges, episode); each edge it drops or changes produces an
`ExtractionWarning`, so nothing disappears silently. Both the compiled program and the seed baseline
go through the same `postprocess`, so benchmarks compare prompts, not cleanup. Names are always
closed (only the episode's entities); types are closed on request (`closed_types`), here and not
only in a decoding grammar, because a hosted model is never sent one and a server may ignore it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from edgewise.domain.episode import Episode
from edgewise.domain.names import normalize_name as name_key
from edgewise.domain.names import to_screaming_snake
from edgewise.domain.types import AttributeValue, Edge, ExtractionWarning, format_utc
from edgewise.modules.call_context import CallContext
from edgewise.modules.options import Retype
from edgewise.modules.time_words import resolve_time_words
from edgewise.modules.type_signatures import Conflict, TypeSignatures, check_signatures
from edgewise.signatures.replies import ExtractedEdge

MAX_ATTRIBUTE_CHARS: Final = 500
_NULL_DATE_STRINGS: Final = frozenset({"", "null", "none", "n/a", "unknown"})
_YEAR: Final = re.compile(r"^\s*(\d{4})\s*$")
_YEAR_MONTH: Final = re.compile(r"^\s*(\d{4})-(\d{1,2})\s*$")
_DATE: Final = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})\s*$")


class EntityIndex:
    """Resolves a model's spelling of a name to exactly one entity of the episode, or to nothing."""

    def __init__(self, names: list[str]) -> None:
        self._exact = set(names)
        by_key: dict[str, list[str]] = {}
        for name in names:
            by_key.setdefault(name_key(name), []).append(name)
        self._by_key = by_key

    def resolve(self, name: str) -> str | None:
        if name in self._exact:
            return name
        candidates = self._by_key.get(name_key(name), [])
        return candidates[0] if len(candidates) == 1 else None


def parse_date(
    value: str | None, reference_time: datetime | None = None, *, end: bool = False
) -> tuple[datetime | None, str | None]:
    """Parse a model's date into UTC; returns (date, problem) where problem explains a null.

    Date-only means 00:00:00 and year-only means January 1st, as the seed's datetime rules say;
    a naive time is taken as UTC; "YYYY-MM" means the first of that month. Anything else is read as
    the text's time words ("in 1964", "last May") relative to `reference_time` (see `time_words`);
    of a range ("from 1814 to 1819") the start, or with `end` (invalidAt) the end.
    """
    if value is None or value.strip().casefold() in _NULL_DATE_STRINGS:
        return None, None
    text = value.strip()
    try:
        if match := _YEAR.match(text):
            return datetime(int(match[1]), 1, 1, tzinfo=UTC), None
        if match := _YEAR_MONTH.match(text):
            return datetime(int(match[1]), int(match[2]), 1, tzinfo=UTC), None
        if match := _DATE.match(text):
            return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC), None
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        resolved = resolve_time_words(text, reference_time, end=end) if reference_time is not None else None
        return (resolved, None) if resolved is not None else (None, f"unparseable date {value!r}")
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC), None
    try:
        return parsed.astimezone(UTC), None
    except OverflowError:  # 0001-01-01T00:00:00+13:59 is in year 0 in UTC
        return None, f"date {value!r} is outside the years 1-9999 in UTC"


def _warn(code: str, message: str, raw: ExtractedEdge) -> ExtractionWarning:
    return ExtractionWarning(code=code, message=message, edge=raw.model_dump())


def _clean_one(
    raw: ExtractedEdge,
    index: EntityIndex,
    allowed_types: frozenset[str] | None,
    context: CallContext,
    reference_time: datetime | None = None,
) -> Edge | None:
    """Apply the per-edge rules; None means the edge was dropped (with a warning said why).

    `allowed_types` (SCREAMING_SNAKE_CASE) closes the type vocabulary; None leaves it open.
    """
    source = index.resolve(raw.sourceEntityName)
    target = index.resolve(raw.targetEntityName)
    for given, resolved in ((raw.sourceEntityName, source), (raw.targetEntityName, target)):
        if resolved is None:
            context.warn(_warn("unknown_entity", f"dropped: {given!r} is not one of the ENTITIES", raw))
            return None
        if resolved != given:
            context.warn(_warn("name_resolved", f"{given!r} resolved to entity {resolved!r}", raw))
    if source == target:
        context.warn(_warn("self_edge", f"dropped: both ends are {source!r}", raw))
        return None
    if not raw.fact.strip():
        context.warn(_warn("empty_fact", "dropped: the fact is empty", raw))
        return None
    relationship_type = to_screaming_snake(raw.relationshipType)
    if not relationship_type:
        context.warn(_warn("empty_type", f"dropped: no usable type in {raw.relationshipType!r}", raw))
        return None
    if allowed_types is not None and relationship_type not in allowed_types:
        context.warn(
            _warn(
                "unknown_type", f"dropped: {raw.relationshipType!r} is not one of the RELATIONSHIP TYPES", raw
            )
        )
        return None
    if relationship_type != raw.relationshipType:
        context.warn(
            _warn("type_renamed", f"type {raw.relationshipType!r} written as {relationship_type!r}", raw)
        )
    dates: dict[str, datetime | None] = {}
    for field, value in (("validAt", raw.validAt), ("invalidAt", raw.invalidAt)):
        parsed, problem = parse_date(value, reference_time, end=field == "invalidAt")
        if problem:
            context.warn(_warn("bad_date", f"{field} set to null: {problem}", raw))
        elif parsed is not None and format_utc(parsed) != value:
            context.warn(_warn("date_normalized", f"{field} {value!r} written as {format_utc(parsed)}", raw))
        dates[field] = parsed
    return Edge(
        relationship_type=relationship_type,
        source_entity_name=source,
        target_entity_name=target,
        fact=raw.fact.strip(),
        valid_at=dates["validAt"],
        invalid_at=dates["invalidAt"],
    )


def _order_dates(edge: Edge, reference_time: datetime, context: CallContext) -> Edge:
    """Fix invalidAt < validAt: drop a defaulted validAt, otherwise swap the two.

    A validAt equal to REFERENCE_TIME is the seed's default for an ongoing fact; an earlier invalidAt
    says the fact already ended, so the default was wrong and is dropped. Any other pair was most
    likely written into the wrong fields, so it is swapped.
    """
    if edge.valid_at is None or edge.invalid_at is None or edge.invalid_at >= edge.valid_at:
        return edge
    if edge.valid_at == reference_time:
        context.note(
            "valid_at_dropped",
            "invalidAt is before validAt (= REFERENCE_TIME, the ongoing default): validAt set to null",
            edge,
        )
        return edge.model_copy(update={"valid_at": None})
    context.note("dates_swapped", "invalidAt was before validAt: the two dates were swapped", edge)
    return edge.model_copy(update={"valid_at": edge.invalid_at, "invalid_at": edge.valid_at})


def edge_key(edge: Edge, symmetric_types: frozenset[str]) -> tuple[str, str, str]:
    """Identity of an edge for deduplication: symmetric types ignore direction."""
    ends = (edge.source_entity_name, edge.target_entity_name)
    if edge.relationship_type in symmetric_types:
        ends = tuple(sorted(ends))
    return (ends[0], ends[1], edge.relationship_type)


def _dedupe(edges: list[Edge], symmetric_types: frozenset[str], context: CallContext) -> list[Edge]:
    """Keep the first edge of each (source, target, type); a later copy may only fill its null dates."""
    kept: dict[tuple[str, str, str], Edge] = {}
    for edge in edges:
        key = edge_key(edge, symmetric_types)
        first = kept.get(key)
        if first is None:
            kept[key] = edge
            continue
        fill = {
            name: getattr(edge, name)
            for name in ("valid_at", "invalid_at")
            if getattr(first, name) is None and getattr(edge, name) is not None
        }
        if fill:
            kept[key] = first.model_copy(update=fill)
        context.note(
            "duplicate",
            f"dropped: duplicate of {key[0]} -{key[2]}-> {key[1]}"
            + (f" (its {', '.join(fill)} kept)" if fill else ""),
            edge,
        )
    return list(kept.values())


def dedupe_edges(edges: list[Edge], episode: Episode, context: CallContext) -> list[Edge]:
    """Merge duplicates of the same (source, target, type) under the episode's symmetric types."""
    return _dedupe(edges, frozenset(t.name for t in episode.edge_types if t.symmetric), context)


def allowed_types(episode: Episode, *, closed_types: bool) -> frozenset[str] | None:
    """The relationship types an edge may have: the episode's edgeTypes when closed and listed, else any.

    Compared in SCREAMING_SNAKE_CASE, so a model's "works at" still matches a listed WORKS_AT.
    """
    if not closed_types or not episode.edge_types:
        return None
    return frozenset(to_screaming_snake(edge_type.name) for edge_type in episode.edge_types)


def postprocess(
    raw_edges: list[ExtractedEdge],
    episode: Episode,
    *,
    closed_types: bool = False,
    type_signatures: TypeSignatures | None = None,
    unseen_types_open: bool = False,
    retype: Retype = "off",
    conflicts: list[Conflict] | None = None,
) -> tuple[list[Edge], list[ExtractionWarning]]:
    """Turn a model's raw edges into clean edges between the episode's entities, with warnings.

    With `closed_types` an edge whose type is not one of the episode's edgeTypes (when it lists
    any) is dropped with an `unknown_type` warning, as an edge to an unknown entity is. The default
    leaves types open, as the seed prompt does (its baselines run verbatim); `EdgeExtractor` passes
    its own `closed_types`, which is on unless `--open-types`.

    Relationship types that declare `sourceTypes` / `targetTypes` are checked against the entity types
    of their ends, and so are those `type_signatures` (learned by a compiled program) lists: a reversed
    edge is flipped, an impossible one dropped or re-typed (`type_signatures.check_signatures`, which
    also says what `unseen_types_open`, `retype` and `conflicts` do).
    """
    context = CallContext()
    index = EntityIndex([entity.name for entity in episode.entities])
    types = allowed_types(episode, closed_types=closed_types)
    cleaned = [
        edge
        for raw in raw_edges
        if (edge := _clean_one(raw, index, types, context, episode.reference_time)) is not None
    ]
    ordered = [_order_dates(edge, episode.reference_time, context) for edge in cleaned]
    checked = check_signatures(
        ordered,
        episode,
        type_signatures,
        context,
        unseen_types_open=unseen_types_open,
        retype=retype,
        conflicts=conflicts,
    )
    return dedupe_edges(checked, episode, context), context.warnings


def cap_attributes(
    values: dict[str, AttributeValue], edge: Edge, context: CallContext
) -> dict[str, AttributeValue]:
    """Cut attribute strings at MAX_ATTRIBUTE_CHARS and drop nulls (null = not stated)."""
    capped: dict[str, AttributeValue] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, str) and len(value) > MAX_ATTRIBUTE_CHARS:
            context.note(
                "attribute_truncated", f"attribute {name!r} cut to {MAX_ATTRIBUTE_CHARS} characters", edge
            )
            value = value[:MAX_ATTRIBUTE_CHARS]
        capped[name] = value
    return capped
