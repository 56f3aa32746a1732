"""What the text-to-graph integrations (LlamaIndex, LangChain) share: the program and model they run,
a framework's schema as entity types, edge types and signatures, and an edge's properties.

Graphiti finds an episode's entities itself and asks edgewise only for the edges between them; the
LlamaIndex and LangChain extractors start from text alone. They therefore run the program with its
entity step (`EdgeExtractor.with_entity_step`): each text becomes one `TextEpisode`, whose entities
the program finds first (typed with the framework's entity types), and then the edges between them.
The program and model are chosen as `EdgewiseLLMClient` chooses them (`choose_program`,
`resolve_program`, a fine-tuned program's adapter, the local model started on first use), so the
three integrations run the same program on the same model for the same arguments.

Relationship types go to the program in SCREAMING_SNAKE_CASE, the spelling it writes them in, so a
declared signature applies to the edges whatever the caller's spelling (`worksAt`), and come back in
the caller's own spelling (`caller_type`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from datetime import UTC, date, datetime
from typing import Any, Final, TypeVar

from pydantic import ValidationError

from edgewise.domain.episode import TextEpisode
from edgewise.domain.names import to_screaming_snake
from edgewise.domain.types import Edge, EdgeType, EntityType, ExtractionResult, format_utc
from edgewise.modules.concurrency import run_concurrently

logger = logging.getLogger("edgewise.integrations")

Triple = tuple[str, str, str]
"""(source entity type, relationship type, target entity type), as both frameworks write a schema."""

FACT: Final = "fact"
VALID_AT: Final = "validAt"
INVALID_AT: Final = "invalidAt"

T = TypeVar("T")
R = TypeVar("R")


class TextGraphRunner:
    """An edgewise program with its entity step, on an edgewise model, for one integration object.

    `program`, `model`, `api_base`, `api_key`, `lm` and `lm_options` are `EdgewiseLLMClient`'s
    arguments and mean the same (the default program is the one compiled for `model`; `local` is
    started on first use and stopped by `close()`). `open_types` lets the program write relationship
    types outside the episode's list, for a framework's non-strict mode.
    """

    def __init__(
        self,
        *,
        program: str | None,
        model: str,
        api_base: str | None,
        api_key: str | None,
        lm: Any | None,
        open_types: bool,
        lm_options: Mapping[str, Any],
    ) -> None:
        from edgewise.programs.lora_adapter import program_adapter
        from edgewise.programs.names import choose_program, resolve_program
        from edgewise.runtime.lm import LMConfig

        # Built even when `lm` is given, so that a misspelled option is refused either way.
        config = LMConfig(model=model, api_base=api_base, api_key=api_key, **lm_options)
        choice = choose_program(program, config.model if lm is None else str(getattr(lm, "model", "")))
        logger.info("edgewise: %s", choice.notice())
        resolved = resolve_program(choice.name, open_types=open_types)
        with_step = getattr(resolved, "with_entity_step", None)
        if with_step is None:
            raise ValueError(
                f"program {choice.name!r} cannot find entities in text: name an edgewise program "
                "(`default`, a shipped or a compiled one), not a seed or Graphiti baseline"
            )
        self.program_name = choice.name
        self.program = with_step()
        self._lm = lm
        # A fine-tuned program's adapter goes to the server edgewise starts (an `lm` of the caller's
        # own is used as given).
        adapter = program_adapter(resolved, config.model) if lm is None else None
        self._lm_config = None if lm is not None else config.model_copy(update={"lora_adapter": adapter})
        self._stack = ExitStack()
        self._lock = threading.Lock()

    def extract(self, episode: TextEpisode) -> ExtractionResult:
        """The program's result for one episode; a model failure is raised, as the frameworks' own
        extractors raise their model's."""
        from edgewise.runtime.lm import lm_context

        with lm_context(self._ensure_lm()):
            result = self.program(episode).result
        for warning in result.warnings:
            logger.debug("edgewise: %s: %s", warning.code, warning.message)
        return result

    async def aextract(self, episode: TextEpisode) -> ExtractionResult:
        """`extract` in a worker thread, so that an event loop keeps running meanwhile."""
        return await asyncio.to_thread(self.extract, episode)

    def _ensure_lm(self) -> Any:
        """The edgewise LM, opened on first use (a local model's server is started then)."""
        with self._lock:
            if self._lm is None:
                from edgewise.runtime.lm import open_lm

                assert self._lm_config is not None  # set whenever no LM was given
                self._lm = self._stack.enter_context(open_lm(self._lm_config))
            return self._lm

    def close(self) -> None:
        """Stop the local model server this runner started (if any)."""
        self._stack.close()


def text_episode(
    text: str,
    reference_time: Any,
    *,
    entity_types: list[EntityType],
    edge_types: list[EdgeType],
    custom_prompt: str,
    where: str,
) -> TextEpisode:
    """One framework text as an episode; `where` names the text in the error a bad time raises."""
    try:
        return TextEpisode(
            episode_content=text,
            reference_time=reference_time,
            entity_types=entity_types,
            edge_types=edge_types,
            custom_prompt=custom_prompt,
        )
    except ValidationError as error:
        raise ValueError(f"{where} is no episode: {error}") from error


def reference_time_of(
    metadata: Mapping[str, Any], key: str | None, default: datetime | str | None
) -> datetime | date | str:
    """The reference time of a text: its metadata's `key`, else `default`, else now (UTC).

    A `date` means its midnight UTC; a string is ISO 8601 (the episode's contract reads both).
    """
    if key is not None and metadata.get(key) is not None:
        return metadata[key]
    return default if default is not None else datetime.now(UTC)


def edge_types_for(
    relations: Mapping[str, str], signatures: Mapping[str, tuple[set[str], set[str]]] | None
) -> tuple[list[EdgeType], dict[str, str]]:
    """The episode's edge types for `relations` (name -> description) with their signatures, and
    the caller's spelling of each type by the program's (SCREAMING_SNAKE_CASE).

    Two names that the program would write alike (`WORKS_AT`, `worksAt`) are refused: their edges
    could not be told apart.
    """
    spelling: dict[str, str] = {}
    edge_types: list[EdgeType] = []
    for name, description in relations.items():
        key = to_screaming_snake(name)
        if not key:
            raise ValueError(f"relationship type {name!r} has no letter or digit")
        if key in spelling:
            raise ValueError(
                f"relationship types {spelling[key]!r} and {name!r} are one type to edgewise ({key})"
            )
        spelling[key] = name
        sources, targets = (signatures or {}).get(name, (None, None))
        edge_types.append(
            EdgeType(
                name=key,
                description=description,
                source_types=sorted(sources) if sources is not None else None,
                target_types=sorted(targets) if targets is not None else None,
            )
        )
    return edge_types, spelling


def signatures_of(triples: Iterable[Triple]) -> dict[str, tuple[set[str], set[str]]]:
    """Each relationship type's source and target entity types, as the triples name them.

    The program takes a type's sources and targets as two sets, so it allows every pair of them;
    a schema whose triples for one type are not all such pairs is checked triple by triple again
    when the edges are written.
    """
    signatures: dict[str, tuple[set[str], set[str]]] = {}
    for source, relation, target in triples:
        sources, targets = signatures.setdefault(relation, (set(), set()))
        sources.add(source)
        targets.add(target)
    return signatures


def caller_type(relationship_type: str, spelling: Mapping[str, str]) -> str:
    """An edge's type as the caller spells it; one the caller did not declare, as the program wrote it."""
    return spelling.get(relationship_type, relationship_type)


def edge_properties(edge: Edge) -> dict[str, str | None]:
    """What a written relation carries of the edge: its fact and its two dates (ISO 8601 UTC, or
    None where the text does not state one)."""
    return {
        FACT: edge.fact,
        VALID_AT: format_utc(edge.valid_at) if edge.valid_at else None,
        INVALID_AT: format_utc(edge.invalid_at) if edge.invalid_at else None,
    }


def run_in_threads(fn: Callable[[T], R], items: Sequence[T], *, workers: int) -> list[R]:
    """`fn` of each item, at most `workers` at a time, in input order; the first failure is raised."""
    outcomes = run_concurrently(fn, items, workers=workers)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
    return outcomes  # type: ignore[return-value]  (no exception is left among them)


def check_workers(workers: int) -> int:
    if workers < 1:
        raise ValueError(f"num_workers must be at least 1, not {workers}")
    return workers
