"""`EdgeExtractor`: the DSPy program that turns an episode into temporal graph edges.

A program is an ordered list of steps (`modules.steps`): show the episode, build the reply
vocabulary, extract (by edges, by entity or by candidate pair), glean, reflect, post-process,
re-type, check quoted text and dates, add speaker names, verify, fill and ground attributes. `STEPS`
says which options name which step; `EdgeExtractor.steps` is the list its options name, and
`forward` runs it. The predictors are the program's own attributes, under the names a compiled
program's `program.json` stores and optimizers tune.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any, Final, Generic, Self, TypeVar, overload

import dspy

from edgewise.domain.episode import Episode, episode_model
from edgewise.domain.types import ExtractionResult
from edgewise.modules.attributes import attributes_predictor, extraction_signature
from edgewise.modules.concurrency import run_concurrently
from edgewise.modules.options import ProgramOptions
from edgewise.modules.program_io import as_episode, result_prediction
from edgewise.modules.speaker_marks import speaker_signature
from edgewise.modules.steps import (
    ATTRIBUTE_GROUNDING,
    ATTRIBUTES_FROM_REPLY,
    ATTRIBUTES_PER_EDGE,
    ATTRIBUTES_PER_EPISODE,
    DATE_GUARDS,
    DATES_FROM_FACTS,
    QUOTED_TEXT_CHECK,
    SPEAKER_NAMES,
    AttributesInReply,
    DropMarkedQuoted,
    ExtractByEntity,
    ExtractEdges,
    Extraction,
    FindEntities,
    Glean,
    LabelPairs,
    NumberSentences,
    OfferDefaultTypes,
    PostProcess,
    Reflexion,
    ReplyVocabulary,
    RetypeByQuestion,
    ShowEpisode,
    Step,
    TypedGrammar,
    Verify,
)
from edgewise.modules.type_signatures import STATE_KEY, TypeSignatures
from edgewise.signatures.choose_types import ChooseTypes
from edgewise.signatures.extract_by_entity import ExtractEdgesByEntity
from edgewise.signatures.extract_edges import OutputShape, extract_signature, in_seed_order
from edgewise.signatures.extract_entities import ExtractEntities
from edgewise.signatures.find_missing_facts import FindMissingFacts
from edgewise.signatures.glean_edges import GleanEdges
from edgewise.signatures.label_pairs import LabelPairs as LabelPairsSignature
from edgewise.signatures.verify_edges import VerifyEdges

ADAPTER_ATTRIBUTE: Final = "lora_adapter"
"""The attribute a loaded fine-tuned program carries its verified adapter in (absent: no adapter).

The adapter (`edgewise.programs.lora_adapter.LoraAdapter`) checks the LM before each episode
(`check_served`): this layer knows only that a program may carry one.
"""

PREDICTOR_NAMES: Final = (
    "extract", "reflect", "attributes", "label_pairs", "by_entity", "glean", "choose_types", "verify",
    "find_entities",
)  # fmt: skip
"""The predictors an `EdgeExtractor` may have, as `named_predictors` names them (`label_pairs` only
with the pairwise formulation, `by_entity` with coverage by entity, `glean` with gleaning,
`choose_types` with re-typing by question, `verify` with the precision step, `find_entities` with the
entity step)."""


def _always(options: ProgramOptions) -> bool:
    return True


STEPS: Final[tuple[tuple[Callable[[ProgramOptions], bool], Step], ...]] = (
    (lambda o: o.task.entity_step, FindEntities()),
    (lambda o: o.typing.default_types, OfferDefaultTypes()),
    (_always, ShowEpisode()),
    (lambda o: o.task.formulation == "pairs", LabelPairs()),
    (lambda o: o.task.fact_span, NumberSentences()),
    (lambda o: o.task.formulation != "pairs", ReplyVocabulary()),
    (lambda o: o.attribute_filling.formulation == "in-extraction", AttributesInReply()),
    (lambda o: o.typing.typed_grammar, TypedGrammar()),
    (lambda o: o.task.formulation == "entities", ExtractByEntity()),
    (lambda o: o.task.formulation == "edges", ExtractEdges()),
    (lambda o: o.glean.turns > 0, Glean()),
    (lambda o: o.task.max_reflexion_rounds > 0, Reflexion()),
    (lambda o: o.checks.speaker_marks, DropMarkedQuoted()),
    (_always, PostProcess()),
    (lambda o: o.typing.retype == "ask", RetypeByQuestion()),
    (lambda o: o.checks.quoted_text_check, QUOTED_TEXT_CHECK),
    (lambda o: o.dates.from_facts, DATES_FROM_FACTS),
    (lambda o: o.dates.guards, DATE_GUARDS),
    (lambda o: o.checks.speaker_names, SPEAKER_NAMES),
    (lambda o: o.checks.precision, Verify()),
    (lambda o: o.attribute_filling.formulation == "per-edge", ATTRIBUTES_PER_EDGE),
    (lambda o: o.attribute_filling.formulation == "per-episode", ATTRIBUTES_PER_EPISODE),
    (lambda o: o.attribute_filling.formulation == "in-extraction", ATTRIBUTES_FROM_REPLY),
    (lambda o: o.attribute_filling.grounding, ATTRIBUTE_GROUNDING),
)
"""Every step a program may run, in the order it runs them, each after the test of the options that
name it. A new lever is a new step and one line here."""


def program_steps(options: ProgramOptions) -> tuple[Step, ...]:
    """The steps `options` name, in `STEPS`' order."""
    return tuple(step for named, step in STEPS if named(options))


_Value = TypeVar("_Value")


class _ProgramOption(Generic[_Value]):
    """An attribute of `EdgeExtractor` that is one of its options (`ProgramOptions`, by flat name): read
    from them, and set by a checked copy of them, so that the options stay the one record of the program."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, program: None, owner: type) -> Self: ...
    @overload
    def __get__(self, program: EdgeExtractor, owner: type) -> _Value: ...
    def __get__(self, program: EdgeExtractor | None, owner: type) -> Self | _Value:
        if program is None:
            return self
        return getattr(program.options, self._name)

    def __set__(self, program: EdgeExtractor, value: _Value) -> None:
        program.options = program.options.model_copy(update={self._name: value})


class EdgeExtractor(dspy.Module):
    """Extract edges between an episode's known entities, with dates, usage and warnings.

    The reply schema allows only the episode's entity names (the seed's rule 1) and, with
    `closed_types`, only its RELATIONSHIP TYPES (`vocabulary_schemas`): a server that takes a JSON
    schema decodes nothing else, and post-processing drops what a server let through. `closed_types=False`
    keeps the seed's open vocabulary, for callers whose type list names only the most important types.
    `output_shape` is the reply the model writes (see `extract_signature`); results always have the
    seed's shape. Both, and `max_reflexion_rounds`, are options (`ProgramOptions`); given here, they
    replace the value `options` has.
    """

    def __init__(
        self,
        max_reflexion_rounds: int | None = None,
        *,
        closed_types: bool | None = None,
        output_shape: OutputShape | None = None,
        options: ProgramOptions | None = None,
        type_signatures: TypeSignatures | None = None,
    ) -> None:
        super().__init__()
        given = {
            "max_reflexion_rounds": max_reflexion_rounds,
            "closed_types": closed_types,
            "output_shape": output_shape,
        }
        options = options or ProgramOptions()
        settings = {name: value for name, value in given.items() if value is not None}
        if settings:
            options = options.model_copy(update=settings)
        self.options = options
        self.type_signatures = type_signatures
        ordered = in_seed_order if options.input_order == "seed" else (lambda signature: signature)
        self.extract = dspy.Predict(
            speaker_signature(
                extraction_signature(
                    extract_signature(options.output_shape, options.input_order, fact_span=options.fact_span),
                    options,
                ),
                options,
            )
        )
        self.reflect = dspy.Predict(FindMissingFacts)
        self.attributes = attributes_predictor(options)
        if options.formulation == "pairs":
            self.label_pairs = dspy.Predict(ordered(LabelPairsSignature))
        if options.formulation == "entities":
            self.by_entity = dspy.Predict(ordered(ExtractEdgesByEntity))
        if options.gleaning:
            self.glean = dspy.Predict(GleanEdges)
        if options.retype == "ask":
            self.choose_types = dspy.Predict(ChooseTypes)
        if options.precision:
            self.verify = dspy.Predict(VerifyEdges)
        if options.entity_step:
            self.find_entities = dspy.Predict(ExtractEntities)

    max_reflexion_rounds: _ProgramOption[int] = _ProgramOption()
    closed_types: _ProgramOption[bool] = _ProgramOption()

    @property
    def output_shape(self) -> OutputShape:
        """The reply shape the extraction predictor was built for (fixed: it is in its signature)."""
        return self.options.output_shape

    def with_entity_step(self) -> EdgeExtractor:
        """This program (a copy: tuned predictors, demos and adapter kept) with the entity step added,
        so that it also takes episodes that come as text alone; itself when it has the step.

        The new `find_entities` predictor is the signature's own, uncompiled: a compiled program that
        ships the step tuned carries it in its `program.json` instead.
        """
        if self.options.entity_step:
            return self
        added = self.deepcopy()
        added.options = self.options.model_copy(update={"entity_step": True})
        added.find_entities = dspy.Predict(ExtractEntities)
        return added

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps `forward` runs, in order: those the program's options name."""
        return program_steps(self.options)

    @property
    def step_names(self) -> list[str]:
        """The steps' names, as a compiled program's manifest records them."""
        return [step.name for step in self.steps]

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        """DSPy's state of the predictors, plus the learned type signatures the program carries."""
        state = super().dump_state(json_mode=json_mode)
        if self.type_signatures is not None:
            state[STATE_KEY] = self.type_signatures.model_dump(mode="json")
        return state

    def load_state(self, state: dict[str, Any], **kwargs: Any) -> EdgeExtractor:
        super().load_state(state, **kwargs)
        if state.get(STATE_KEY) is not None:
            self.type_signatures = TypeSignatures.model_validate(state[STATE_KEY])
        return self

    def named_parameters(self) -> list[tuple[str, Any]]:
        """DSPy's parameter walk, less the predictors a search was told to leave alone (`tuned_only`).

        Every DSPy optimizer tunes each predictor this lists; a predictor that the program never calls
        on the search's data (`reflect` with no reflexion rounds, `attributes` when no type declares
        attributes) would only cost proposals and trials that cannot change the score. DSPy freezes a
        compiled sub-module (`_compiled`), not one predictor, hence this. Saving and loading see all
        three: `tuned_only(None)` is set again before any program is written.
        """
        frozen = self.__dict__.get("_search_frozen") or ()
        return [(name, param) for name, param in super().named_parameters() if name not in frozen]

    def tuned_only(self, names: Collection[str] | None) -> EdgeExtractor:
        """Hide every predictor not in `names` from optimizers (None shows all again); returns self."""
        if names is None:
            self.__dict__.pop("_search_frozen", None)
        else:
            self.__dict__["_search_frozen"] = frozenset(PREDICTOR_NAMES) - frozenset(names)
        return self

    def forward(self, episode: Episode | dict[str, Any] | None = None, **fields: Any) -> dspy.Prediction:
        read = as_episode(episode, model=episode_model(self.options.entity_step), **fields)
        if (adapter := getattr(self, ADAPTER_ATTRIBUTE, None)) is not None:
            adapter.check_served(dspy.settings.lm)
        extraction = Extraction(program=self, episode=read)
        for step in self.steps:
            step(extraction)
            if extraction.done:
                break
        return result_prediction(extraction.context.result(extraction.edges, extraction.found))

    def extract_many(
        self, episodes: list[Episode | dict[str, Any]], *, workers: int = 4
    ) -> list[ExtractionResult | BaseException]:
        """Extract many episodes concurrently; a failed episode yields its exception, in input order.

        Named apart from `dspy.Module.batch`, which takes `dspy.Example`s and returns predictions:
        that one stays as DSPy defines it, for DSPy's own tools.
        """
        return run_concurrently(lambda episode: self(episode).result, episodes, workers=workers)

    async def aextract(
        self, episode: Episode | dict[str, Any] | None = None, **fields: Any
    ) -> ExtractionResult:
        """Async extraction for servers: runs in a worker thread with the caller's DSPy settings."""
        prediction = await asyncio.to_thread(self, as_episode(episode, **fields))
        return prediction.result


__all__ = [
    "PREDICTOR_NAMES",
    "STEPS",
    "EdgeExtractor",
    "program_steps",
]
