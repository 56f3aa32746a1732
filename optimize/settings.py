"""What an optimizer run may do: one dataclass whose field defaults are the defaults everywhere.

`edgewise optimize` takes its argparse defaults and the defaults its `--help` names from `DEFAULTS`,
and `optimize()` takes an `OptimizeSettings`, so a default is written once. A settings object is
checked when it is made: a bad combination fails before any model is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal

from edgewise.domain.errors import UsageError
from edgewise.optimize.gold_demos import DEFAULT_DEMO_TOKEN_BUDGET
from edgewise.optimize.program_search import parse_lever
from edgewise.signatures.extract_edges import OutputShape

OptimizerName = Literal["mipro", "gepa", "bootstrap", "gold", "program"]
AutoLevel = Literal["light", "medium", "heavy"]

OPTIMIZERS: Final[tuple[str, ...]] = ("mipro", "gepa", "bootstrap", "gold", "program")
AUTO_LEVELS: Final[tuple[str, ...]] = ("light", "medium", "heavy")

SELECTION_RULE: Final = (
    "dev, paired: the compiled program replaces the uncompiled one only when the paired bootstrap 95% "
    "interval of its dev edge-F1 minus the uncompiled one's is above 0"
)
"""How the result is chosen, as every manifest states it."""


@dataclass(frozen=True)
class OptimizeSettings:
    """The search's settings; each one the manifest records is listed in `record()`.

    Frozen so that `DEFAULTS` (and any settings object shared between runs) cannot be changed by
    one of them; `dataclasses.replace` makes a variant.
    """

    optimizer: OptimizerName = "bootstrap"
    auto: AutoLevel | None = "light"
    """Search size of mipro and gepa; bootstrap records none."""
    seed: int = 0
    max_demos: int = 4
    """Most bootstrapped demos per step; 0 = instructions only (mipro, gepa)."""
    budget: int | None = None
    """LM calls the search may make (all models, cached replies included); None: no cap."""
    reflexion_rounds: int = 0
    closed_types: bool = True
    output_shape: OutputShape = "seed"
    gold_demos: int = 0
    """gold: demos per candidate (0: `max_demos`); mipro and gepa: start from this many gold demos."""
    demo_tokens: int = DEFAULT_DEMO_TOKEN_BUDGET
    minibatch_size: int = 10
    """Dev episodes MIPROv2 scores a trial on. Its own default (35) makes every trial of a small model
    on a CPU a long wait; the best trials are still scored on the whole dev split."""
    workers: int = 1
    candidates: int | None = None
    """None: the optimizer's own count (`DEFAULT_CANDIDATES`); for mipro it replaces `auto`."""
    trials: int | None = None
    demo_threshold: float = 0.5
    """Edge-F1 a teacher's trace must reach on its training episode to become a demo.

    DSPy's bootstrapping keeps a trace when the metric is truthy; an F1 is truthy at 0.01, which would
    turn nearly every wrong answer into a demo, so a threshold is always set.
    """
    log_dir: str | Path | None = None
    dev_size: int | None = None
    """Dev episodes to select on; None: all of them, or with a budget what it affords."""
    levers: tuple[str, ...] | None = None
    """program: the levers to try, in this order; None: all of `LEVERS`."""
    find_entities: bool = False
    """Compile a program with an entity step: train and dev episodes are sent as text alone, scored
    through the entities the step found, so the search tunes `find_entities` with the edge steps."""

    DEFAULT_CANDIDATES: ClassVar[Mapping[str, int]] = MappingProxyType({"bootstrap": 6, "gold": 4})
    """`candidates` when none is given: bootstrap's shuffled demo sets besides the unshuffled one (the
    size of MIPROv2's `light` run), and the gold search's seeded picks."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse settings no optimizer can run, with the setting named."""
        if self.optimizer not in OPTIMIZERS:
            raise UsageError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        if self.auto is not None and self.auto not in AUTO_LEVELS:
            raise UsageError(f"auto must be one of {', '.join(AUTO_LEVELS)}, not {self.auto!r}")
        if self.max_demos < 0 or self.reflexion_rounds < 0 or self.workers < 1:
            raise UsageError("max_demos and reflexion_rounds must be >= 0, workers >= 1")
        if self.optimizer == "bootstrap" and self.max_demos < 1:
            raise UsageError("the bootstrap optimizer tunes demos only: max_demos must be >= 1")
        if self.gold_demos < 0 or self.demo_tokens < 1 or self.minibatch_size < 1:
            raise UsageError("gold_demos must be >= 0, demo_tokens and minibatch_size >= 1")
        if self.optimizer == "bootstrap" and self.gold_demos:
            raise UsageError(
                "bootstrap tunes bootstrapped demos; gold demos are searched by --optimizer gold"
            )
        if self.budget is not None and self.budget < 1:
            raise UsageError("budget must be >= 1 LM call")
        if self.dev_size is not None and self.dev_size < 1:
            raise UsageError("dev_size must be >= 1 episode")
        if (self.candidates is None) != (self.trials is None) and self.optimizer == "mipro":
            raise UsageError("mipro: give both candidates and trials (they replace auto), or neither")
        for lever in self.levers or ():
            parse_lever(lever)

    def candidate_count(self) -> int:
        """Candidates bootstrap or gold tries: `candidates`, else the optimizer's own default."""
        if self.candidates is not None:
            return self.candidates
        return self.DEFAULT_CANDIDATES[self.optimizer]

    def record(self) -> dict[str, Any]:
        """The settings as the manifest's `settings` begin: the ones this optimizer uses, None left out.

        The run appends what it learns on the way (the splits, the tuned predictors, the program's
        options) after these keys.
        """
        values = {
            "auto": self.auto if self.optimizer != "bootstrap" else None,
            "seed": self.seed,
            "max_demos": self.max_demos,
            "budget": self.budget,
            "reflexion_rounds": self.reflexion_rounds,
            "closed_types": self.closed_types,
            "output_shape": self.output_shape,
            "gold_demos": self.gold_demos or None,
            "demo_tokens": self.demo_tokens if self.gold_demos or self.optimizer == "gold" else None,
            "minibatch_size": self.minibatch_size if self.optimizer == "mipro" else None,
            "candidates": self.candidates,
            "trials": self.trials,
            "demo_threshold": self.demo_threshold,
            "dev_size": self.dev_size,
            "find_entities": self.find_entities or None,
            "selection": SELECTION_RULE,
        }
        return {key: value for key, value in values.items() if value is not None}


DEFAULTS: Final = OptimizeSettings()
"""The defaults, for the command line's flags and help."""
