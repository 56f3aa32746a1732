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
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Formulation = Literal["edges", "pairs", "entities"]
InputOrder = Literal["shared-first", "seed"]
Retype = Literal["off", "unique", "ask"]
AttributeFormulation = Literal["per-edge", "per-episode", "in-extraction"]

FORMULATIONS: Final[tuple[Formulation, ...]] = ("edges", "pairs", "entities")
INPUT_ORDERS: Final[tuple[InputOrder, ...]] = ("shared-first", "seed")
RETYPES: Final[tuple[Retype, ...]] = ("off", "unique", "ask")
ATTRIBUTE_FORMULATIONS: Final[tuple[AttributeFormulation, ...]] = ("per-edge", "per-episode", "in-extraction")
DEFAULT_MAX_PAIRS: Final = 24
"""Candidate entity pairs the pairwise program labels at most per episode (see `modules.pairs`)."""
MAX_SAMPLES: Final = 8
"""Replies one extraction may sample (one request with `n`; a local server needs as many slots)."""


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
    """

    model_config = ConfigDict(extra="forbid")

    formulation: Formulation = "edges"
    type_signatures: bool = False
    unseen_types_open: bool = False
    typed_grammar: bool = False
    retype: Retype = "off"
    gleaning: int = Field(default=0, ge=0, le=2)
    glean_forced: bool = False
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    votes: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    sample_temperature: float = Field(default=0.7, gt=0, le=2)
    fact_span: bool = False
    precision: bool = False
    fact_dates: bool = False
    date_guards: bool = False
    speaker_names: bool = False
    input_order: InputOrder = "shared-first"
    max_pairs: int = Field(default=DEFAULT_MAX_PAIRS, ge=1)
    attributes: AttributeFormulation = "per-edge"
    default_types: bool = False
    attribute_grounding: bool = False
    quoted_text_check: bool = False
    speaker_marks: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> ProgramOptions:
        if self.votes > self.samples:
            raise ValueError(f"votes ({self.votes}) cannot exceed samples ({self.samples})")
        if self.formulation == "pairs" and (self.gleaning or self.samples > 1):
            raise ValueError("the pairwise formulation takes no gleaning or samples")
        if self.fact_span and self.formulation != "edges":
            raise ValueError("a fact span is a reply of the edges formulation")
        if self.gleaning and self.samples > 1:
            raise ValueError("gleaning continues one reply; it cannot follow several samples")
        if self.typed_grammar and (self.formulation != "edges" or self.attributes == "in-extraction"):
            raise ValueError(
                "the typed grammar shapes the edges formulation's reply, without attributes in it"
            )
        if self.attributes == "in-extraction" and (self.formulation != "edges" or self.fact_span):
            raise ValueError(
                "attributes in the extraction reply need the edges formulation without a fact span"
            )
        if self.speaker_marks and (self.formulation != "edges" or self.fact_span):
            raise ValueError(
                "speaker marks are written on the edges formulation's reply, without a fact span"
            )
        return self

    def changed(self) -> dict[str, object]:
        """The options that differ from the uncompiled program's, as a manifest lists them."""
        return self.model_dump(exclude_defaults=True)

    @property
    def lm_calls_per_episode(self) -> int:
        """LM calls one extraction makes at most (every step that may call once per episode)."""
        return (
            1
            + self.gleaning
            + int(self.retype == "ask")
            + int(self.precision)
            + int(self.attributes == "per-episode")
        )
