"""`EdgewiseLLMClient`: Graphiti's edge extraction answered by an edgewise program, in one line.

    graphiti = Graphiti(uri, user, password, llm_client=EdgewiseLLMClient(OpenAIClient(), model="local"))

Graphiti sends every LLM call to its `LLMClient`. This client answers one of them, the edge
extraction (`prompt_name == "extract_edges.edge"`, response model `ExtractedEdges`), from an edgewise
program on an edgewise model: the local model it starts itself, any LiteLLM model string, or a
server at `api_base`. Every other call (entity extraction, deduplication, summaries) goes to the
wrapped client unchanged. The episode is read back from Graphiti's rendered prompt
(`graphiti_prompt.read_edge_prompt`); if it cannot be read, the call goes to the wrapped client and
a warning says so, once.

Dates: Graphiti asks its timestamp prompt (`extract_edges.extract_timestamps`) again for an edge
whose two dates are null. For a fact edgewise just extracted, this client answers with edgewise's
own dates, so that a deliberate null stays null. `add_episode_bulk`'s combined extraction asks the
batch prompt (`extract_edges.extract_timestamps_batch`, response `{"timestamps": [...]}`, one entry
per fact of its FACTS list, in order, matched back by position) for every fact it extracted. Each
fact edgewise extracted (the same fact text, as for the single prompt) is answered with edgewise's
dates; the others are sent to the wrapped client as the same prompt with only those facts in its
FACTS list, and its answers are put back in their places. This split rather than sending the whole
batch on: the response is a plain ordered list, so the two answers merge without ambiguity, and the
wrapped model is neither paid for facts whose dates are already known nor allowed to overwrite a
deliberate null. A batch with no fact of edgewise's goes to the wrapped client unchanged. A wrapped
reply with too few entries leaves the missing facts both-null (Graphiti's own reading of a short
reply leaves them unset); one with no `timestamps` list is an error, which Graphiti retries.
The combined extraction's facts themselves come from the wrapped client (that call is no edge
prompt), so its batch holds edgewise facts only where edgewise extracted the same fact before
(`add_episode`, or `add_episode_bulk(use_combined_extraction=False)`, whose edge calls it answers).

Strict types: with `strict_edge_types=True` Graphiti's edge prompt says to use only its fact types
(`graphiti_prompt.read_edge_prompt` tells the two rule texts apart). The program then runs with its
types closed (`resolve_program`'s default; without strict mode it is resolved with `open_types`, as
Graphiti's open prompt lets the model name new types), and the client keeps only edges of the fact
types that can apply to the episode: a program that does not close types (the `seed` and `graphiti`
baselines) is held to them too, and when no fact type's signature fits the episode's entities the
call returns no edges without asking the model (the default vocabulary must not stand in for them).
In both modes an edge whose type is a fact type's in edgewise's spelling (the program writes
SCREAMING_SNAKE_CASE: `EMPLOYMENT`) is returned under Graphiti's own name (`Employment`), which is
what Graphiti's strict filter and its edge-type models match exactly.

Attributes: Graphiti fills a custom edge type's fields with one more call per edge
(`extract_edges.extract_attributes`, its response model the edge type's model), identified by the
edge's fact. Its edge prompt does not show those fields, so the client is given the same
`edge_types` as `add_episode`; the program then fills each edge's attributes as its formulation
does (`ProgramOptions.attributes`), and the attribute call for a fact it just extracted is answered
from them, over the EXISTING ATTRIBUTES Graphiti sends. An attribute call for any other fact, or
for a field edgewise has no kind for (a date, a list), goes to the wrapped client.

Failures: the edge call runs through Graphiti's own retry (`_generate_response_with_retry`), and an
edgewise model failure is raised as the exception Graphiti's clients raise for it (`RateLimitError`
for a rate limit, an httpx 5xx `HTTPStatusError` for a server, connection or timeout failure), so
Graphiti retries it as it would its own.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from contextlib import ExitStack
from contextvars import ContextVar
from typing import Any, Final, NamedTuple

import httpx
from graphiti_core.llm_client.client import LLMClient
from graphiti_core.llm_client.config import DEFAULT_MAX_TOKENS, LLMConfig, ModelSize
from graphiti_core.llm_client.errors import RateLimitError
from graphiti_core.prompts.models import Message
from pydantic import BaseModel, ValidationError

from edgewise.domain.episode import Episode
from edgewise.domain.errors import (
    REASON_CONNECTION,
    REASON_INVALID_RESPONSE,
    REASON_RATE_LIMITED,
    REASON_SERVER_ERROR,
    REASON_TIMEOUT,
)
from edgewise.domain.names import to_screaming_snake
from edgewise.domain.types import AttributeValue, Edge, EdgeAttribute, EdgeType, format_utc
from edgewise.integrations.graphiti_prompt import (
    UnreadablePrompt,
    graphiti_attributes,
    read_attribute_prompt,
    read_batch_facts,
    read_edge_prompt,
    read_fact,
    with_batch_facts,
)
from edgewise.runtime.faults import failure_reason

logger = logging.getLogger("edgewise.integrations.graphiti")

EDGE_PROMPT: Final = "extract_edges.edge"
TIMESTAMP_PROMPT: Final = "extract_edges.extract_timestamps"
TIMESTAMP_BATCH_PROMPT: Final = "extract_edges.extract_timestamps_batch"
ATTRIBUTES_PROMPT: Final = "extract_edges.extract_attributes"
_REMEMBERED_FACTS: Final = 4096
_SERVER_REASONS: Final = frozenset(
    {REASON_SERVER_ERROR, REASON_CONNECTION, REASON_TIMEOUT, REASON_INVALID_RESPONSE}
)

_pending_episode: ContextVar[tuple[Episode, bool] | None] = ContextVar(
    "edgewise_graphiti_episode", default=None
)


class _Written(NamedTuple):
    """What the program wrote for one fact: its dates, its type, and its attributes when the type has any."""

    valid_at: str | None
    invalid_at: str | None
    relation_type: str
    attributes: dict[str, AttributeValue] | None


class EdgewiseLLMClient(LLMClient):
    """A Graphiti `LLMClient` whose edge extraction is an edgewise program (see the module docstring).

    `program`: a program name or directory, as `edgewise extract --program` takes (default: the shipped
    program compiled for `model`, `qwen2.5-coder-1.5b-program-v2` for `local`, else `default`; the
    `program_name` attribute and an INFO line of this module's logger name it).
    `model`, `api_base`, `api_key`: the edgewise model (default `local`, started on first use and
    stopped by `close()`); `lm_options`: any other `edgewise.runtime.lm.LMConfig` field
    (`max_tokens`, `num_retries`, `timeout_s`, ...); a misspelled one is LMConfig's `TypeError`
    now, not a setting silently dropped. `lm`: a ready DSPy LM instead (one you manage
    yourself). `edge_types`: the edge type models given to `add_episode`, whose fields the program
    fills as the edges' attributes and answers Graphiti's attribute call with.
    """

    def __init__(
        self,
        inner: LLMClient,
        *,
        program: str | None = None,
        model: str = "local",
        api_base: str | None = None,
        api_key: str | None = None,
        lm: Any | None = None,
        edge_types: Mapping[str, type[BaseModel]] | None = None,
        **lm_options: Any,
    ) -> None:
        super().__init__(getattr(inner, "config", None) or LLMConfig(), cache=False)
        from edgewise.programs.lora_adapter import program_adapter
        from edgewise.programs.names import choose_program, resolve_program
        from edgewise.runtime.lm import LMConfig

        # Built even when `lm` is given, so that a misspelled option is refused either way.
        config = LMConfig(model=model, api_base=api_base, api_key=api_key, **lm_options)
        choice = choose_program(program, config.model if lm is None else str(getattr(lm, "model", "")))
        logger.info("edgewise: %s", choice.notice())
        self.inner = inner
        self.program_name = choice.name
        self._closed_program = resolve_program(choice.name)
        self._open_program = resolve_program(choice.name, open_types=True)
        self._lm = lm
        # A fine-tuned program's adapter goes to the server edgewise starts (an `lm` of the caller's
        # own is used as given).
        adapter = program_adapter(self._closed_program, config.model) if lm is None else None
        self._lm_config = None if lm is not None else config.model_copy(update={"lora_adapter": adapter})
        self._stack = ExitStack()
        self._lock = threading.Lock()
        self._attributes: dict[str, list[EdgeAttribute]] = graphiti_attributes(edge_types or {})
        self._written: OrderedDict[str, _Written] = OrderedDict()
        self._warned = False

    # -- Graphiti's entry point ---------------------------------------------------------------------

    async def generate_response(
        self,
        messages: list[Message],
        response_model: Any = None,
        max_tokens: int | None = None,
        model_size: ModelSize = ModelSize.medium,
        group_id: str | None = None,
        prompt_name: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        if prompt_name == EDGE_PROMPT and getattr(response_model, "__name__", "") == "ExtractedEdges":
            try:
                read = read_edge_prompt(messages)
            except (UnreadablePrompt, ValidationError) as problem:
                self._warn_once(
                    f"Graphiti's edge prompt could not be read ({problem}); the wrapped client answers it"
                )
            else:
                token = _pending_episode.set((self._with_attributes(read.episode), read.strict_types))
                try:
                    return await self._generate_response_with_retry(
                        messages, response_model, max_tokens or DEFAULT_MAX_TOKENS, model_size
                    )
                finally:
                    _pending_episode.reset(token)
        if prompt_name == TIMESTAMP_PROMPT:
            written = self._written_for(read_fact(messages))
            if written is not None:
                return {"valid_at": written.valid_at, "invalid_at": written.invalid_at}
        if prompt_name == TIMESTAMP_BATCH_PROMPT:
            answer = await self._batch_timestamps(
                messages, response_model, max_tokens, model_size, group_id, options
            )
            if answer is not None:
                return answer
        if prompt_name == ATTRIBUTES_PROMPT:
            answer = self._attribute_answer(messages, response_model)
            if answer is not None:
                return answer
        return await self.inner.generate_response(
            messages, response_model, max_tokens, model_size, group_id, prompt_name, **options
        )

    async def _generate_response(
        self,
        messages: list[Message],
        response_model: Any = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_size: ModelSize = ModelSize.medium,
        **options: Any,
    ) -> dict[str, Any]:
        """The edge call, answered by edgewise (only reached from `generate_response`)."""
        pending = _pending_episode.get()
        if pending is None:  # not an edge call of ours: Graphiti called the hook directly
            return await self.inner._generate_response(messages, response_model, max_tokens, model_size)
        episode, strict = pending
        if strict and not episode.edge_types:  # no fact type can connect these entities
            return {"edges": []}
        from edgewise.runtime.lm import lm_context

        # Graphiti's strict mode allows only its fact types; otherwise its prompt lets the model name new ones.
        program = self._closed_program if strict else self._open_program
        try:
            with lm_context(self._ensure_lm()):
                result = await asyncio.to_thread(lambda: program(episode).result)
        except Exception as error:
            raise graphiti_error(error) from error
        edges = [
            edge.model_copy(
                update={"relationship_type": graphiti_type_name(edge.relationship_type, episode.edge_types)}
            )
            for edge in result.edges
        ]
        if strict:
            allowed = {edge_type.name for edge_type in episode.edge_types}
            edges = [edge for edge in edges if edge.relationship_type in allowed]
        return {"edges": [self._graphiti_edge(edge, episode) for edge in edges]}

    # -- the batch timestamp prompt -------------------------------------------------------------------

    async def _batch_timestamps(
        self,
        messages: list[Message],
        response_model: Any,
        max_tokens: int | None,
        model_size: ModelSize,
        group_id: str | None,
        options: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Graphiti's batch timestamp reply, edgewise's dates for its facts; None: none of them is ours.

        The facts edgewise did not extract go to the wrapped client as the same prompt listing only
        them, and its entries are put back in those facts' places (see the module docstring).
        """
        facts = read_batch_facts(messages)
        if facts is None:
            return None
        written = [self._written_for(item["fact"]) for item in facts]
        if all(known is None for known in written):
            return None
        rest = [item for item, known in zip(facts, written, strict=True) if known is None]
        answers: list[Any] = []
        if rest:
            reply = await self.inner.generate_response(
                with_batch_facts(messages, rest),
                response_model,
                max_tokens,
                model_size,
                group_id,
                TIMESTAMP_BATCH_PROMPT,
                **options,
            )
            rows = reply.get("timestamps") if isinstance(reply, dict) else None
            if not isinstance(rows, list):
                raise ValueError(
                    f"the wrapped client's batch timestamp reply has no timestamps list: {reply!r}"
                )
            answers = rows[: len(rest)]
        remaining = iter(answers)
        timestamps = [
            {"valid_at": known.valid_at, "invalid_at": known.invalid_at}
            if known is not None
            else next(remaining, {"valid_at": None, "invalid_at": None})
            for known in written
        ]
        return {"timestamps": timestamps}

    # -- attributes -----------------------------------------------------------------------------------

    def _with_attributes(self, episode: Episode) -> Episode:
        """The episode read from Graphiti's prompt, its edge types given the fields of `edge_types`."""
        if not self._attributes:
            return episode
        edge_types = [
            edge_type.model_copy(update={"attributes": self._attributes[edge_type.name]})
            if edge_type.name in self._attributes
            else edge_type
            for edge_type in episode.edge_types
        ]
        return episode.model_copy(update={"edge_types": edge_types})

    def _written_for(self, fact: str | None) -> _Written | None:
        with self._lock:
            return self._written.get(fact.strip()) if fact else None

    def _attribute_answer(self, messages: list[Message], response_model: Any) -> dict[str, Any] | None:
        """Graphiti's attribute reply from what the program wrote for this fact; None: not ours to answer.

        Ours when the program extracted the fact under a type with attributes and every field the
        response model asks for is one of them. A value the program wrote replaces the existing one;
        a field it left null (not stated) keeps the existing value, as Graphiti's own prompt asks.
        """
        fact, existing = read_attribute_prompt(messages)
        written = self._written_for(fact)
        fields = getattr(response_model, "model_fields", None)
        if written is None or written.attributes is None or not fields:
            return None
        declared = {attribute.name for attribute in self._attributes.get(written.relation_type, [])}
        if not set(fields) <= declared:
            return None
        return {name: written.attributes.get(name, existing.get(name)) for name in fields}

    def _graphiti_edge(self, edge: Edge, episode: Episode) -> dict[str, Any]:
        valid_at = format_utc(edge.valid_at) if edge.valid_at else None
        invalid_at = format_utc(edge.invalid_at) if edge.invalid_at else None
        edge_type = episode.edge_type(edge.relationship_type)
        attributes = dict(edge.attributes) if edge_type is not None and edge_type.attributes else None
        with self._lock:
            self._written[edge.fact.strip()] = _Written(
                valid_at, invalid_at, edge.relationship_type, attributes
            )
            while len(self._written) > _REMEMBERED_FACTS:
                self._written.popitem(last=False)
        return {
            "source_entity_name": edge.source_entity_name,
            "target_entity_name": edge.target_entity_name,
            "relation_type": edge.relationship_type,
            "fact": edge.fact,
            "valid_at": valid_at,
            "invalid_at": invalid_at,
            "episode_indices": [0],
        }

    # -- the edgewise model ---------------------------------------------------------------------------

    def _ensure_lm(self) -> Any:
        """The edgewise LM, opened on first use (a local model's server is started then)."""
        with self._lock:
            if self._lm is None:
                from edgewise.runtime.lm import open_lm

                self._lm = self._stack.enter_context(open_lm(self._lm_config))
            return self._lm

    def close(self) -> None:
        """Stop the local model server this client started (if any)."""
        self._stack.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def _warn_once(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(message)


def graphiti_type_name(relationship_type: str, edge_types: list[EdgeType]) -> str:
    """`relationship_type` as Graphiti spells it: the fact type it names, else unchanged.

    The program writes types in SCREAMING_SNAKE_CASE (a fact type `Employment` comes back as
    `EMPLOYMENT`); Graphiti matches its fact type names exactly, in its strict filter and when it
    picks an edge's type model. An exact name wins over one equal only in that spelling.
    """
    names = [edge_type.name for edge_type in edge_types]
    if relationship_type in names:
        return relationship_type
    key = to_screaming_snake(relationship_type)
    return next((name for name in names if to_screaming_snake(name) == key), relationship_type)


def graphiti_error(error: BaseException) -> BaseException:
    """The exception Graphiti's own clients raise for this edgewise failure (what its retry checks)."""
    reason = failure_reason(error)
    if reason == REASON_RATE_LIMITED:
        return RateLimitError(f"edgewise: {error}")
    if reason in _SERVER_REASONS:
        status = getattr(error, "status", None)
        status = status if isinstance(status, int) and 500 <= status < 600 else 503
        request = httpx.Request("POST", "http://127.0.0.1/edgewise")
        return httpx.HTTPStatusError(
            f"edgewise: {reason}: {error}", request=request, response=httpx.Response(status, request=request)
        )
    return error
