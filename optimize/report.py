"""What an optimizer run hands back: the kept program, its scores before and after, what it cost.

`OptimizeReport.summary()` is what `edgewise optimize` prints on stdout at the end; `lever_table`
renders a program search's judged levers (a manifest's `notes.levers`) as the README shows them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from edgewise.modules.extractor import EdgeExtractor
from edgewise.optimize.dev_scoring import DevScore
from edgewise.optimize.manifest import RunStatus
from edgewise.optimize.metering import NO_USAGE, PhaseUsage, total_usage
from edgewise.programs.artifact import Manifest


@dataclass
class OptimizeReport:
    """What a run did: where the program is, how it scored before and after, what it cost."""

    out_dir: Path
    program: EdgeExtractor
    manifest: Manifest
    status: RunStatus
    before: DevScore
    after: DevScore | None
    usage: dict[str, PhaseUsage]
    budget: int | None
    wall_s: float
    candidate_scores: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def candidates(self) -> int:
        """Candidates scored on the full dev split."""
        return len(self.candidate_scores)

    def summary(self) -> str:
        """The lines printed at the end of `edgewise optimize`."""
        optimizer = self.manifest.optimizer
        lines = [f"edgewise optimize: {optimizer} on {self.manifest.task_model}: {self.status}"]
        after = self.after
        lines.append(
            f"  dev edge-F1 (micro, {self.before.episodes} episodes): before {self.before.edge_f1:.3f}, "
            + (
                f"after {after.edge_f1:.3f} ({after.edge_f1 - self.before.edge_f1:+.3f})"
                if after
                else "after: not measured"
            )
        )
        lines.append(
            f"  dev mean episode F1 (what the optimizer maximizes): before {self.before.mean_f1:.3f}, "
            + (f"after {after.mean_f1:.3f}" if after else "after: not measured")
        )
        if after is not None:
            lines.append(
                f"  dev parse failures: before {self.before.parse_failures}, after {after.parse_failures}"
            )
        search = self.usage.get("search", NO_USAGE)
        cap = f" of a budget of {self.budget}" if self.budget is not None else ""
        total = total_usage(self.usage)
        lines.append(
            f"  LM calls: {total.calls} ({search.calls} in the search{cap}, the rest in dev evaluations); "
            f"tokens billed: {total.prompt_tokens} prompt + {total.completion_tokens} completion"
        )
        levers = self.manifest.notes.get("levers")
        if levers is not None:
            kept = [f"{row['lever']}={row['value']}" for row in levers if row["kept"]]
            lines.append(
                f"  levers judged on dev: {sum(row['difference'] is not None for row in levers)} of {len(levers)}; "
                f"kept: {', '.join(kept) or 'none'}; wall time: {self.wall_s:.1f} s"
            )
        else:
            scores = ", ".join(f"{score:.3f}" for score in self.candidate_scores)
            lines.append(
                f"  candidates scored on dev: {self.candidates}"
                + (f" (mean episode F1: {scores})" if scores else "")
                + f"; wall time: {self.wall_s:.1f} s"
            )
        lines.append(f"  program: {self.out_dir}")
        if self.error:
            lines.append(f"  stopped by: {self.error}")
        return "\n".join(lines)


JUDGED_BY_WORDS: Final[dict[str, str]] = {
    "edge_f1_micro": "edge-F1",
    "valid_at_accuracy": "validAt accuracy",
    "attribute_accuracy": "attribute accuracy",
}
"""How the lever table names the statistic a lever was judged by."""


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def lever_table(levers: Sequence[Mapping[str, Any]]) -> str:
    """A program search's levers as a Markdown table: each one's paired dev difference against the
    program so far, with its interval, and whether it was kept.

    Rendered from the manifest rather than typed by hand, so that the README's table is the compile's
    own record (a test compares them)."""
    lines = [
        "| lever | judged by | paired dev Δ vs the program so far [95% CI] | kept |",
        "|---|---|---:|---|",
    ]
    for row in levers:
        value = row["value"]
        name = f"`{row['lever']}`" if value is True else f"`{row['lever']}` = {value}"
        judged = JUDGED_BY_WORDS.get(row["stat"], row["stat"])
        if row.get("time_ratio") is not None:
            judged += f" and time (ratio {row['time_ratio']:.2f})"
        if row["difference"] is None:
            interval = "not judged" + (f": {row['note']}" if row.get("note") else "")
        else:
            interval = f"{_signed(row['difference'])} [{_signed(row['low'])}, {_signed(row['high'])}]"
        lines.append(f"| {name} | {judged} | {interval} | {'yes' if row['kept'] else 'no'} |")
    return "\n".join(lines)
