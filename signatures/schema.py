"""Per-call JSON schemas: a constraint the decoder gets that the prompt and the parser do not see.

A reply schema that changes with each episode (its entity names, its number of candidates) would, if
shown in the prompt, change the prompt's first lines with each episode and defeat a server's prompt
cache; and a reply from a server that ignored it should still parse. `schema_only` returns a type
whose JSON schema is the given one and which names the plain type it stands for;
`edgewise.modules.vocabulary.display_signature` shows and parses that plain type instead.

DSPy builds the structured-output schema from each output field's bare annotation (pydantic keeps
`Annotated` metadata apart from it), so the schema has to live on a type, not in `Annotated`.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from pydantic import RootModel

DISPLAY_ATTRIBUTE: Final = "__edgewise_display__"


def schema_only(base: Any, schema: dict[str, Any]) -> type[RootModel[Any]]:
    """A type that validates as `base` and has `schema` as its JSON schema (for the decoder only)."""

    class PerCallReply(RootModel[base]):  # type: ignore[valid-type]
        @classmethod
        def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
            return copy.deepcopy(schema)

    setattr(PerCallReply, DISPLAY_ATTRIBUTE, base)
    return PerCallReply


def display_type(annotation: Any) -> Any | None:
    """The plain type a `schema_only` type stands for; None for any other annotation."""
    return getattr(annotation, DISPLAY_ATTRIBUTE, None)


NULLABLE_STRING: Final[dict[str, Any]] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
"""A reply property that is a string or null (a date the model may leave out)."""
MAX_FACT_CHARS: Final = 160
"""A fact is one short sentence; per-call schemas cap it, as a small model otherwise copies the whole
episode into it."""


def string_schema(values: list[str]) -> dict[str, Any]:
    """A string property: one of `values`, or any string when there are none (an open vocabulary)."""
    return {"type": "string", "enum": list(values)} if values else {"type": "string"}
