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
own dates, so that a deliberate null stays null.

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
from edgewise.domain.types import AttributeValue, Edge, EdgeAttribute, format_utc
from edgewise.integrations.graphiti_prompt import (
    UnreadablePrompt,
    graphiti_attributes,
    read_attribute_prompt,
    read_edge_prompt,
    read_fact,
)
from edgewise.runtime.faults import failure_reason

logger = logging.getLogger("edgewise.integrations.graphiti")

EDGE_PROMPT: Final = "extract_edges.edge"
TIMESTAMP_PROMPT: Final = "extract_edges.extract_timestamps"
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
        from edgewise.runtime.lm import lm_context

        # Graphiti's strict mode allows only its fact types; otherwise its prompt lets the model name new ones.
        program = self._closed_program if strict else self._open_program
        try:
            with lm_context(self._ensure_lm()):
                result = await asyncio.to_thread(lambda: program(episode).result)
        except Exception as error:
            raise graphiti_error(error) from error
        return {"edges": [self._graphiti_edge(edge, episode) for edge in result.edges]}

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
