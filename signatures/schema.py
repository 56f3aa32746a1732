"""Per-call JSON schemas: a constraint the decoder gets that the prompt and the parser do not see.

A reply schema that changes with each episode (its entity names, its number of candidates) would, if
shown in the prompt, change the prompt's first lines with each episode and defeat a server's prompt
cache; and a reply from a server that ignored it should still parse. So the constraint is data, not
a type: the call's signature stays the predictor's own, whose plain types the prompt shows and the
parser reads, and `reply_schemas` names, for the model calls made inside it, the JSON schemas the
decoder gets instead of parts of the signature's. `edgewise.modules.vocabulary.VocabularyJSONAdapter`
writes them into each call's structured-output schema (`with_reply_schemas`); another adapter sends
the signature's own schema.

No class is made per call: a type per episode would cost a pydantic model, its validators and a
DSPy signature on every call (most of a call's CPU against a fast server), and it would live as long
as anything that holds the call's arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, Final

KEPT_SIGNATURES: Final = 64
"""How many entries a per-signature cache keeps (a signature variant, a structured-output schema):
a program's predictors and their variants (a re-extraction, each edge type's attributes) are a few;
an optimizer's candidates come and go."""

ReplySchemas = Mapping[tuple[str, ...], dict[str, Any]]
"""JSON schemas for parts of a reply, each at the path of property names that leads to it from the
reply object (an array's path goes on through its items), replacing the schema the signature's types
give there: `{("stated",): {...}}` is the whole `stated` field, `{("edges", "fact"): {...}}` the
`fact` of every `edges` item."""

_CURRENT: Final[ContextVar[ReplySchemas]] = ContextVar("edgewise_reply_schemas", default=MappingProxyType({}))


@contextmanager
def reply_schemas(schemas: ReplySchemas) -> Iterator[None]:
    """The model calls made inside the block send `schemas` to the decoder (added to an enclosing block's)."""
    token = _CURRENT.set(MappingProxyType({**_CURRENT.get(), **schemas}))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_reply_schemas() -> ReplySchemas:
    """The schemas of the innermost `reply_schemas` block around this call; empty outside one."""
    return _CURRENT.get()


def with_reply_schemas(schema: dict[str, Any], schemas: ReplySchemas) -> dict[str, Any]:
    """A copy of the reply's JSON `schema` with each of `schemas` at its path (`schema` is not changed).

    A path through a `$ref` changes the definition it names, in the copy. A path the schema does not
    have is a `ValueError`: a constraint that silently went nowhere would let the decoder write anything.
    """
    limited = copy.deepcopy(schema)
    for path, part in schemas.items():
        node = limited
        for depth, name in enumerate(path):
            properties = _properties(limited, node)
            if properties is None or name not in properties:
                raise ValueError(f"the reply schema has no property {'.'.join(path[: depth + 1])!r}")
            if depth == len(path) - 1:
                properties[name] = copy.deepcopy(part)
            else:
                node = properties[name]
    return limited


def _properties(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    """The properties of the object `node` describes, or of its items if it is an array; `$ref`s followed."""
    node = _resolved(root, node)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        node = _resolved(root, node["items"])
    properties = node.get("properties")
    return properties if isinstance(properties, dict) else None


def _resolved(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    reference = node.get("$ref")
    if not isinstance(reference, str) or not reference.startswith("#/"):
        return node
    target: Any = root
    for key in reference[2:].split("/"):
        target = target[key]
    return _resolved(root, target)


NULLABLE_STRING: Final[dict[str, Any]] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
"""A reply property that is a string or null (a date the model may leave out)."""
MAX_FACT_CHARS: Final = 160
"""A fact is one short sentence; per-call schemas cap it, as a small model otherwise copies the whole
episode into it."""


def string_schema(values: list[str]) -> dict[str, Any]:
    """A string property: one of `values`, or any string when there are none (an open vocabulary)."""
    return {"type": "string", "enum": list(values)} if values else {"type": "string"}
