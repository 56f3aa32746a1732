"""An optimizer run: tune the `EdgeExtractor` on a train split, select on dev, save the kept program.

A run measures the uncompiled program on the dev split, lets one search run (`dispatch`), measures
its pick on the same dev split, keeps it only when it is better beyond noise (`selection`), and saves
the result as an artifact with its manifest (`manifest`). Two things DSPy's optimizers do not do are
added: a hard cap on LM calls (`metering`, sized by `budget`), and a checkpoint of the best program
every time a candidate beats it on dev (`checkpoints`), so that Ctrl-C, a crash or an exhausted
budget still leaves the best program found so far. What the run may do is `OptimizeSettings`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TextIO

import dspy

from edgewise.domain.errors import UsageError
from edgewise.modules.type_signatures import learn_type_signatures
from edgewise.optimize.checkpoints import BestTracker, Checkpoints
from edgewise.optimize.dev_scoring import DevScore, evaluate_program
from edgewise.optimize.dispatch import search, starting_program, uncompiled_program
from edgewise.optimize.manifest import RunRecord, demo_provenance, public_model_name
from edgewise.optimize.metering import BudgetExhausted, PhaseUsage, metered
from edgewise.optimize.report import OptimizeReport
from edgewise.optimize.selection import keep_if_better, score_pick
from edgewise.optimize.settings import DEFAULTS, OptimizeSettings
from edgewise.optimize.splits import Dataset, load_split, selection_dev, split_description
from edgewise.programs.artifact import save


def _say(stream: TextIO | None, message: str) -> None:
    if stream is not None:
        print(f"optimize: {message}", file=stream, flush=True)


def optimize(
    *,
    task_lm: dspy.BaseLM,
    train: Dataset,
    dev: Dataset,
    out: str | Path,
    settings: OptimizeSettings = DEFAULTS,
    teacher_lm: dspy.BaseLM | None = None,
    task_model: str | None = None,
    teacher_model: str | None = None,
    secrets: Sequence[str | None] = (),
    progress: TextIO | None = sys.stderr,
    max_samples: int | None = None,
) -> OptimizeReport:
    """Compile an `EdgeExtractor` for `task_lm` and save it to `out`; return what happened.

    `train` and `dev` are split names, JSONL paths or lists of `LabeledEpisode`. The search learns on
    `train` and is selected on `dev`; keep the test split out of both. `teacher_lm` (a stronger model)
    bootstraps demos and proposes instructions (MIPROv2), or reflects (GEPA); the task model does it
    otherwise. `settings.budget` caps the search's LM calls (all models, cached replies included);
    the dev evaluations before and after are counted separately. `task_model` / `teacher_model` are
    the names recorded in the manifest (default: the LMs' `model`); `secrets` are removed from them.
    `max_samples` is how many replies one request to `task_lm` may ask for (a local server's slots;
    None: no limit known), which bounds the `samples` lever.

    The best program found is written whenever a candidate beats it on dev, and again at the end,
    also after Ctrl-C (re-raised), a crash (re-raised) or an exhausted budget (status
    `budget_exhausted`). No API key or endpoint is written: the model comes from the caller at load.
    """
    started = time.monotonic()
    say = partial(_say, progress)
    train_split, dev_split = load_split(train, "train"), load_split(dev, "dev")
    if not train_split.episodes or not dev_split.episodes:
        raise UsageError("optimize needs at least one train and one dev episode")
    selected = selection_dev(dev_split, settings)
    dev_split = selected.split
    record = RunRecord(
        settings,
        task_model=public_model_name(task_model or task_lm.model, secrets) or "unknown",
        teacher_model=public_model_name(teacher_model or (teacher_lm.model if teacher_lm else None), secrets),
        data_hashes={"train": train_split.sha256, "dev": dev_split.sha256},
        started=started,
        learned={"train": split_description(train_split), "dev": selected.description},
    )
    if settings.levers is not None:
        record.learned["levers"] = list(settings.levers)
    if (note := selected.note(settings)) is not None:
        say(note)
    out_dir = Path(out)
    signatures = learn_type_signatures(train_split.episodes)
    student = uncompiled_program(settings, signatures)
    start, tuned = starting_program(settings, student, train_split.episodes, dev_split.episodes, say)
    if tuned is not None:
        record.learned["tuned_predictors"] = list(tuned)

    def score(program: dspy.Module, label: str) -> DevScore:
        return evaluate_program(
            program,
            dev_split.episodes,
            workers=settings.workers,
            progress=progress,
            label=label,
            entities_withheld=settings.find_entities,
        )

    def score_uncached(program: dspy.Module, label: str) -> DevScore:
        """`score` with every request sent to the model, so that the pass's timings are real."""
        with dspy.context(lm=task_lm.copy(cache=False)):
            return score(program, label)

    say(
        f"{settings.optimizer}: {len(train_split.episodes)} train, {len(dev_split.episodes)} dev episodes; "
        "scoring the uncompiled program on dev"
    )
    with metered() as meter:
        before = record.before = score(student, "dev before")
    record.usage["before"] = meter.usage()
    say(f"dev before: edge-F1 {before.edge_f1:.3f}, mean episode F1 {before.mean_f1:.3f}")

    checkpoints = Checkpoints(out_dir, record, say)
    best = record.search = BestTracker(
        dev_split.episodes,
        student.deepcopy(),
        before.mean_f1,
        checkpoints.save_best,
        entities_withheld=settings.find_entities,
    )
    outcome = checkpoints.run(
        lambda search_meter: search(
            settings,
            start=start,
            student=student,
            train=train_split.episodes,
            dev=dev_split.episodes,
            before=before,
            signatures=signatures,
            task_lm=task_lm,
            teacher_lm=teacher_lm,
            score=score,
            score_uncached=score_uncached,
            max_samples=max_samples,
            calls_spent=lambda: search_meter.calls.calls,
            say=say,
        ),
        best,
        progress,
    )
    pick = score_pick(outcome.found, best, score, say)
    record.usage["after"] = pick.usage
    kept_by = {
        row["stat"]
        for row in (outcome.found.notes.get("levers", []) if outcome.found is not None else [])
        if row.get("kept") and row.get("stat") != "edge_f1_micro"
    }
    program, after, selection_notes = keep_if_better(pick, student, before, say, sorted(kept_by))
    record.learned["program_options"] = program.options.model_dump()
    manifest = record.manifest(
        program,
        outcome.status,
        after,
        **selection_notes,
        **(outcome.found.notes if outcome.found is not None else {}),
        type_signatures=signatures.listing(),
        **demo_provenance(program),
        **({"error": outcome.error} if outcome.error else {}),
    )
    save(program, out_dir, manifest)
    return OptimizeReport(
        out_dir=out_dir,
        program=program,
        manifest=manifest,
        status=outcome.status,
        before=before,
        after=after,
        usage=record.usage,
        budget=settings.budget,
        wall_s=time.monotonic() - started,
        candidate_scores=list(best.scores),
        error=outcome.error,
    )


__all__ = [
    "BudgetExhausted",
    "DevScore",
    "OptimizeReport",
    "OptimizeSettings",
    "PhaseUsage",
    "evaluate_program",
    "load_split",
    "optimize",
]
