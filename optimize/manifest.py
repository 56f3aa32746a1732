"""The manifest of an optimizer run: what it was given, what it found, what it cost, which program it kept.

One `RunRecord` per run gathers what the manifest says as the run goes (the splits' descriptions, the
tuned predictors, the phases' LM usage), so that a checkpoint written mid-search and the final
artifact describe the run the same way. No endpoint or API key is recorded, and the model names are
redacted with the one redaction function (`edgewise.runtime.redaction.redact`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import dspy

from edgewise.eval.intervals import CI_LEVEL
from edgewise.eval.paired import PairedDifference
from edgewise.optimize.dev_scoring import DevScore
from edgewise.optimize.metering import PhaseUsage, total_usage
from edgewise.optimize.settings import OptimizeSettings
from edgewise.programs.artifact import Manifest, new_manifest
from edgewise.runtime.redaction import redact

RunStatus = Literal["complete", "budget_exhausted", "interrupted", "failed"]
"""How a run ended, as its manifest's `status` says: checkpoints written mid-search say `interrupted`
until the run ends and overwrites them."""

_URL_CREDENTIALS = re.compile(r"(?<=//)[^/@\s]+@")
"""`user:password@` after a URL's scheme, which a model string with an endpoint in it can carry."""


def public_model_name(model: str | None, secrets: Sequence[str | None] = ()) -> str | None:
    """A model string fit for a manifest: no `user:password@` and no secret that happens to be in it."""
    if model is None:
        return None
    return redact(_URL_CREDENTIALS.sub("", model), secrets, max_chars=None)


def paired_record(paired: PairedDifference, stat: str = "edge_f1_micro") -> dict[str, Any]:
    """The paired dev comparison of `stat` as the manifest stores it."""
    return {
        "stat": stat,
        "difference": round(paired.difference, 4),
        "low": round(paired.low, 4),
        "high": round(paired.high, 4),
        "episodes": paired.episodes,
        "level": CI_LEVEL,
    }


def demo_provenance(program: dspy.Module) -> dict[str, Any]:
    """What a manifest says of a program's demos: how many per step, and which gold episodes."""
    notes: dict[str, Any] = {}
    for name, predictor in program.named_predictors():
        if predictor.demos:
            notes[f"{name}_demos"] = len(predictor.demos)
            gold = [demo.get("gold_episode_id") for demo in predictor.demos if demo.get("gold_episode_id")]
            if gold:
                notes[f"{name}_gold_demo_ids"] = gold
    return notes


class SearchProgress(Protocol):
    """What a manifest says of the search so far (`checkpoints.BestTracker` keeps it)."""

    best_score: float
    scores: list[float]


@dataclass
class RunRecord:
    """What one run's manifests say; `manifest()` writes it out for a program at any point of the run."""

    settings: OptimizeSettings
    task_model: str
    teacher_model: str | None
    data_hashes: dict[str, str]
    started: float = field(default_factory=time.monotonic)
    """`time.monotonic()` at the start of the run: the manifest's `wall_s` counts from it."""
    learned: dict[str, Any] = field(default_factory=dict)
    """Settings the run adds after the given ones, in the order it learns them (the splits, the levers
    asked for, the tuned predictors, the kept program's options)."""
    usage: dict[str, PhaseUsage] = field(default_factory=dict)
    """LM usage per phase (`before`, `search`, `after`)."""
    before: DevScore | None = None
    """The uncompiled program's dev score, once measured."""
    search: SearchProgress | None = None
    """The search's best-so-far tracker, once the search started."""

    def manifest(
        self, program: dspy.Module, status: RunStatus, after: DevScore | None, **notes: Any
    ) -> Manifest:
        """The manifest of `program` now: `status`, its dev score `after` (None: not measured), `notes`."""
        before, search = self.before, self.search
        assert before is not None and search is not None, "a manifest is written once the search has begun"
        total = total_usage(self.usage)
        return new_manifest(
            program,
            task_model=self.task_model,
            teacher_model=self.teacher_model,
            optimizer=self.settings.optimizer,
            settings=self.settings.record() | self.learned,
            data_hashes=self.data_hashes,
            dev_score_before=before.edge_f1,
            dev_score_after=after.edge_f1 if after else None,
            status=status,
            notes={
                "dev_mean_f1_before": before.mean_f1,
                **({"dev_mean_f1_after": after.mean_f1} if after else {}),
                **{f"{phase}_calls": spent.calls for phase, spent in self.usage.items()},
                "prompt_tokens": total.prompt_tokens,
                "completion_tokens": total.completion_tokens,
                "wall_s": round(time.monotonic() - self.started, 1),
                "search_score": search.best_score,
                "candidate_scores": search.scores,
                **notes,
            },
        )
