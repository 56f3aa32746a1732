"""The steps an `EdgeExtractor` runs, in order, on one extraction's shared state.

A step has one job (show the episode, build the reply vocabulary, extract, glean, re-type, check
dates, fill attributes, ...) and a `name` that a compiled program's manifest records. It reads and
updates the `Extraction` it is given: the episode, the inputs the predictors see, the raw reply
edges, the clean edges, and the per-call `CallContext` where usage and warnings go. A step never
looks at an option to decide whether to run: `EdgeExtractor.steps` lists the steps the options
name, and `forward` runs that list. The predictors stay on the program (their names are what
`program.json` stores), and a step reaches them through `Extraction.program`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import dspy

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge, Entity, format_utc
from edgewise.modules.attribute_grounding import ground_attributes
from edgewise.modules.attributes import from_reply, in_reply_schema, per_edge, per_episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import OneEach, answers_each, call_step, predicting
from edgewise.modules.context import extraction_inputs
from edgewise.modules.coverage import coverage_schema, slot_edges, slot_entities
from edgewise.modules.date_guards import guard_dates
from edgewise.modules.default_vocabulary import DEFAULT_EDGE_TYPES
from edgewise.modules.entities import entity_type_inputs, found_entities
from edgewise.modules.fact_dates import dates_from_facts
from edgewise.modules.gleaning import ContinuationAdapter, exclusion_schema, written_triples
from edgewise.modules.pairs import candidate_pairs, pair_edges, pair_reply_schema
from edgewise.modules.postprocess import dedupe_edges, postprocess
from edgewise.modules.quoted_text import drop_quoted_facts
from edgewise.modules.retype import apply_answers, options_of, questions
from edgewise.modules.spans import numbered, sentences, span_edge
from edgewise.modules.speaker_marks import drop_marked_quoted
from edgewise.modules.speaker_names import add_speaker_names
from edgewise.modules.transcript import Transcript, recording
from edgewise.modules.type_signatures import Conflict, PairRule, TypeSignatures
from edgewise.modules.typed_grammar import typed_reply_schemas
from edgewise.modules.vocabulary import vocabulary_schemas
from edgewise.modules.votes import merge_votes
from edgewise.signatures.attributes_in_reply import ATTRIBUTES_INPUT, relationship_attributes
from edgewise.signatures.choose_types import answers_schema
from edgewise.signatures.extract_edges import with_missing_facts
from edgewise.signatures.replies import CompactEdge, ExtractedEdge, SpanEdge
from edgewise.signatures.schema import ReplySchemas, reply_schemas
from edgewise.signatures.verify_edges import verdicts_schema

if TYPE_CHECKING:
    from edgewise.modules.extractor import EdgeExtractor
    from edgewise.modules.options import ProgramOptions

STEP_EXTRACT: Final = "extract"
STEP_REFLEXION: Final = "reflexion"
STEP_PAIRS: Final = "pairs"
STEP_VERIFY: Final = "verify"
STEP_GLEAN: Final = "glean"
STEP_RETYPE: Final = "retype"
STEP_ENTITIES: Final = "entities"
"""The usage keys of the steps that call the model (`ExtractionResult.usage`), with
`modules.attributes.STEP_ATTRIBUTES`."""

# The reply properties the decoding grammar restricts to the episode's names and types, per shape.
_VOCABULARY_KEYS: Final[dict[str, tuple[str, str, str]]] = {
    "seed": ("sourceEntityName", "targetEntityName", "relationshipType"),
    "compact": ("source", "target", "type"),
    "compact-text-dates": ("source", "target", "type"),
}


@dataclass
class Extraction:
    """One extraction in progress: what the steps read and write, from the episode to the edges."""

    program: EdgeExtractor
    episode: Episode
    context: CallContext = field(default_factory=CallContext)
    inputs: dict[str, Any] = field(default_factory=dict)
    types: list[str] = field(default_factory=list)
    signatures: TypeSignatures | None = None
    rule: PairRule | None = None
    spans: list[str] | None = None
    vocabulary: ReplySchemas = field(default_factory=dict)
    transcript: Transcript | None = None
    raw: list[ExtractedEdge] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    conflicts: list[Conflict] | None = None
    found: list[Entity] | None = None
    """The entities the entity step found (None: the episode gave its own)."""
    done: bool = False
    """Set by a step after which nothing is left to do (an entity step that found too few entities)."""

    @property
    def options(self) -> ProgramOptions:
        return self.program.options

    def inputs_named(self, *names: str) -> dict[str, Any]:
        """The extraction predictor's inputs of these names, for a later step's predictor that reads
        part of what it was shown, as it was shown (the numbered sentences of a fact span too)."""
        return {name: self.inputs[name] for name in names}

    @property
    def pair_rule(self) -> PairRule:
        """The rule set by `ShowEpisode`, which every step list runs before the ones that need it."""
        if self.rule is None:
            raise RuntimeError("ShowEpisode runs before the steps that read the episode's pair rule")
        return self.rule


class Step(Protocol):
    """One job of a program, run on the extraction in progress; `name` is what the manifest records."""

    name: str

    def __call__(self, extraction: Extraction) -> None: ...


def sampling(options: ProgramOptions) -> dict[str, Any]:
    """The call's `config`: `samples` replies to one request (`n`), at the sampling temperature."""
    if options.sampling.samples == 1:
        return {}
    return {"n": options.sampling.samples, "temperature": options.sampling.temperature}


def merged(replies: list[list[ExtractedEdge]], extraction: Extraction) -> list[ExtractedEdge]:
    """One reply as it is; several merged by the vote threshold (`modules.votes`)."""
    if len(replies) == 1:
        return replies[0]
    return merge_votes(replies, extraction.episode, extraction.options.sampling.votes)


def seed_edge(edge: Any, episode: Episode, spans: list[str] | None) -> ExtractedEdge:
    """A reply edge in the seed's shape (the reply shapes are `ExtractedEdge` and those below)."""
    if isinstance(edge, CompactEdge):
        return edge.extracted(episode.reference_time)
    if isinstance(edge, SpanEdge):
        return span_edge(edge, spans or [])
    return edge


def with_default_types(episode: Episode, context: CallContext) -> Episode:
    """`episode` offered the default vocabulary, with a warning that says so."""
    context.note(
        "default_types",
        f"no relationship types given: the {len(DEFAULT_EDGE_TYPES)} default types were offered",
    )
    return episode.model_copy(update={"edge_types": list(DEFAULT_EDGE_TYPES)})


class OfferDefaultTypes:
    """An episode that lists no relationship types is offered the default vocabulary."""

    name = "default_types"

    def __call__(self, extraction: Extraction) -> None:
        if not extraction.episode.edge_types:
            extraction.episode = with_default_types(extraction.episode, extraction.context)


class FindEntities:
    """The entity step: an episode that came without entities has them found in its text first.

    Given entities are never replaced: with them, the step makes no call. With fewer than two found,
    no edge can join them, and the extraction ends with no edges and no further call.
    """

    name = "find_entities"

    def __call__(self, extraction: Extraction) -> None:
        episode = extraction.episode
        if episode.entities:
            return
        types = entity_type_inputs(episode)
        inputs = {
            "entity_types": types,
            "custom_prompt": episode.custom_prompt,
            "previous_episodes": list(episode.previous_episodes),
            "reference_time": format_utc(episode.reference_time),
            "episode_content": episode.episode_content,
        }
        declared = [entity_type.name for entity_type in episode.entity_types]
        schemas: ReplySchemas = {}
        if declared:
            schemas[("entities", "type")] = {
                "anyOf": [{"type": "string", "enum": declared}, {"type": "null"}]
            }
        with reply_schemas(schemas):
            prediction = call_step(
                STEP_ENTITIES, extraction.context, predicting(extraction.program.find_entities, **inputs)
            )
        found = found_entities(
            prediction.entities if prediction is not None else [], declared, extraction.context
        )
        extraction.found = found
        extraction.episode = episode.model_copy(update={"entities": found})
        extraction.done = len(found) < 2


class ShowEpisode:
    """The episode as the predictors' inputs, the types the reply may use and the entity-pair rule."""

    name = "inputs"

    def __call__(self, extraction: Extraction) -> None:
        episode, program, options = extraction.episode, extraction.program, extraction.options
        extraction.inputs = extraction_inputs(episode)
        extraction.types = (
            [edge_type.name for edge_type in episode.edge_types] if program.closed_types else []
        )
        extraction.signatures = program.type_signatures if options.typing.type_signatures else None
        extraction.rule = PairRule(
            episode, extraction.signatures, unseen_types_open=options.typing.unseen_types_open
        )


class NumberSentences:
    """The fact span: the episode shown as numbered sentences, and the reply names one by number."""

    name = "sentence_numbers"

    def __call__(self, extraction: Extraction) -> None:
        extraction.spans = sentences(extraction.episode.episode_content)
        extraction.inputs = {**extraction.inputs, "episode_content": numbered(extraction.spans)}


class ReplyVocabulary:
    """The extraction reply's schema limited to the episode's entity names, its types and sentences."""

    name = "vocabulary"

    def __call__(self, extraction: Extraction) -> None:
        names = [entity.name for entity in extraction.episode.entities]
        source, target, kind = _VOCABULARY_KEYS[extraction.program.output_shape]
        allowed: dict[str, list[Any]] = {source: names, target: names, kind: extraction.types}
        if extraction.spans is not None:
            allowed["sentence"] = list(range(1, len(extraction.spans) + 1))
        extraction.vocabulary = vocabulary_schemas(extraction.program.extract.signature, allowed)


class AttributesInReply:
    """Attributes written in the extraction reply: each edge's attribute fields by its type, and the
    types' attributes as an input."""

    name = "attributes_in_reply"

    def __call__(self, extraction: Extraction) -> None:
        kind = _VOCABULARY_KEYS[extraction.program.output_shape][2]
        signature = extraction.program.extract.signature
        extraction.vocabulary = in_reply_schema(signature, extraction.vocabulary, extraction.episode, kind)
        extraction.inputs = {
            **extraction.inputs,
            ATTRIBUTES_INPUT: relationship_attributes(extraction.episode),
        }


class TypedGrammar:
    """The reply grammar offers each entity pair only the types that may connect its entity types."""

    name = "typed_grammar"

    def __call__(self, extraction: Extraction) -> None:
        keys = _VOCABULARY_KEYS[extraction.program.output_shape]
        extraction.vocabulary = typed_reply_schemas(
            extraction.program.extract.signature,
            extraction.vocabulary,
            extraction.episode,
            extraction.pair_rule,
            extraction.types,
            keys,
        )


def extract_call(extraction: Extraction, missing_facts: list[str]) -> list[ExtractedEdge]:
    """One extraction call limited to the episode's vocabulary; a re-extraction (with `missing_facts`)
    adds the hints to the signature. With a fact span each edge's fact is its sentence."""
    program = extraction.program
    hints: dict[str, Any] = {}
    if missing_facts:
        hints = {"signature": with_missing_facts(program.extract.signature), "missing_facts": missing_facts}
    with reply_schemas(extraction.vocabulary):
        ask = predicting(program.extract, sampling(extraction.options), **extraction.inputs, **hints)
        prediction = call_step(STEP_EXTRACT, extraction.context, ask)
    if prediction is None:
        return []
    replies = [
        [seed_edge(edge, extraction.episode, extraction.spans) for edge in (reply or [])]
        for reply in prediction.completions.edges
    ]
    return merged(replies, extraction)


class ExtractEdges:
    """The edges formulation: one call that writes the edge list (its chat kept for gleaning)."""

    name = "extract"

    def __call__(self, extraction: Extraction) -> None:
        with recording() as transcript:
            extraction.raw = extract_call(extraction, [])
        extraction.transcript = transcript


class ExtractByEntity:
    """Coverage by entity: one call whose reply has a slot of outgoing edges per entity."""

    name = "extract_by_entity"

    def __call__(self, extraction: Extraction) -> None:
        with recording() as transcript:
            extraction.raw = self._edges(extraction)
        extraction.transcript = transcript

    def _edges(self, extraction: Extraction) -> list[ExtractedEdge]:
        episode = extraction.episode
        slots = slot_entities(episode, extraction.context)
        if not slots:
            return []
        schema = coverage_schema(episode, slots, extraction.pair_rule, extraction.types)
        with reply_schemas({("by_entity",): schema}):
            ask = predicting(extraction.program.by_entity, sampling(extraction.options), **extraction.inputs)
            prediction = call_step(STEP_EXTRACT, extraction.context, ask)
        if prediction is None:
            return []
        replies = prediction.completions.by_entity
        return merged([slot_edges(list(reply or []), slots) for reply in replies], extraction)


class LabelPairs:
    """The pairwise formulation: one call that labels every candidate pair (a type or NONE)."""

    name = "label_pairs"

    def __call__(self, extraction: Extraction) -> None:
        extraction.raw = self._edges(extraction)

    def _edges(self, extraction: Extraction) -> list[ExtractedEdge]:
        options, context = extraction.options, extraction.context
        pairs = candidate_pairs(
            extraction.episode, extraction.pair_rule, extraction.types, options.task.max_pairs, context
        )
        if not pairs:
            return []
        ask = predicting(
            extraction.program.label_pairs, **extraction.inputs, candidate_pairs=[pair.text for pair in pairs]
        )
        with reply_schemas({("pairs",): pair_reply_schema(pairs)}):
            reply = call_step(STEP_PAIRS, context, ask)
        if reply is None:
            return []
        return pair_edges(list(reply.pairs or []), pairs, context)


class Glean:
    """Gleaning rounds: each continues the chat and may add only triples not yet written."""

    name = "glean"

    def __call__(self, extraction: Extraction) -> None:
        extraction.raw = extraction.raw + self._found(extraction)

    def _found(self, extraction: Extraction) -> list[ExtractedEdge]:
        options, raw, transcript = extraction.options, extraction.raw, extraction.transcript
        found: list[ExtractedEdge] = []
        for _ in range(options.glean.turns):
            turns = transcript.continued() if transcript is not None else None
            if turns is None:
                break
            schema = exclusion_schema(
                extraction.episode,
                written_triples(raw + found, extraction.episode),
                extraction.pair_rule,
                extraction.types,
                forced=options.glean.forced,
                typed=options.typing.typed_grammar,
            )
            with (
                recording() as this_turn,
                dspy.context(adapter=ContinuationAdapter()),
                reply_schemas({("edges",): schema}),
            ):
                ask = predicting(extraction.program.glean, earlier_turns=turns)
                reply = call_step(STEP_GLEAN, extraction.context, ask)
            more = list(reply.edges or []) if reply is not None else []
            if not more:
                break
            found.extend(more)
            transcript = this_turn
        return found


class Reflexion:
    """Reflexion rounds: ask what facts were missed, then extract again with them as hints."""

    name = "reflexion"

    def __call__(self, extraction: Extraction) -> None:
        for _ in range(extraction.program.max_reflexion_rounds):
            missing = self._missing_facts(extraction)
            if not missing:
                break
            extraction.raw = extraction.raw + extract_call(extraction, missing)

    def _missing_facts(self, extraction: Extraction) -> list[str]:
        ask = predicting(
            extraction.program.reflect,
            **extraction.inputs_named("previous_episodes", "episode_content", "entities"),
            extracted_facts=[edge.fact for edge in extraction.raw],
        )
        reply = call_step(STEP_REFLEXION, extraction.context, ask)
        if reply is None:
            return []
        return [fact for fact in (reply.missing_facts or []) if fact.strip()]


class DropMarkedQuoted:
    """Speaker marks: the reply edges marked as stated only by quoted text are dropped."""

    name = "speaker_marks"

    def __call__(self, extraction: Extraction) -> None:
        extraction.raw = drop_marked_quoted(extraction.raw, extraction.context)


class PostProcess:
    """The raw edges made clean edges between the episode's entities (`modules.postprocess`); with
    re-typing by question, the edges whose type cannot connect their ends are kept as conflicts."""

    name = "postprocess"

    def __call__(self, extraction: Extraction) -> None:
        options = extraction.options
        extraction.conflicts = [] if options.typing.retype == "ask" else None
        edges, cleanup_warnings = postprocess(
            extraction.raw,
            extraction.episode,
            closed_types=extraction.program.closed_types,
            type_signatures=extraction.signatures,
            unseen_types_open=options.typing.unseen_types_open,
            retype=options.typing.retype,
            conflicts=extraction.conflicts,
        )
        extraction.context.warn_all(cleanup_warnings)
        extraction.edges = edges


class RetypeByQuestion:
    """Re-typing by question: one multiple-choice answer per conflicting edge, in one call."""

    name = "retype"

    def __call__(self, extraction: Extraction) -> None:
        conflicts = extraction.conflicts
        if not conflicts:
            return
        ask = predicting(
            extraction.program.choose_types,
            **extraction.inputs_named("relationship_types", "previous_episodes", "episode_content"),
            questions=questions(conflicts),
        )
        with reply_schemas(answers_schema(options_of(conflicts))):
            reply = call_step(STEP_RETYPE, extraction.context, ask)
        answers = list(reply.answers or []) if reply is not None else []
        retyped = apply_answers(conflicts, answers, extraction.context)
        extraction.edges = dedupe_edges(extraction.edges + retyped, extraction.episode, extraction.context)


@dataclass
class EdgesStep:
    """A step whose one job is a new list of clean edges, which `rule` makes from the extraction.

    The checks and fills after post-processing are all such steps. Each rule keeps its own module's
    arguments (its tests and replays call it without an extraction); the step's `rule` says which
    parts of the extraction it is given.
    """

    name: str
    rule: Callable[[Extraction], list[Edge]]

    def __call__(self, extraction: Extraction) -> None:
        extraction.edges = self.rule(extraction)


QUOTED_TEXT_CHECK: Final = EdgesStep(
    "quoted_text_check", lambda x: drop_quoted_facts(x.edges, x.episode, x.context)
)
"""Edges whose only evidence is quoted, forwarded or fake-instruction text are dropped."""

DATES_FROM_FACTS: Final = EdgesStep(
    "fact_dates", lambda x: dates_from_facts(x.edges, x.episode.reference_time, x.context)
)
"""A default or missing validAt replaced by the time the fact itself names."""

DATE_GUARDS: Final = EdgesStep(
    "date_guards",
    lambda x: guard_dates(x.edges, x.episode.episode_content, x.episode.reference_time, x.context),
)
"""Dates read from a thing's number, a called-off plan, an ended fact or an end are undone."""

SPEAKER_NAMES: Final = EdgesStep("speaker_names", lambda x: add_speaker_names(x.edges, x.episode, x.context))
"""In a labelled transcript, the alias edge from a name to the speaker label it is called by."""


_VERDICT_EACH: Final = OneEach("stated", "verify_mismatch", "the precision step", "edges", "every edge kept")
"""The precision step answers one verdict per edge."""


class Verify:
    """The precision step: keep the edges the model says the current episode states.

    A reply with another number of answers than edges, or none, keeps every edge (with a warning):
    the step drops only what it was told to drop.
    """

    name = "verify"

    def __call__(self, extraction: Extraction) -> None:
        if extraction.edges:
            extraction.edges = self._kept(extraction, extraction.edges)

    def _kept(self, extraction: Extraction, edges: list[Edge]) -> list[Edge]:
        context = extraction.context
        facts = [
            f"{number}. {edge.source_entity_name} -{edge.relationship_type}-> {edge.target_entity_name}: "
            f"{edge.fact}"
            for number, edge in enumerate(edges, 1)
        ]
        ask = predicting(
            extraction.program.verify,
            **extraction.inputs_named("previous_episodes", "episode_content"),
            candidate_facts=facts,
        )
        verdicts = answers_each(
            STEP_VERIFY, context, ask, verdicts_schema(len(edges)), len(edges), _VERDICT_EACH
        )
        if verdicts is None:
            return edges
        kept: list[Edge] = []
        for edge, stated in zip(edges, verdicts, strict=True):
            if stated:
                kept.append(edge)
            else:
                context.note(
                    "not_stated",
                    "dropped: the precision step found it not stated in the current episode",
                    edge,
                )
        return kept


ATTRIBUTES_PER_EDGE: Final = EdgesStep(
    "attributes_per_edge", lambda x: per_edge(x.program.attributes, x.edges, x.episode, x.context)
)
"""One attribute call per edge whose type declares attributes (the seed's way)."""

ATTRIBUTES_PER_EPISODE: Final = EdgesStep(
    "attributes_per_episode", lambda x: per_episode(x.program.attributes, x.edges, x.episode, x.context)
)
"""One attribute call for all of an episode's edges whose types declare attributes."""

ATTRIBUTES_FROM_REPLY: Final = EdgesStep(
    "attributes_from_reply", lambda x: from_reply(x.edges, x.raw, x.episode, x.context)
)
"""The attributes the extraction reply wrote, checked and put on the clean edges."""

ATTRIBUTE_GROUNDING: Final = EdgesStep(
    "attribute_grounding", lambda x: ground_attributes(x.edges, x.episode, x.context)
)
"""A text attribute value whose words the episode does not contain is dropped."""
