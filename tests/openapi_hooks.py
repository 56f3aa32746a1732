"""Schemathesis hooks for the OpenAPI fuzz test: the one rule of `Episode` that JSON Schema cannot state.

An edge type's `sourceTypes` / `targetTypes` must name entity types of the same episode (documented
on `EdgeType`). Generated bodies get that rule applied: each string in a signature that names no
entity type of the body is replaced by one that does. Anything else in the body is left as generated,
so a schema-violating value (a number, a missing field) still reaches the service as it was made.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from edgewise.signatures.types import ENTITY_LISTS

SIGNATURE_FIELDS = ("sourceTypes", "targetTypes")


def _entity_types(body: dict[str, Any]) -> list[str]:
    types: list[str] = []
    for name in ENTITY_LISTS:
        items = body.get(name)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("type"), str) and item["type"]:
                types.append(item["type"])
    return types


def _edge_type_objects(edge_types: Any) -> list[dict[str, Any]]:
    """The edge types given as objects, in the list form or as values of the seed's object form."""
    values = list(edge_types.values()) if isinstance(edge_types, dict) else edge_types
    return [value for value in values if isinstance(value, dict)] if isinstance(values, list) else []


def with_known_signature_types(body: Any) -> Any:
    """`body` with every signature entry naming an entity type the body's entities have."""
    if not isinstance(body, dict):
        return body
    known = _entity_types(body)
    if not known:
        return body  # untyped entities: signatures are not checked
    for edge_type in _edge_type_objects(body.get("edgeTypes")):
        for field in SIGNATURE_FIELDS:
            names = edge_type.get(field)
            if isinstance(names, list):
                edge_type[field] = [
                    known[index % len(known)]
                    if isinstance(name, str) and name and name not in known
                    else name
                    for index, name in enumerate(names)
                ]
    return body


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("episodes"), list):  # a batch: each item alone
        body["episodes"] = [with_known_signature_types(item) for item in body["episodes"]]
        return body
    return with_known_signature_types(body)
