"""What a program asks the model to do: the options `--optimizer program` chooses among per model.

Instructions and demos are tuned by the other optimizers; these options change the task itself: the
formulation (write edges, label candidate entity pairs, or list each entity's edges), whether
relationship types are checked against entity types and what happens to an edge that fails the
check, whether the model gets a second turn for what it missed, how many replies are sampled and
merged, whether the fact is the model's words or the episode's sentence, whether a second call
verifies each edge, how dates in a fact are read, the order the inputs are shown in, how edge
attributes are filled, and how edges that only quoted or forwarded text states are kept out. They
are recorded in a compiled program's manifest and rebuilt from it; every default is the behaviour
of the uncompiled program, so a manifest written before an option existed loads unchanged.

The options come in groups, each validating its own rules (`Formulation`, `Sampling`, `Gleaning`,
`Typing`, `Dates`, `AttributeFilling`, `Checks`); `ProgramOptions` checks only the rules that join
two groups. Every option keeps its flat name (`samples`, `gleaning`, `max_reflexion_rounds`): a
manifest, the optimizer's levers and `ProgramOptions(samples=3)` use it, it is read as an attribute
(`options.samples`), and `model_dump` writes the flat names, the form every manifest has, so an
artifact stays readable by the version that wrote it and by this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from edgewise.signatures.extract_edges import OUTPUT_SHAPES, OutputShape

Formulation_ = Literal["edges", "pairs", "entities"]
InputOrder = Literal["shared-first", "seed"]
Retype = Literal["off", "unique", "ask"]
AttributeFormulation = Literal["per-edge", "per-episode", "in-extraction"]

FORMULATIONS: Final[tuple[Formulation_, ...]] = ("edges", "pairs", "entities")
INPUT_ORDERS: Final[tuple[InputOrder, ...]] = ("shared-first", "seed")
RETYPES: Final[tuple[Retype, ...]] = ("off", "unique", "ask")
ATTRIBUTE_FORMULATIONS: Final[tuple[AttributeFormulation, ...]] = ("per-edge", "per-episode", "in-extraction")
DEFAULT_MAX_PAIRS: Final = 24
"""Candidate entity pairs the pairwise program labels at most per episode (see `modules.pairs`)."""
MAX_SAMPLES: Final = 8
"""Replies one extraction may sample (one request with `n`; a local server needs as many slots)."""


class _Group(BaseModel):
    """One group of options: frozen, no unknown keys, the defaults the uncompiled program's."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Formulation(_Group):
    """What the model is asked to write, and in which order it reads the inputs."""

    formulation: Formulation_ = "edges"
    input_order: InputOrder = "shared-first"
    max_pairs: int = Field(default=DEFAULT_MAX_PAIRS, ge=1)
    fact_span: bool = False
    output_shape: OutputShape = "seed"
    max_reflexion_rounds: int = 0
    entity_step: bool = False

    @model_validator(mode="before")
    @classmethod
    def _known_task(cls, data: Any) -> Any:
        """The messages `EdgeExtractor` has always given for a bad reflexion count or reply shape."""
        if isinstance(data, dict):
            rounds = data.get("max_reflexion_rounds", 0)
            if isinstance(rounds, int) and rounds < 0:
                raise ValueError("max_reflexion_rounds must be >= 0")
            shape = data.get("output_shape", "seed")
            if shape not in OUTPUT_SHAPES:
                raise ValueError(f"unknown output shape {shape!r}; known: {', '.join(OUTPUT_SHAPES)}")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.fact_span and self.formulation != "edges":
            raise ValueError("a fact span is a reply of the edges formulation")
        if self.formulation != "edges" and (self.max_reflexion_rounds or self.output_shape != "seed"):
            raise ValueError(
                f"the {self.formulation} formulation writes the seed's shape and runs no reflexion rounds"
            )
        return self


class Sampling(_Group):
    """Replies sampled in one request, and how many of them must write an edge to keep it."""

    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    votes: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    temperature: float = Field(default=0.7, gt=0, le=2)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.votes > self.samples:
            raise ValueError(f"votes ({self.votes}) cannot exceed samples ({self.samples})")
        return self


class Gleaning(_Group):
    """Continuation turns that ask for what the reply missed."""

    turns: int = Field(default=0, ge=0, le=2)
    forced: bool = False


class Typing(_Group):
    """Which relationship types an edge may have, and what becomes of one that cannot connect its ends."""

    closed_types: bool = True
    type_signatures: bool = False
    unseen_types_open: bool = False
    typed_grammar: bool = False
    retype: Retype = "off"
    default_types: bool = False


class Dates(_Group):
    """How the dates the model wrote are read again from its facts and the episode."""

    from_facts: bool = False
    guards: bool = False


class AttributeFilling(_Group):
    """How the attributes relationship types declare are filled, and whether values must be in the text."""

    formulation: AttributeFormulation = "per-edge"
    grounding: bool = False


class Checks(_Group):
    """Steps that check or add edges after extraction: precision, quoted text, speaker marks and names."""

    precision: bool = False
    quoted_text_check: bool = False
    speaker_marks: bool = False
    speaker_names: bool = False


FLAT_NAMES: Final[dict[str, tuple[str, str]]] = {
    "formulation": ("task", "formulation"),
    "type_signatures": ("typing", "type_signatures"),
    "unseen_types_open": ("typing", "unseen_types_open"),
    "typed_grammar": ("typing", "typed_grammar"),
    "retype": ("typing", "retype"),
    "gleaning": ("glean", "turns"),
    "glean_forced": ("glean", "forced"),
    "samples": ("sampling", "samples"),
    "votes": ("sampling", "votes"),
    "sample_temperature": ("sampling", "temperature"),
    "fact_span": ("task", "fact_span"),
    "precision": ("checks", "precision"),
    "fact_dates": ("dates", "from_facts"),
    "date_guards": ("dates", "guards"),
    "speaker_names": ("checks", "speaker_names"),
    "input_order": ("task", "input_order"),
    "max_pairs": ("task", "max_pairs"),
    "attributes": ("attribute_filling", "formulation"),
    "default_types": ("typing", "default_types"),
    "attribute_grounding": ("attribute_filling", "grounding"),
    "quoted_text_check": ("checks", "quoted_text_check"),
    "speaker_marks": ("checks", "speaker_marks"),
    "max_reflexion_rounds": ("task", "max_reflexion_rounds"),
    "output_shape": ("task", "output_shape"),
    "closed_types": ("typing", "closed_types"),
    "entity_step": ("task", "entity_step"),
}
"""Each option's flat name (a manifest's, the optimizer's, a keyword's) -> its group and its name there,
in the order `model_dump` writes them (the order manifests have always listed them in)."""


class ProgramOptions(BaseModel):
    """The task an `EdgeExtractor` sets its model; the defaults are the uncompiled program (`baseline-v1`).

    - `formulation`: `edges` (write the edge list), `pairs` (label each candidate pair with a type or
      NONE, the relation-extraction literature's formulation; `modules.pairs`), or `entities` (one
      reply slot per entity, in order of first mention, holding its outgoing edges; `modules.coverage`).
    - `type_signatures`: check each edge's type against the entity types it may connect (the episode's
      `sourceTypes`/`targetTypes`, else what the program learned from train): a reversed edge is
      flipped, an impossible one dropped or re-typed, each with a warning (`modules.type_signatures`).
    - `unseen_types_open`: a learned signature leaves alone an edge with an entity type the train split
      never used (a user's `Place` where train says `Location`); declared signatures stay strict.
    - `typed_grammar`: the reply grammar writes each edge's entity pair first and then offers only the
      relationship types that may connect the pair's entity types (`modules.typed_grammar`), so the
      model chooses a fitting type instead of writing one that `type_signatures` would drop.
    - `retype`: what becomes of an edge whose type cannot connect its entity types: `off` drops it,
      `unique` gives it the one vocabulary type that can (dropped when none or several can), `ask` puts
      one multiple-choice question per such edge to the model, all in one call (`modules.retype`).
    - `gleaning`: continuation turns in the same chat that ask for the edges the reply missed, with the
      triples already written excluded by the reply schema (`modules.gleaning`); with `glean_forced`
      each turn must add at least one edge (a small model otherwise answers that none were missed).
    - `samples` / `votes`: sample that many replies in one request (temperature
      `sample_temperature`) and keep an edge written in at least `votes` of them (`modules.votes`).
    - `fact_span`: the model names the sentence that states the edge by its number, and that sentence
      becomes the fact (`modules.spans`): fewer generated tokens per edge.
    - `precision`: one more call asks, for every extracted edge, whether the current episode states it,
      and drops those it does not (`signatures.verify_edges`).
    - `fact_dates`: where the model wrote REFERENCE_TIME or no date for validAt and its fact names a
      time of its own ("since 2008", "two years ago"), that time is used (`modules.fact_dates`).
    - `date_guards`: undo a validAt read from a number that names a thing ("my 2015 Civic"), from a plan
      the text calls off, REFERENCE_TIME on a fact that ended or is past, and an end written as the
      start, each with a warning (`modules.date_guards`).
    - `speaker_names`: in a transcript whose turns are labelled by entities ("Speaker 2: ..."), add the
      alias edge from a name to the label it is called by (`modules.speaker_names`).
    - `default_types`: an episode that lists no relationship types is offered the default vocabulary
      (`modules.default_vocabulary`) and kept to it, as if the user had listed it.
    - `input_order`: `shared-first` (what episodes share first, for the prompt cache) or `seed` (the
      seed prompt's order: previous episodes, the episode, entities, time, types).
    - `attributes`: how the attributes that relationship types declare are filled (`modules.attributes`):
      `per-edge` (the seed's: one call per edge of such a type), `per-episode` (one call for all of an
      episode's such edges) or `in-extraction` (written inside the extraction reply; no call of its own).
    - `attribute_grounding`: a text attribute value whose words the episode does not contain is dropped,
      with a warning (`modules.attribute_grounding`), in any formulation.
    - `quoted_text_check`: an edge whose only evidence is quoted, forwarded or fake-instruction text in
      the episode (its entities named only there, or its fact quoting it) is dropped, with a warning
      (`modules.quoted_text`): a defence against text that tells a memory what to record.
    - `speaker_marks`: the extraction is asked who states each edge, and each reply edge carries a
      `statedBy` mark (`speaker` or `quoted`); the edges marked `quoted` are dropped, with a warning
      (`modules.speaker_marks`). The edges formulation's seed reply shape, without a fact span.

    - `entity_step`: an episode that comes without entities is first shown to the entity step
      (`signatures.extract_entities`), which finds them in the text; given entities are never replaced.
      Without it, such an episode is refused with a message that says so.

    The task settings `max_reflexion_rounds` (extra turns asking what was missed), `output_shape` (the
    reply the model writes; results always have the seed's shape) and `closed_types` (the episode's
    RELATIONSHIP TYPES only) are options too.
    """

    model_config = ConfigDict(extra="forbid")

    task: Formulation = Field(default_factory=Formulation)
    sampling: Sampling = Field(default_factory=Sampling)
    glean: Gleaning = Field(default_factory=Gleaning)
    typing: Typing = Field(default_factory=Typing)
    dates: Dates = Field(default_factory=Dates)
    attribute_filling: AttributeFilling = Field(default_factory=AttributeFilling)
    checks: Checks = Field(default_factory=Checks)

    def __init__(self, /, **options: Any) -> None:
        """Options by flat name (`ProgramOptions(samples=3, votes=2)`) or by group."""
        super().__init__(**options)

    @model_validator(mode="before")
    @classmethod
    def _grouped(cls, data: Any) -> Any:
        """Flat names moved into their groups (a flat name wins over its group's value); others kept,
        so an unknown name is refused under its own name."""
        if not isinstance(data, dict):
            return data
        grouped: dict[str, Any] = {key: value for key, value in data.items() if key not in FLAT_NAMES}
        for flat, value in data.items():
            if flat not in FLAT_NAMES:
                continue
            group, name = FLAT_NAMES[flat]
            current = grouped.get(group) or {}
            if isinstance(current, BaseModel):
                current = current.model_dump()
            grouped[group] = {**current, name: value} if isinstance(current, dict) else current
        return grouped

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """The rules that join two groups (each group has checked its own)."""
        formulation, fact_span = self.task.formulation, self.task.fact_span
        attributes = self.attribute_filling.formulation
        if formulation == "pairs" and (self.glean.turns or self.sampling.samples > 1):
            raise ValueError("the pairwise formulation takes no gleaning or samples")
        if self.glean.turns and self.sampling.samples > 1:
            raise ValueError("gleaning continues one reply; it cannot follow several samples")
        if self.typing.typed_grammar and (formulation != "edges" or attributes == "in-extraction"):
            raise ValueError(
                "the typed grammar shapes the edges formulation's reply, without attributes in it"
            )
        if attributes == "in-extraction" and (formulation != "edges" or fact_span):
            raise ValueError(
                "attributes in the extraction reply need the edges formulation without a fact span"
            )
        if attributes == "in-extraction" and self.task.output_shape != "seed":
            raise ValueError("attributes in the extraction reply need the seed reply shape")
        if self.checks.speaker_marks and (formulation != "edges" or fact_span):
            raise ValueError(
                "speaker marks are written on the edges formulation's reply, without a fact span"
            )
        return self

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The options by flat name, in `FLAT_NAMES`' order: the form manifests hold."""
        nested = handler(self)
        return {
            flat: nested[group][name]
            for flat, (group, name) in FLAT_NAMES.items()
            if name in (nested.get(group) or {})
        }

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied by flat or group name, checked as a new program's options are."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self).model_validate({**self.model_dump(), **update})

    def changed(self) -> dict[str, object]:
        """The options that differ from the uncompiled program's, by flat name, as a manifest lists them."""
        return self.model_dump(exclude_defaults=True)

    @property
    def lm_calls_per_episode(self) -> int:
        """LM calls one extraction makes at most (every step that may call once per episode)."""
        return (
            1
            + self.glean.turns
            + int(self.typing.retype == "ask")
            + int(self.checks.precision)
            + int(self.attribute_filling.formulation == "per-episode")
            + int(self.task.entity_step)
        )

    # Each option read by its flat name (`FLAT_NAMES`), as callers and tests always have.
    @property
    def formulation(self) -> Formulation_:
        return self.task.formulation

    @property
    def type_signatures(self) -> bool:
        return self.typing.type_signatures

    @property
    def unseen_types_open(self) -> bool:
        return self.typing.unseen_types_open

    @property
    def typed_grammar(self) -> bool:
        return self.typing.typed_grammar

    @property
    def retype(self) -> Retype:
        return self.typing.retype

    @property
    def gleaning(self) -> int:
        return self.glean.turns

    @property
    def glean_forced(self) -> bool:
        return self.glean.forced

    @property
    def samples(self) -> int:
        return self.sampling.samples

    @property
    def votes(self) -> int:
        return self.sampling.votes

    @property
    def sample_temperature(self) -> float:
        return self.sampling.temperature

    @property
    def entity_step(self) -> bool:
        return self.task.entity_step

    @property
    def fact_span(self) -> bool:
        return self.task.fact_span

    @property
    def precision(self) -> bool:
        return self.checks.precision

    @property
    def fact_dates(self) -> bool:
        return self.dates.from_facts

    @property
    def date_guards(self) -> bool:
        return self.dates.guards

    @property
    def speaker_names(self) -> bool:
        return self.checks.speaker_names

    @property
    def input_order(self) -> InputOrder:
        return self.task.input_order

    @property
    def max_pairs(self) -> int:
        return self.task.max_pairs

    @property
    def attributes(self) -> AttributeFormulation:
        return self.attribute_filling.formulation

    @property
    def default_types(self) -> bool:
        return self.typing.default_types

    @property
    def attribute_grounding(self) -> bool:
        return self.attribute_filling.grounding

    @property
    def quoted_text_check(self) -> bool:
        return self.checks.quoted_text_check

    @property
    def speaker_marks(self) -> bool:
        return self.checks.speaker_marks

    @property
    def max_reflexion_rounds(self) -> int:
        return self.task.max_reflexion_rounds

    @property
    def output_shape(self) -> OutputShape:
        return self.task.output_shape

    @property
    def closed_types(self) -> bool:
        return self.typing.closed_types
