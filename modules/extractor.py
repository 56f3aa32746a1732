# Over 400 lines: the program's steps, in the order forward() runs them.
"""`EdgeExtractor`: the DSPy program that turns an episode into temporal graph edges.

It composes the three signatures (extract, optional reflexion rounds, attributes) with plain Python
and ends in the deterministic `postprocess`. Its predictors are what optimizers tune and what a
compiled program's `program.json` stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any, Final

import dspy

from edgewise.modules.attribute_grounding import ground_attributes
from edgewise.modules.attributes import (
    attributes_predictor,
    check_attribute_options,
    episode_extraction,
    extraction_signature,
    fill_attributes,
)
from edgewise.modules.calls import call_step, predicting
from edgewise.modules.concurrency import run_concurrently
from edgewise.modules.context import extraction_inputs
from edgewise.modules.coverage import coverage_schema, slot_edges, slot_entities
from edgewise.modules.date_guards import guard_dates
from edgewise.modules.default_vocabulary import DEFAULT_EDGE_TYPES
from edgewise.modules.fact_dates import dates_from_facts
from edgewise.modules.gleaning import ContinuationAdapter, exclusion_schema, written_triples
from edgewise.modules.options import ProgramOptions
from edgewise.modules.pairs import candidate_pairs, pair_edges, pair_reply_schema
from edgewise.modules.postprocess import dedupe_edges, postprocess
from edgewise.modules.quoted_text import drop_quoted_facts
from edgewise.modules.retype import apply_answers, options_of, questions
from edgewise.modules.spans import numbered, sentences, span_edge
from edgewise.modules.speaker_marks import drop_marked_quoted, speaker_signature
from edgewise.modules.speaker_names import add_speaker_names
from edgewise.modules.transcript import Transcript, recording
from edgewise.modules.type_signatures import STATE_KEY, Conflict, PairRule, TypeSignatures
from edgewise.modules.typed_grammar import typed_reply_schemas
from edgewise.modules.vocabulary import vocabulary_schemas
from edgewise.modules.votes import merge_votes
from edgewise.signatures.choose_types import ChooseTypes, answers_schema
from edgewise.signatures.episode import Episode
from edgewise.signatures.extract_by_entity import ExtractEdgesByEntity
from edgewise.signatures.extract_edges import (
    OUTPUT_SHAPES,
    OutputShape,
    extract_signature,
    in_seed_order,
    with_missing_facts,
)
from edgewise.signatures.find_missing_facts import FindMissingFacts
from edgewise.signatures.glean_edges import GleanEdges
from edgewise.signatures.label_pairs import LabelPairs
from edgewise.signatures.replies import CompactEdge, ExtractedEdge, SpanEdge
from edgewise.signatures.schema import ReplySchemas, reply_schemas
from edgewise.signatures.types import Edge, ExtractionResult, ExtractionWarning, StepUsage
from edgewise.signatures.verify_edges import VerifyEdges, verdicts_schema

STEP_EXTRACT: Final = "extract"
STEP_REFLEXION: Final = "reflexion"
STEP_PAIRS: Final = "pairs"
STEP_VERIFY: Final = "verify"
STEP_GLEAN: Final = "glean"
STEP_RETYPE: Final = "retype"
PREDICTOR_NAMES: Final = (
    "extract", "reflect", "attributes", "label_pairs", "by_entity", "glean", "choose_types", "verify",
)  # fmt: skip
"""The predictors an `EdgeExtractor` may have, as `named_predictors` names them (`label_pairs` only
with the pairwise formulation, `by_entity` with coverage by entity, `glean` with gleaning,
`choose_types` with re-typing by question, `verify` with the precision step)."""


# The reply properties the decoding grammar restricts to the episode's names and types, per shape.
_VOCABULARY_KEYS: Final[dict[str, tuple[str, str, str]]] = {
    "seed": ("sourceEntityName", "targetEntityName", "relationshipType"),
    "compact": ("source", "target", "type"),
    "compact-text-dates": ("source", "target", "type"),
}


def as_episode(episode: Episode | dict[str, Any] | None = None, **fields: Any) -> Episode:
    """Accept an `Episode`, its JSON dict, or its fields as keywords."""
    if isinstance(episode, Episode):
        return episode
    if episode is not None:
        return Episode.model_validate(episode)
    return Episode.model_validate(fields)


def count_parse_failures(warnings: list[ExtractionWarning]) -> int:
    return sum(1 for warning in warnings if warning.code == "parse_failure")


def result_prediction(result: ExtractionResult) -> dspy.Prediction:
    """The uniform return value of every edgewise program: edges for metrics, the full result for users."""
    return dspy.Prediction(edges=result.edges, result=result)


class EdgeExtractor(dspy.Module):
    """Extract edges between an episode's known entities, with dates, usage and warnings.

    The reply schema allows only the episode's entity names (the seed's rule 1) and, with
    `closed_types`, only its RELATIONSHIP TYPES (`vocabulary_schemas`): a server that takes a JSON
    schema decodes nothing else, and post-processing drops what a server let through. `closed_types=False`
    keeps the seed's open vocabulary, for callers whose type list names only the most important types.
    `output_shape` is the reply the model writes (see `extract_signature`); results always have the
    seed's shape.
    """

    def __init__(
        self,
        max_reflexion_rounds: int = 0,
        *,
        closed_types: bool = True,
        output_shape: OutputShape = "seed",
        options: ProgramOptions | None = None,
        type_signatures: TypeSignatures | None = None,
    ) -> None:
        super().__init__()
        if max_reflexion_rounds < 0:
            raise ValueError("max_reflexion_rounds must be >= 0")
        if output_shape not in OUTPUT_SHAPES:
            raise ValueError(f"unknown output shape {output_shape!r}; known: {', '.join(OUTPUT_SHAPES)}")
        options = options or ProgramOptions()
        if options.formulation != "edges" and (max_reflexion_rounds or output_shape != "seed"):
            raise ValueError(
                f"the {options.formulation} formulation writes the seed's shape and runs no reflexion rounds"
            )
        check_attribute_options(options, output_shape)
        self.output_shape = output_shape
        self.options = options
        self.type_signatures = type_signatures
        ordered = in_seed_order if options.input_order == "seed" else (lambda signature: signature)
        self.extract = dspy.Predict(
            speaker_signature(
                extraction_signature(
                    extract_signature(output_shape, options.input_order, fact_span=options.fact_span), options
                ),
                options,
            )
        )
        self.reflect = dspy.Predict(FindMissingFacts)
        self.attributes = attributes_predictor(options)
        if options.formulation == "pairs":
            self.label_pairs = dspy.Predict(ordered(LabelPairs))
        if options.formulation == "entities":
            self.by_entity = dspy.Predict(ordered(ExtractEdgesByEntity))
        if options.gleaning:
            self.glean = dspy.Predict(GleanEdges)
        if options.retype == "ask":
            self.choose_types = dspy.Predict(ChooseTypes)
        if options.precision:
            self.verify = dspy.Predict(VerifyEdges)
        self.max_reflexion_rounds = max_reflexion_rounds
        self.closed_types = closed_types

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
        episode = as_episode(episode, **fields)
        options = self.options
        usage: dict[str, StepUsage] = {}
        warnings: list[ExtractionWarning] = []
        if options.default_types and not episode.edge_types:
            episode = with_default_types(episode, warnings)
        inputs = extraction_inputs(episode)
        names = [entity.name for entity in episode.entities]
        types = [edge_type.name for edge_type in episode.edge_types] if self.closed_types else []
        signatures = self.type_signatures if options.type_signatures else None
        rule = PairRule(episode, signatures, unseen_types_open=options.unseen_types_open)
        if options.formulation == "pairs":
            raw = self._label_pairs(episode, inputs, rule, types, usage, warnings)
        else:
            spans = sentences(episode.episode_content) if options.fact_span else None
            source, target, kind = _VOCABULARY_KEYS[self.output_shape]
            allowed: dict[str, list[Any]] = {source: names, target: names, kind: types}
            if spans is not None:
                inputs = {**inputs, "episode_content": numbered(spans)}
                allowed["sentence"] = list(range(1, len(spans) + 1))
            vocabulary = vocabulary_schemas(self.extract.signature, allowed)
            vocabulary, inputs = episode_extraction(
                self.extract.signature, vocabulary, inputs, episode, options, kind
            )
            if options.typed_grammar:
                vocabulary = typed_reply_schemas(
                    self.extract.signature, vocabulary, episode, rule, types, (source, target, kind)
                )
            with recording() as transcript:
                if options.formulation == "entities":
                    raw = self._by_entity(episode, inputs, rule, types, usage, warnings)
                else:
                    raw = self._extract(episode, inputs, vocabulary, [], spans, usage, warnings)
            raw = raw + self._gleaned(episode, transcript, raw, rule, types, usage, warnings)
            for _ in range(self.max_reflexion_rounds):
                missing = self._missing_facts(inputs, raw, usage, warnings)
                if not missing:
                    break
                raw = raw + self._extract(episode, inputs, vocabulary, missing, spans, usage, warnings)
        if options.speaker_marks:
            raw = drop_marked_quoted(raw, warnings)
        conflicts: list[Conflict] | None = [] if options.retype == "ask" else None
        edges, cleanup_warnings = postprocess(
            raw,
            episode,
            closed_types=self.closed_types,
            type_signatures=signatures,
            unseen_types_open=options.unseen_types_open,
            retype=options.retype,
            conflicts=conflicts,
        )
        warnings.extend(cleanup_warnings)
        if conflicts:
            retyped = self._choose_types(conflicts, inputs, usage, warnings)
            edges = dedupe_edges(edges + retyped, episode, warnings)
        if options.quoted_text_check:
            edges = drop_quoted_facts(edges, episode, warnings)
        if options.fact_dates:
            edges = dates_from_facts(edges, episode.reference_time, warnings)
        if options.date_guards:
            edges = guard_dates(edges, episode.episode_content, episode.reference_time, warnings)
        if options.speaker_names:
            edges = add_speaker_names(edges, episode, warnings)
        if options.precision and edges:
            edges = self._verify(edges, inputs, usage, warnings)
        edges = fill_attributes(self.options, self.attributes, edges, raw, episode, usage, warnings)
        if options.attribute_grounding:
            edges = ground_attributes(edges, episode, warnings)
        return result_prediction(
            ExtractionResult(
                edges=edges, warnings=warnings, usage=usage, parse_failures=count_parse_failures(warnings)
            )
        )

    def _sampling(self) -> dict[str, Any]:
        """The call's `config`: `samples` replies to one request (`n`), at the sampling temperature."""
        if self.options.samples == 1:
            return {}
        return {"n": self.options.samples, "temperature": self.options.sample_temperature}

    def _merged(self, replies: list[list[ExtractedEdge]], episode: Episode) -> list[ExtractedEdge]:
        """One reply as it is; several merged by the vote threshold (`modules.votes`)."""
        if len(replies) == 1:
            return replies[0]
        return merge_votes(replies, episode, self.options.votes)

    def _by_entity(
        self,
        episode: Episode,
        inputs: dict[str, Any],
        rule: PairRule,
        types: list[str],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[ExtractedEdge]:
        """Coverage by entity: one call whose reply has a slot of outgoing edges per entity."""
        slots = slot_entities(episode, warnings)
        if not slots:
            return []
        schema = coverage_schema(episode, slots, rule, types)
        with reply_schemas({("by_entity",): schema}):
            ask = predicting(self.by_entity, self._sampling(), **inputs)
            prediction = call_step(STEP_EXTRACT, usage, warnings, ask)
        if prediction is None:
            return []
        replies = prediction.completions.by_entity
        return self._merged([slot_edges(list(reply or []), slots) for reply in replies], episode)

    def _gleaned(
        self,
        episode: Episode,
        transcript: Transcript,
        raw: list[ExtractedEdge],
        rule: PairRule,
        types: list[str],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[ExtractedEdge]:
        """Gleaning rounds: each continues the chat and may add only triples not yet written."""
        found: list[ExtractedEdge] = []
        for _ in range(self.options.gleaning):
            turns = transcript.continued()
            if turns is None:
                break
            schema = exclusion_schema(
                episode,
                written_triples(raw + found, episode),
                rule,
                types,
                forced=self.options.glean_forced,
                typed=self.options.typed_grammar,
            )
            with (
                recording() as this_turn,
                dspy.context(adapter=ContinuationAdapter()),
                reply_schemas({("edges",): schema}),
            ):
                reply = call_step(STEP_GLEAN, usage, warnings, predicting(self.glean, earlier_turns=turns))
            more = list(reply.edges or []) if reply is not None else []
            if not more:
                break
            found.extend(more)
            transcript = this_turn
        return found

    def _choose_types(
        self,
        conflicts: list[Conflict],
        inputs: dict[str, Any],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[Edge]:
        """Re-typing by question: one multiple-choice answer per conflicting edge, in one call."""
        ask = predicting(
            self.choose_types,
            relationship_types=inputs["relationship_types"],
            previous_episodes=inputs["previous_episodes"],
            episode_content=inputs["episode_content"],
            questions=questions(conflicts),
        )
        with reply_schemas(answers_schema(options_of(conflicts))):
            reply = call_step(STEP_RETYPE, usage, warnings, ask)
        answers = list(reply.answers or []) if reply is not None else []
        return apply_answers(conflicts, answers, warnings)

    def _label_pairs(
        self,
        episode: Episode,
        inputs: dict[str, Any],
        rule: PairRule,
        types: list[str],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[ExtractedEdge]:
        """One call that labels every candidate pair (a type or NONE); the kept ones become edges."""
        pairs = candidate_pairs(episode, rule, types, self.options.max_pairs, warnings)
        if not pairs:
            return []
        ask = predicting(self.label_pairs, **inputs, candidate_pairs=[pair.text for pair in pairs])
        with reply_schemas({("pairs",): pair_reply_schema(pairs)}):
            reply = call_step(STEP_PAIRS, usage, warnings, ask)
        if reply is None:
            return []
        return pair_edges(list(reply.pairs or []), pairs, warnings)

    def _verify(
        self,
        edges: list[Edge],
        inputs: dict[str, Any],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[Edge]:
        """The precision step: keep the edges the model says the current episode states.

        A reply with another number of answers than edges, or none, keeps every edge (with a
        warning): the step drops only what it was told to drop.
        """
        facts = [
            f"{number}. {edge.source_entity_name} -{edge.relationship_type}-> {edge.target_entity_name}: "
            f"{edge.fact}"
            for number, edge in enumerate(edges, 1)
        ]
        ask = predicting(
            self.verify,
            previous_episodes=inputs["previous_episodes"],
            episode_content=inputs["episode_content"],
            candidate_facts=facts,
        )
        with reply_schemas(verdicts_schema(len(edges))):
            reply = call_step(STEP_VERIFY, usage, warnings, ask)
        if reply is None:
            return edges
        verdicts = list(reply.stated or [])
        if len(verdicts) != len(edges):
            warnings.append(
                ExtractionWarning(
                    code="verify_mismatch",
                    message=f"the precision step answered {len(verdicts)} times for {len(edges)} edges: "
                    "every edge kept",
                )
            )
            return edges
        kept: list[Edge] = []
        for edge, stated in zip(edges, verdicts, strict=True):
            if stated:
                kept.append(edge)
            else:
                warnings.append(
                    ExtractionWarning(
                        code="not_stated",
                        message="dropped: the precision step found it not stated in the current episode",
                        edge=edge.to_json_dict(),
                    )
                )
        return kept

    def _extract(
        self,
        episode: Episode,
        inputs: dict[str, Any],
        vocabulary: ReplySchemas,
        missing_facts: list[str],
        spans: list[str] | None,
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[ExtractedEdge]:
        """One extraction call limited to the episode's `vocabulary`; a re-extraction (with
        `missing_facts`) adds the hints to the signature. With `spans` (the episode's sentences) each
        edge's fact is its sentence."""
        hints: dict[str, Any] = {}
        if missing_facts:
            hints = {"signature": with_missing_facts(self.extract.signature), "missing_facts": missing_facts}
        with reply_schemas(vocabulary):
            ask = predicting(self.extract, self._sampling(), **inputs, **hints)
            prediction = call_step(STEP_EXTRACT, usage, warnings, ask)
        if prediction is None:
            return []
        replies = [
            [_seed_edge(edge, episode, spans) for edge in (reply or [])]
            for reply in prediction.completions.edges
        ]
        return self._merged(replies, episode)

    def _missing_facts(
        self,
        inputs: dict[str, Any],
        raw: list[ExtractedEdge],
        usage: dict[str, StepUsage],
        warnings: list[ExtractionWarning],
    ) -> list[str]:
        ask = predicting(
            self.reflect,
            previous_episodes=inputs["previous_episodes"],
            episode_content=inputs["episode_content"],
            entities=inputs["entities"],
            extracted_facts=[edge.fact for edge in raw],
        )
        reply = call_step(STEP_REFLEXION, usage, warnings, ask)
        if reply is None:
            return []
        return [fact for fact in (reply.missing_facts or []) if fact.strip()]

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


def with_default_types(episode: Episode, warnings: list[ExtractionWarning]) -> Episode:
    """`episode` offered the default vocabulary, with a warning that says so."""
    warnings.append(
        ExtractionWarning(
            code="default_types",
            message=f"no relationship types given: the {len(DEFAULT_EDGE_TYPES)} default types were offered",
        )
    )
    return episode.model_copy(update={"edge_types": list(DEFAULT_EDGE_TYPES)})


def _seed_edge(edge: Any, episode: Episode, spans: list[str] | None) -> ExtractedEdge:
    """A reply edge in the seed's shape (the reply shapes are `ExtractedEdge` and those below)."""
    if isinstance(edge, CompactEdge):
        return edge.extracted(episode.reference_time)
    if isinstance(edge, SpanEdge):
        return span_edge(edge, spans or [])
    return edge
