"""The per-call context of one extraction: the usage and warnings its steps add to.

Every step of a program, and every rule a step applies, receives the one `CallContext` of the
extraction it is part of, instead of a usage dict and a warnings list passed down by hand. The
result an extraction returns is read from it (`result`), so what the steps recorded is what the
caller gets, in the order the steps recorded it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from edgewise.domain.types import Edge, Entity, ExtractionResult, ExtractionWarning, StepUsage

PARSE_FAILURE: str = "parse_failure"

T = TypeVar("T")


@dataclass
class CallContext:
    """What one extraction has spent (per step) and noted so far; one per call, never shared."""

    usage: dict[str, StepUsage] = field(default_factory=dict)
    warnings: list[ExtractionWarning] = field(default_factory=list)

    def warn(self, warning: ExtractionWarning) -> None:
        """Note one warning, after those noted before it."""
        self.warnings.append(warning)

    def warn_all(self, noted: Iterable[ExtractionWarning]) -> None:
        """Note several warnings, in their order."""
        self.warnings.extend(noted)

    def note(self, code: str, message: str, edge: Edge | None = None) -> None:
        """Note a warning made of `code` and `message`, about `edge` (as a result writes it) when given.

        The warning's `edge` stays unset without one, as a warning built by hand leaves it.
        """
        about = {} if edge is None else {"edge": edge.to_json_dict()}
        self.warn(ExtractionWarning(code=code, message=message, **about))

    def capped(self, items: list[T], most: int, code: str, message: str) -> list[T]:
        """The first `most` of `items`; when there were more, a warning `code` says what was left out."""
        if len(items) > most:
            self.note(code, message)
        return items[:most]

    def spent(self, step: str, cost: StepUsage) -> None:
        """Add `cost` to what `step` has spent in this extraction."""
        self.usage[step] = self.usage.get(step, StepUsage()) + cost

    @property
    def parse_failures(self) -> int:
        """Replies that could not be parsed on their retry either (see `modules.calls`)."""
        return sum(1 for warning in self.warnings if warning.code == PARSE_FAILURE)

    def result(self, edges: list[Edge], entities: list[Entity] | None = None) -> ExtractionResult:
        """The extraction's result: `edges` (and the `entities` an entity step found) with everything
        this context recorded."""
        return ExtractionResult(
            edges=edges,
            warnings=self.warnings,
            usage=self.usage,
            parse_failures=self.parse_failures,
            entities=entities,
        )
