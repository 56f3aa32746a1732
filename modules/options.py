"""What a program asks the model to do: the options `--optimizer program` chooses among per model.

Instructions and demos are tuned by the other optimizers; these options change the task itself: the
formulation (write edges, or label candidate entity pairs), whether relationship types are checked
against entity types, whether a second call verifies each edge, how dates in a fact are read, the
order the inputs are shown in, and how edge attributes are filled. They are recorded in a compiled
program's manifest and rebuilt from it.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

Formulation = Literal["edges", "pairs"]
InputOrder = Literal["shared-first", "seed"]
AttributeFormulation = Literal["per-edge", "per-episode", "in-extraction"]

FORMULATIONS: Final[tuple[Formulation, ...]] = ("edges", "pairs")
INPUT_ORDERS: Final[tuple[InputOrder, ...]] = ("shared-first", "seed")
ATTRIBUTE_FORMULATIONS: Final[tuple[AttributeFormulation, ...]] = ("per-edge", "per-episode", "in-extraction")
DEFAULT_MAX_PAIRS: Final = 24
"""Candidate entity pairs the pairwise program labels at most per episode (see `modules.pairs`)."""


class ProgramOptions(BaseModel):
    """The task an `EdgeExtractor` sets its model; the defaults are the uncompiled program (`baseline-v1`).

    - `formulation`: `edges` (write the edge list) or `pairs` (label each candidate pair with a type or
      NONE, the relation-extraction literature's formulation; `modules.pairs`).
    - `type_signatures`: check each edge's type against the entity types it may connect (the episode's
      `sourceTypes`/`targetTypes`, else what the program learned from train): a reversed edge is
      flipped, an impossible one dropped, each with a warning (`modules.type_signatures`).
    - `precision`: one more call asks, for every extracted edge, whether the current episode states it,
      and drops those it does not (`signatures.verify_edges`).
    - `fact_dates`: where the model wrote REFERENCE_TIME or no date for validAt and its fact names a
      time of its own ("since 2008", "two years ago"), that time is used (`modules.fact_dates`).
    - `input_order`: `shared-first` (what episodes share first, for the prompt cache) or `seed` (the
      seed prompt's order: previous episodes, the episode, entities, time, types).
    - `attributes`: how the attributes that relationship types declare are filled (`modules.attributes`):
      `per-edge` (the seed's: one call per edge of such a type), `per-episode` (one call for all of an
      episode's such edges) or `in-extraction` (written inside the extraction reply; no call of its own).
    """

    model_config = ConfigDict(extra="forbid")

    formulation: Formulation = "edges"
    type_signatures: bool = False
    precision: bool = False
    fact_dates: bool = False
    input_order: InputOrder = "shared-first"
    max_pairs: int = Field(default=DEFAULT_MAX_PAIRS, ge=1)
    attributes: AttributeFormulation = "per-edge"

    def changed(self) -> dict[str, object]:
        """The options that differ from the uncompiled program's, as a manifest lists them."""
        return self.model_dump(exclude_defaults=True)
