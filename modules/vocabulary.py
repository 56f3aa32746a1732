"""The episode's vocabulary in the reply schema: only its entity names and relationship types.

The seed's rule 1 (both ends must be ENTITIES) and its type list are prompt text a small model may
ignore. `vocabulary_schemas` turns them into the reply's schema itself: the name fields of the
`edges` items get the episode's names (and, with closed types, its types) as their JSON schema's
`enum`. DSPy's JSON adapter sends that schema as `response_format`, so every provider that takes a
schema gets the `enum`s, and self-hosted servers (llama.cpp, vLLM) compile them into the decoding
grammar: the decoder cannot write another name.

The vocabulary is per-call data, not a type (`edgewise.signatures.schema`), which keeps two things
as they would be without it. The prompt describes the reply with the base type (no names in the
schema text), because a prompt whose first lines change with each episode would defeat the server's
prompt cache: the instructions and demos are a shared prefix computed once. And replies are parsed
with the base type, so that a model that ignored the enum loses only the offending edge, in
post-processing (`unknown_entity`, `unknown_type`), not the whole reply.

`VocabularyJSONAdapter` is DSPy's JSON adapter with each call's reply schemas written into its
`response_format`. It also chooses the signature's structured-output schema once per signature,
where DSPy's own builds a pydantic model for it on every call.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, Final

import dspy
from pydantic import BaseModel

from edgewise.modules.transcript import note_completion, note_messages
from edgewise.signatures.schema import (
    KEPT_SIGNATURES,
    ReplySchemas,
    current_reply_schemas,
    with_reply_schemas,
)

EDGES_FIELD: Final = "edges"


def vocabulary_schemas(
    signature: type[dspy.Signature], allowed: dict[str, Sequence[str | int]]
) -> ReplySchemas:
    """The schemas that give the named fields of `signature`'s `edges` items their allowed values as an
    `enum` (empty: free), for `reply_schemas`; a name the items do not have is skipped. Each is the
    field's own schema (description and title) with the values' type and `enum`."""
    annotation = signature.output_fields[EDGES_FIELD].annotation
    (item,) = annotation.__args__
    properties = reply_item_schema(item).get("properties", {})
    schemas: dict[tuple[str, ...], dict[str, Any]] = {}
    for name, values in allowed.items():
        unique = list(dict.fromkeys(value for value in values if value))
        if unique and name in item.model_fields:
            description = item.model_fields[name].description
            title = properties.get(name, {}).get("title")
            schemas[(EDGES_FIELD, name)] = {
                "type": "integer" if all(isinstance(value, int) for value in unique) else "string",
                "enum": unique,
                **({"description": description} if description else {}),
                **({"title": title} if title else {}),
            }
    return schemas


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def reply_item_schema(item: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a reply item type, made once per type: shared, so read or copied, never changed."""
    return item.model_json_schema()


class VocabularyJSONAdapter(dspy.JSONAdapter):
    """DSPy's JSON adapter, with each call's reply schemas in the response schema only (see the module
    docstring)."""

    def format(
        self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]
    ) -> Any:
        messages = super().format(signature, demos, inputs)
        note_messages(messages)
        return messages

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        note_completion(completion)
        return super().parse(signature, completion)

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
        chosen = _chosen_response_format(
            signature,
            self.use_native_function_calling,
            "response_format" in lm.supported_params,
            bool(lm.supports_response_schema),
        )
        if chosen is None:
            return
        schemas = current_reply_schemas()
        if schemas and chosen.get("type") == "json_schema":
            json_schema = chosen["json_schema"]
            limited = _strict(with_reply_schemas(json_schema["schema"], schemas))
            chosen = {**chosen, "json_schema": {**json_schema, "schema": limited}}
        else:
            chosen = copy.deepcopy(chosen)  # the kept one is shared by every call and thread
        lm_kwargs["response_format"] = chosen


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def _chosen_response_format(
    signature: type[dspy.Signature], native_function_calling: bool, takes_format: bool, takes_schema: bool
) -> dict[str, Any] | None:
    """The `response_format` DSPy's JSON adapter chooses for `signature` on a model that takes it
    (`takes_format`) and a JSON schema in it (`takes_schema`), as the JSON the request carries; None:
    none. Chosen by DSPy's own method, which reads nothing else of the model."""
    model = SimpleNamespace(
        supported_params={"response_format"} if takes_format else set(), supports_response_schema=takes_schema
    )
    chosen: dict[str, Any] = {}
    dspy.JSONAdapter(use_native_function_calling=native_function_calling)._prepare_response_format(
        model, chosen, signature
    )
    response_format = chosen.get("response_format")
    if isinstance(response_format, type):
        from litellm.utils import type_to_response_format_param

        return type_to_response_format_param(response_format)
    return response_format


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (changed in place) made strict as LiteLLM makes a type's schema for a request (OpenAI's
    pass: each object's properties all required and no others, no null defaults), so that the call's
    reply schemas are sent as the rest of the schema is (`_chosen_response_format`)."""
    from openai.lib._pydantic import _ensure_strict_json_schema

    return _ensure_strict_json_schema(schema, path=(), root=schema)
