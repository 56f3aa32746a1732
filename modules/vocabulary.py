"""The episode's vocabulary in the output type: only its entity names and relationship types.

The seed's rule 1 (both ends must be ENTITIES) and its type list are prompt text a small model may
ignore. `vocabulary_signature` turns them into the reply type itself: a per-episode reply model whose
name fields carry the episode's names (and, with closed types, its types) as their schema's `enum`. DSPy's JSON
adapter sends that type as the JSON schema of `response_format`, so every provider that takes a
schema gets the `enum`s, and self-hosted servers (llama.cpp, vLLM) compile them into the decoding
grammar: the decoder cannot write another name.

`VocabularyJSONAdapter` keeps two things as they would be without it. The prompt describes the
reply with the base type (no names in the schema text), because a prompt whose first lines change
with each episode would defeat the server's prompt cache: the instructions and demos are a shared
prefix computed once. And replies are parsed with the base type, so that a model that ignored the
enum loses only the offending edge, in post-processing (`unknown_entity`, `unknown_type`), not the
whole reply (the type's validation takes any string, for any adapter).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final

import dspy
from pydantic import BaseModel, Field, WithJsonSchema, create_model

from edgewise.modules.transcript import note_completion, note_messages
from edgewise.signatures.schema import display_type

EDGES_FIELD: Final = "edges"
_BASE_ATTRIBUTE: Final = "__edgewise_base__"


def vocabulary_model(base: type[BaseModel], allowed: dict[str, Sequence[str | int]]) -> type[BaseModel]:
    """`base` whose named fields have their allowed values as a JSON-schema `enum` (empty: free).

    The `enum` is in the schema only: validation still takes any string, so that a reply from a
    server that ignored the schema parses, and post-processing drops just the off-list edge.
    """
    fields: dict[str, Any] = {}
    for name, values in allowed.items():
        unique = list(dict.fromkeys(value for value in values if value))
        if unique and name in base.model_fields:
            info = base.model_fields[name]
            schema = {
                "type": "integer" if all(isinstance(value, int) for value in unique) else "string",
                "enum": unique,
                **({"description": info.description} if info.description else {}),
            }
            fields[name] = (
                Annotated[info.annotation, WithJsonSchema(schema)],  # type: ignore[name-defined]
                Field(description=info.description),
            )
    if not fields:
        return base
    model = create_model(f"Episode{base.__name__}", __base__=base, **fields)
    setattr(model, _BASE_ATTRIBUTE, base)
    return model


def vocabulary_signature(
    signature: type[dspy.Signature], allowed: dict[str, Sequence[str | int]]
) -> type[dspy.Signature]:
    """`signature` (tuned instructions and all) whose `edges` items may use only the allowed values."""
    annotation = signature.output_fields[EDGES_FIELD].annotation
    (item,) = annotation.__args__
    limited = vocabulary_model(item, allowed)
    if limited is item:
        return signature
    return signature.with_updated_fields(EDGES_FIELD, type_=list[limited])


def display_signature(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """The signature as the prompt shows it and the parser reads it: without the episode's vocabulary."""
    for name, field in signature.output_fields.items():
        if (plain := display_type(field.annotation)) is not None:
            signature = signature.with_updated_fields(name, type_=plain)
    field = signature.output_fields.get(EDGES_FIELD)
    arguments = getattr(field.annotation, "__args__", None) if field is not None else None
    base = getattr(arguments[0], _BASE_ATTRIBUTE, None) if arguments else None
    if base is None:
        return signature
    return signature.with_updated_fields(EDGES_FIELD, type_=list[base])


class VocabularyJSONAdapter(dspy.JSONAdapter):
    """DSPy's JSON adapter, with the vocabulary in the response schema only (see the module docstring)."""

    def format(
        self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]
    ) -> Any:
        messages = super().format(display_signature(signature), demos, inputs)
        note_messages(messages)
        return messages

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        note_completion(completion)
        return super().parse(display_signature(signature), completion)
